/*
 * manifestpath.h - where the pack's path is in a manifest's text.
 *
 * A pack that moves needs its manifest's expert_pack.path rewritten and
 * nothing else.  `moepack relocate` replaces the bytes of that one JSON
 * string, and a signed statement (v2, seal/sign.h) binds the manifest's
 * bytes with exactly that string left out, so that relocating keeps the
 * signature.  Both find the string here, in the text as the manifest
 * parser reads it: the value of the member named "path" of the member
 * named "expert_pack" of the top-level object, names compared after their
 * escapes are decoded ("p\u0061th" is "path").
 *
 * The walk reads the text once, holds nothing but a cursor and a nesting
 * count, and never reads outside raw[0..len).  It does not judge what it
 * skips (mp_manifest_parse() does): it finds the member or says why not.
 */
#ifndef MOEPACK_MANIFESTPATH_H
#define MOEPACK_MANIFESTPATH_H

#include <stddef.h>

#include "base/errors.h"
#include "pack/digest.h"

/* Bytes [start, end) of raw: expert_pack.path's string, quotes included. */
struct mp_text_span {
	size_t start, end;
};

/*
 * Find expert_pack.path in raw[0..len) (what names the manifest in
 * messages).  MP_E_MANIFEST_JSON when the text is not an object as far as
 * the walk goes or names a member twice on the way, MP_E_MANIFEST_MISSING
 * without expert_pack or its path, MP_E_MANIFEST_TYPE when expert_pack is
 * not an object or its path not a string.
 */
enum mp_err mp_manifest_path_span(const char *raw, size_t len, const char *what,
				  struct mp_text_span *span, struct mp_error *err);

/*
 * The same for the string member `key` of any format's manifest: a
 * top-level name ("pack_path") or one level down ("expert_pack.path"),
 * the format's path_key (pack.h).  mp_manifest_path_span() is this with
 * the Kimi format's key.
 */
enum mp_err mp_manifest_key_span(const char *raw, size_t len, const char *what,
				 const char *key, struct mp_text_span *span,
				 struct mp_error *err);

/*
 * The manifest's digest without its path: SHA-256 of raw[0..len) with the
 * span replaced by the four bytes "null".  MP_E_NOMEM only.
 */
enum mp_err mp_manifest_sha256_without_path(const char *raw, size_t len,
					    const struct mp_text_span *span,
					    unsigned char out[MP_SHA256_LEN], struct mp_error *err);

/*
 * raw[0..len) with the span replaced by path as a JSON string (any bytes:
 * base/jsonstr.h's mp_json_quote()), every other byte as it was.  *out is
 * malloc'd and NUL-terminated.  MP_E_NOMEM only.
 */
enum mp_err mp_manifest_splice_path(const char *raw, size_t len, const struct mp_text_span *span,
				    const char *path, char **out, size_t *out_len,
				    struct mp_error *err);

#endif
