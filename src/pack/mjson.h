/*
 * mjson.h - manifest JSON for any pack format: reading the file, parsing
 * it within limits, and typed access to its values by key path.
 *
 * Internal to the core library (it exposes jansson types).  Nothing here
 * knows a manifest key: the formats' checks (manifest.h for the Kimi
 * format, epcheck.h for SGLang's) name them.  Every failure names the key
 * at fault by its path, e.g. "expert_pack.size" or "tensors[3].name".
 */
#ifndef MOEPACK_MJSON_H
#define MOEPACK_MJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/digest.h"

/*
 * Limits on the manifest, far above any real one (a manifest listing 10,000
 * checkpoint tensors is about 3 MiB and 100,000 JSON values, nesting depth 4)
 * and low enough that reading and parsing any manifest stays well under
 * 64 MB of memory: the file is held whole (at most MP_MANIFEST_MAX) and
 * jansson needs 40 to 250 bytes per value, so the values are counted and
 * their tree's size estimated in one pass over the text before any tree is
 * built.
 */
#define MP_MANIFEST_MAX (16u << 20)        /* bytes; refused before reading */
#define MP_MANIFEST_MAX_VALUES 500000u     /* JSON values (keys not counted) */
#define MP_MANIFEST_MAX_DEPTH 64u          /* nested objects and arrays */
#define MP_MANIFEST_MAX_TREE (32u << 20)   /* estimated bytes of the parsed tree */

/*
 * Limits on JSON text, checked in one pass over it before jansson builds a
 * tree: values (object keys not counted), nesting depth and the estimated
 * bytes of the tree.  The manifest has mp_manifest_limits; the model
 * config of a build has its own (shards.h).
 */
struct mp_json_limits {
	enum mp_err code;  /* reported, its summary first ("manifest exceeds a limit") */
	unsigned values, depth, tree;
};
extern const struct mp_json_limits mp_manifest_limits;

/* MP_OK, or lim->code naming the limit raw[0..len) exceeds and path. */
enum mp_err mp_json_check_limits(const char *raw, size_t len, const char *path,
				 const struct mp_json_limits *lim, struct mp_error *err);

/* Read a manifest file whole (NUL-terminated).  MP_E_MANIFEST_IO on failure. */
enum mp_err mp_manifest_read(const char *path, char **raw, size_t *len,
			     struct mp_error *err);

/*
 * Parse JSON text; MP_E_MANIFEST_JSON with line and column on failure,
 * MP_E_MANIFEST_LIMIT (naming the limit) before any tree is built when the
 * text has too many values, nests too deep or would parse into too large a
 * tree.
 */
enum mp_err mp_manifest_parse(const char *raw, size_t len, const char *path,
			      json_t **root, struct mp_error *err);

/*
 * The same, for text that may carry a file name that is not UTF-8 written
 * in Python's surrogateescape convention: each such byte 0xXX as a lone
 * "\udcXX" escape, which jansson refuses.  Such escapes are read as the
 * private-use characters U+F780..U+F7FF instead and *surrogates is set;
 * mp_json_unescape_bytes() turns them back into bytes (a format's checks
 * do, for the pack path it names).
 * Text that has both such escapes and U+F780..U+F7FF of its own is refused
 * (MP_E_MANIFEST_JSON), since the two could not be told apart.
 */
enum mp_err mp_manifest_parse_ex(const char *raw, size_t len, const char *path,
				 json_t **root, bool *surrogates, struct mp_error *err);

/*
 * Key paths: keys joined by dots, each key optionally followed by array
 * indexes ("model.num_layers", "tensors[3].name").  A missing key or item
 * at any depth is MP_E_MANIFEST_MISSING naming the path up to it; a value
 * on the way that is not an object (before a dot) or an array (before
 * "[") is MP_E_MANIFEST_TYPE at that prefix.  A path longer than 255 bytes
 * or a key of 128 bytes or more is MP_E_USAGE.
 */
enum mp_err mp_json_get(json_t *root, const char *path, json_t **out, struct mp_error *err);
/* The value at path, which must have JSON type type (JSON_TRUE: any
 * boolean); want names it for the message ("an integer"). */
enum mp_err mp_json_get_typed(json_t *root, const char *path, json_type type,
			      const char *want, json_t **out, struct mp_error *err);
enum mp_err mp_json_get_object(json_t *root, const char *path, json_t **out,
			       struct mp_error *err);
/* *out is borrowed from root. */
enum mp_err mp_json_get_string(json_t *root, const char *path, const char **out,
			       struct mp_error *err);
/* A JSON integer that is >= min (and so non-negative when min >= 0);
 * MP_E_MANIFEST_VALUE when it is smaller. */
enum mp_err mp_json_get_uint(json_t *root, const char *path, uint64_t min, uint64_t *out,
			     struct mp_error *err);
/* A string of 64 lowercase hex digits (MP_E_MANIFEST_VALUE otherwise). */
enum mp_err mp_json_get_digest(json_t *root, const char *path, char out[MP_SHA256_HEX],
			       struct mp_error *err);
/* MP_E_MANIFEST_TYPE: "path is <kind of v>, must be <want>". */
enum mp_err mp_json_wrong_type(const char *path, const json_t *v, const char *want,
			       struct mp_error *err);
/* "an integer", "a string", ...: the JSON type of v, for messages. */
const char *mp_json_kind(const json_t *v);

/*
 * A malloc'd copy of s with each U+F780..U+F7FF (what mp_manifest_parse_ex()
 * made of a lone \udcXX escape) turned back into the byte 0xXX; NULL when
 * out of memory.
 */
char *mp_json_unescape_bytes(const char *s);

#endif
