/*
 * manifest.h - the pack manifest: reading, typed access, and its checks.
 *
 * Internal to the core library (it exposes jansson types).  The checks run
 * in the reference loader's order (moepack-pack(5)), and every failure names
 * the manifest key at fault by its dotted path, e.g. "expert_pack.size".
 */
#ifndef MOEPACK_MANIFEST_H
#define MOEPACK_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/pack.h"

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

/* What the manifest is checked against. */
struct mp_manifest_input {
	const char *manifest_path;
	const char *pack_real_path; /* realpath() of the pack */
	uint64_t pack_size;
	uint64_t expect_layers;     /* 0: none */
	uint64_t expect_experts;    /* 0: none */
	const char *config_sha256;  /* hex digest of --config, or NULL */
	bool surrogate_escapes;     /* the text had lone \udcXX escapes (see
	                               mp_manifest_parse_ex) */
};

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
 * mp_manifest_check() then turns them back into bytes in expert_pack.path.
 * Text that has both such escapes and U+F780..U+F7FF of its own is refused
 * (MP_E_MANIFEST_JSON), since the two could not be told apart.
 */
enum mp_err mp_manifest_parse_ex(const char *raw, size_t len, const char *path,
				 json_t **root, bool *surrogates, struct mp_error *err);

/*
 * The keys the reference loader reads only after every other check, the
 * pack's index included: model.config_sha256 and source.inventory_sha256,
 * each a string of 64 lowercase hex digits.  Fills m's copies of them.
 */
enum mp_err mp_manifest_check_recorded(json_t *root, struct mp_manifest *m,
				       struct mp_error *err);

/*
 * Run every manifest check in order and fill *m.  On failure *m may be
 * partly filled; free it with mp_manifest_free() either way.  Warnings
 * (not failures) are appended to warn[] up to MP_MAX_WARNINGS.
 */
enum mp_err mp_manifest_check(json_t *root, const struct mp_manifest_input *in,
			      struct mp_manifest *m, char warn[][MP_MSG_MAX],
			      unsigned *nwarn, struct mp_error *err);
void mp_manifest_free(struct mp_manifest *m);

/*
 * The manifest text with expert_pack.path replaced by new_path, for the
 * mounted <pack>.manifest.json.  Key order is kept.  *out is malloc'd.
 * A path that is not UTF-8 (legal on Linux) is written the way Python's
 * surrogateescape reads it back: each byte that is not part of valid UTF-8
 * as the lone surrogate \udcXX, so json.load() + open() in a Python loader
 * reach the exact bytes; mp_manifest_parse_ex() reads it back.
 */
enum mp_err mp_manifest_with_path(const char *raw, size_t len, const char *new_path,
				  char **out, size_t *out_len, struct mp_error *err);

#endif
