/*
 * buf.h - a byte buffer that grows as it is written, for text and records
 * made whole in memory before they are written out (JSON text, a GGUF
 * header).
 *
 * Writes never fail at the call: a buffer that could not grow is marked
 * failed, ignores what comes after, and its owner checks `failed` once at
 * the end.  The bytes are always followed by a NUL (not counted in len),
 * so text can be handed on as a C string.  `struct mp_buf b = {0};` is an
 * empty buffer; free(b.p) releases it.
 */
#ifndef MOEPACK_BUF_H
#define MOEPACK_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct mp_buf {
	char *p;      /* len bytes and a NUL; NULL until the first write */
	size_t len, cap;
	bool failed;  /* out of memory: p holds what came before */
};

/* n bytes of data appended (n may be 0: the buffer then exists). */
void mp_buf_add(struct mp_buf *b, const void *data, size_t n);

/* A C string appended, without its NUL. */
void mp_buf_puts(struct mp_buf *b, const char *s);

#endif
