/*
 * jsonw.h - the one writer of JSON text in moepack: values written as they
 * go, in the layout and with the escapes the text's reader expects.
 *
 * Three kinds of text are made with it, each a style below:
 *  - `moepack top --json` (cli/top_json.c): jansson's JSON_INDENT(2)
 *    layout, every control character (C0, DEL, C1) as \u00XX so that the
 *    text is safe on a terminal too (MP_JSONW_TERMINAL), unsigned counts
 *    exact where jansson's integers are signed 64-bit;
 *  - Python's json.dumps() text (base/pyjson.h), which SGLang's and the
 *    Kimi reference builders write and hash: their separators and indent,
 *    \b \t \n \f \r short (MP_JSONW_SHORT_ESCAPES), with or without
 *    ensure_ascii (MP_JSONW_ASCII);
 *  - a file name as a JSON string (base/jsonstr.h, mp_json_quote()).
 *
 * A string is written as JSON that reads back as the same characters:
 * '"' and '\' after a backslash; control characters below 0x20 short or
 * as \u00XX; with MP_JSONW_ASCII also DEL and every non-ASCII character as
 * \uXXXX (a surrogate pair above U+FFFF); with MP_JSONW_TERMINAL also DEL
 * and U+0080..U+009F; everything else as the UTF-8 it is.  A byte that
 * starts no valid UTF-8 sequence is written as the lone surrogate \udcXX,
 * which Python's json and os modules (the "surrogateescape" convention)
 * turn back into that byte.  Escapes are lower-case hex, as Python writes
 * them.
 *
 * Writes never fail at the call: a writer out of memory, nested deeper
 * than MP_JSONW_DEPTH_MAX or closed more than it was opened is marked
 * failed (w->out.failed) and its owner checks once at the end.
 */
#ifndef MOEPACK_JSONW_H
#define MOEPACK_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Containers open at once: a root and the 64 levels below it that
 * base/pyjson.h allows. */
#define MP_JSONW_DEPTH_MAX 65

/* Escapes a style adds to the ones every string gets (above). */
#define MP_JSONW_SHORT_ESCAPES 1u /* \b \t \n \f \r short, not \u00XX */
#define MP_JSONW_ASCII 2u         /* Python's ensure_ascii: only ASCII out */
#define MP_JSONW_TERMINAL 4u      /* DEL and the C1 controls escaped too */

struct mp_jsonw_style {
	int indent;           /* spaces a level, each item on a line; < 0: one line */
	const char *item_sep; /* after each item but the last: "," or ", " */
	const char *key_sep;  /* between a key and its value: ": " or ":" */
	unsigned escapes;     /* MP_JSONW_* */
};

struct mp_jsonw {
	struct mp_buf out;      /* the text so far, NUL-terminated */
	struct mp_jsonw_style style;
	unsigned depth;         /* containers open */
	bool filled[MP_JSONW_DEPTH_MAX]; /* the container at that depth has an item */
	bool keyed;             /* a key was written: its value comes next */
};

/* An empty writer of text in that style (copied). */
void mp_jsonw_init(struct mp_jsonw *w, const struct mp_jsonw_style *style);

/* The key of the next value, in an object: a string, then key_sep. */
void mp_jsonw_key(struct mp_jsonw *w, const char *key);

/* Open and close an object ('{', '}') or an array ('[', ']').  A container
 * with no items is "{}" or "[]" whatever the indent. */
void mp_jsonw_open(struct mp_jsonw *w, char bracket);
void mp_jsonw_close(struct mp_jsonw *w, char bracket);

/* s[0..n) as a string, escaped as above. */
void mp_jsonw_string(struct mp_jsonw *w, const char *s, size_t n);

void mp_jsonw_u64(struct mp_jsonw *w, uint64_t v);

/* A value whose text the caller made ("null", "true", a number as its
 * reader writes numbers), written as it is. */
void mp_jsonw_literal(struct mp_jsonw *w, const char *text);

#endif
