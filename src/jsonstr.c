/* jsonstr.c - JSON string literals for arbitrary bytes (see jsonstr.h). */
#include "config.h"

#include "jsonstr.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

char *mp_json_quote(const char *s, size_t n, size_t *out_len)
{
	const unsigned char *u = (const unsigned char *)s;
	/* Worst case: every byte a six-character escape, and the quotes. */
	char *out = n <= (SIZE_MAX - 3) / 6 ? malloc(6 * n + 3) : NULL;
	size_t o = 0;

	if (!out)
		return NULL;
	out[o++] = '"';
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		size_t k;

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
			i++;
		} else if (c < 0x20) {
			const char *esc = c == '\b' ? "\\b" : c == '\t' ? "\\t" : c == '\n' ? "\\n"
					: c == '\f' ? "\\f" : c == '\r' ? "\\r" : NULL;
			if (esc) {
				memcpy(out + o, esc, 2);
				o += 2;
			} else {
				o += (size_t)sprintf(out + o, "\\u%04x", c);
			}
			i++;
		} else if ((k = mp_utf8_seq_len(u + i, n - i)) > 0) {
			memcpy(out + o, u + i, k);
			o += k;
			i += k;
		} else {
			o += (size_t)sprintf(out + o, "\\udc%02x", c);
			i++;
		}
	}
	out[o++] = '"';
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}
