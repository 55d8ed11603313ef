/* buf.c - a byte buffer that grows as it is written (buf.h). */
#include "config.h"

#include "base/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void mp_buf_add(struct mp_buf *b, const void *data, size_t n)
{
	if (b->failed)
		return;
	if (n > SIZE_MAX / 2 - b->len) {
		b->failed = true;
		return;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *grown;

		while (cap < b->len + n + 1)
			cap *= 2;
		if (!(grown = realloc(b->p, cap))) {
			b->failed = true;
			return;
		}
		b->p = grown;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void mp_buf_puts(struct mp_buf *b, const char *s)
{
	mp_buf_add(b, s, strlen(s));
}
