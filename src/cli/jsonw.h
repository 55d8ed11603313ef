/*
 * jsonw.h - JSON text written as it goes, for what jansson cannot carry.
 *
 * jansson's integers are signed 64-bit: a count of 2^64-1 cannot be one,
 * and a cast makes it -1.  This writer prints unsigned counts exactly, and
 * any C string as a valid JSON string: valid UTF-8 exactly as it is (with
 * control characters, DEL and the C1 controls escaped, so the text is safe
 * on a terminal too), anything else as cli_text() shows it.  The layout is
 * jansson's JSON_INDENT(2), one value a line.  Keys are the program's own
 * (plain ASCII, no quotes).  A writer that ran out of memory keeps failing
 * quietly; jw_print() then reports it.
 */
#ifndef MOEPACK_CLI_JSONW_H
#define MOEPACK_CLI_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JW_DEPTH_MAX 16

struct jw {
	char *buf;
	size_t len, cap;
	unsigned depth;             /* containers open */
	bool filled[JW_DEPTH_MAX];  /* the container at that depth has a value */
	bool keyed;                 /* a key was written: its value comes next */
	bool failed;                /* out of memory, or nested too deep */
};

/* An empty writer: `struct jw w = {0};` is one too. */
void jw_init(struct jw *w);

/* The key of the next value, in an object. */
void jw_key(struct jw *w, const char *key);

/* Open and close an object ('{', '}') or an array ('[', ']'). */
void jw_open(struct jw *w, char bracket);
void jw_close(struct jw *w, char bracket);

void jw_u64(struct jw *w, uint64_t v);
/* A finite number; NaN and the infinities, which JSON has not, as null. */
void jw_real(struct jw *w, double v);
void jw_null(struct jw *w);
/* s as a string (see above); NULL as null. */
void jw_text(struct jw *w, const char *s);

/* The text and a newline on standard output, and the writer emptied;
 * 0, or -1 when out of memory, or the errno of a failed write. */
int jw_print(struct jw *w);

#endif
