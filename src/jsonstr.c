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

char *mp_json_dump_line(const json_t *root, size_t flags)
{
	char *body = json_dumps(root, flags);
	size_t n;
	char *text;

	if (!body)
		return NULL;
	n = strlen(body);
	text = realloc(body, n + 2);
	if (!text) {
		free(body);
		return NULL;
	}
	memcpy(text + n, "\n", 2);
	return text;
}

char *mp_json_dump_with_path(json_t *root, json_t *obj, const char *key, const char *path,
			     size_t flags)
{
	char marker[48], literal[52];
	size_t qlen;
	char *quoted = mp_json_quote(path, strlen(path), &qlen);

	if (!quoted)
		return NULL;
	/* A manifest may hold any text, even a marker: try the next one then. */
	for (unsigned n = 0; n < 1000; n++) {
		char *text, *at, *out;
		size_t head, tail, llen;

		snprintf(marker, sizeof marker, "moepack-path-marker-%u", n);
		llen = (size_t)snprintf(literal, sizeof literal, "\"%s\"", marker);
		if (json_object_set_new(obj, key, json_string(marker)))
			break;
		text = mp_json_dump_line(root, flags);
		if (!text)
			break;
		at = strstr(text, literal);
		if (!at || strstr(at + llen, literal)) {
			free(text);
			continue;
		}
		head = (size_t)(at - text);
		tail = strlen(at + llen);
		out = malloc(head + qlen + tail + 1);
		if (out) {
			memcpy(out, text, head);
			memcpy(out + head, quoted, qlen);
			memcpy(out + head + qlen, at + llen, tail + 1);
		}
		free(text);
		free(quoted);
		return out;
	}
	free(quoted);
	return NULL;
}
