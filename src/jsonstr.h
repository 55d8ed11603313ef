/*
 * jsonstr.h - a JSON string literal for any bytes, file names included.
 *
 * A Linux file name is bytes, not text; jansson refuses to carry one that is
 * not UTF-8.  Manifests are read by Python loaders, so such a name is written
 * the way Python's json and os modules round-trip it (the "surrogateescape"
 * convention): every byte that is not part of valid UTF-8 becomes the lone
 * surrogate escape "\udcXX" (XX its value, 80..ff).  json.load() gives a str
 * that os.open() and os.path.realpath() map back to the original bytes.
 * Valid UTF-8 is written as it is (like ensure_ascii=False); '"', '\' and
 * control characters are escaped.
 *
 * mp_manifest_parse_ex() reads such text back.
 */
#ifndef MOEPACK_JSONSTR_H
#define MOEPACK_JSONSTR_H

#include <stddef.h>

/*
 * s[0..n) as a JSON string literal, quotes included, malloc'd and
 * NUL-terminated, its length in *out_len (may be NULL).  NULL when out of
 * memory.
 */
char *mp_json_quote(const char *s, size_t n, size_t *out_len);

#endif
