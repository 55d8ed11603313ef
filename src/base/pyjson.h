/*
 * pyjson.h - JSON text exactly as Python's json.dumps() writes it.
 *
 * SGLang's reference builder writes its manifest with
 * json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) and
 * hashes its tensor inventory as json.dumps(record, sort_keys=True) lines;
 * a pack built here must carry the same bytes.  jansson's dump differs
 * (spacing, escapes, key order), so this walks a jansson value into
 * base/jsonw.h's writer in Python's style.  The Kimi builder's digests
 * are taken of the same text in its compact form (mp_pyjson_canonical()).
 *
 *  - keys sorted by code point (UTF-8 byte order is code point order);
 *  - with an indent, items end with "," and a newline, nested lines are
 *    indented by `indent` spaces a level, and empty containers stay "[]"
 *    and "{}"; without one, separators are ", " and ": " on one line;
 *  - strings escape '"', '\', \n \r \t \b \f and any other character below
 *    0x20 as \u00XX (lower-case hex); with ensure_ascii, also 0x7f and every
 *    non-ASCII character (\uXXXX, surrogate pairs above U+FFFF), else those
 *    are written as raw UTF-8;
 *  - true, false, null; integers in decimal; reals as Python's repr()
 *    ("0.5", "1.0", "1e+16", "1.5e-05", "Infinity", "NaN").
 */
#ifndef MOEPACK_BASE_PYJSON_H
#define MOEPACK_BASE_PYJSON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define MP_PYJSON_ONE_LINE (-1) /* indent: no newlines, ", " and ": " */

/*
 * The text of v, malloc'd and NUL-terminated (no trailing newline), its
 * length in *len (may be NULL).  NULL when out of memory or nesting is
 * deeper than 64 levels.
 */
char *mp_pyjson_dumps(const json_t *v, int indent, bool ensure_ascii, size_t *len);

/*
 * Python's json.dumps(v, sort_keys=True, separators=(",", ":"),
 * ensure_ascii=False): keys in code point order, no white space.  What
 * the Kimi builder's inventory and file digests are taken of.  malloc'd;
 * NULL when out of memory or nested too deep.
 */
char *mp_pyjson_canonical(const json_t *v);

/* Python's repr() of a double into buf (at least 32 bytes). */
void mp_pyjson_repr(double d, char *buf, size_t len);

#endif
