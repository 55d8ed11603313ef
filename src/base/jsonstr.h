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

#include <jansson.h>

/*
 * s[0..n) as a JSON string literal, quotes included, malloc'd and
 * NUL-terminated, its length in *out_len (may be NULL).  NULL when out of
 * memory.
 */
char *mp_json_quote(const char *s, size_t n, size_t *out_len);

/* json_dumps(root, flags) and a newline, as the manifests end.  NULL: no memory. */
char *mp_json_dump_line(const json_t *root, size_t flags);

/*
 * The same with obj[key] (obj inside root) set to the bytes of path, which
 * need not be UTF-8: jansson cannot hold such a string, so the key first gets
 * a marker that occurs nowhere else in the dump, and the marker is then
 * replaced by mp_json_quote(path).  Only that key changes, whatever the
 * other keys hold (markers included), in time linear in the dump's size.
 * NULL when out of memory.
 */
char *mp_json_dump_with_path(json_t *root, json_t *obj, const char *key, const char *path,
			     size_t flags);

#endif
