/* jsonstr.c - JSON string literals for arbitrary bytes (see jsonstr.h). */
#include "config.h"

#include "base/jsonstr.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"

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

#define MARKER "moepack-path-marker-"

/*
 * A number n such that MARKER followed by n's decimal digits and a quote
 * occurs nowhere in text: any occurrence of that literal is an occurrence
 * of MARKER followed by exactly those digits, so it is enough to avoid the
 * digit runs that follow MARKER in text.  Of the k occurrences at most k
 * numbers are taken, so one of 0..k is free.  SIZE_MAX: out of memory.
 */
static size_t free_marker(const char *text)
{
	size_t k = 0, n;
	const char *at;
	unsigned char *taken;

	for (at = strstr(text, MARKER); at; at = strstr(at + 1, MARKER))
		k++;
	taken = calloc(k + 1, 1);
	if (!taken)
		return SIZE_MAX;
	for (at = strstr(text, MARKER); at; at = strstr(at + 1, MARKER)) {
		const char *d = at + strlen(MARKER);
		size_t v = 0;
		bool big = false;

		if (*d < '0' || *d > '9' || (d[0] == '0' && d[1] >= '0' && d[1] <= '9'))
			continue; /* no digits, or a leading zero: not a marker we make */
		for (; *d >= '0' && *d <= '9'; d++) {
			if (v > k)
				big = true;
			else
				v = v * 10 + (size_t)(*d - '0');
		}
		if (!big && v <= k)
			taken[v] = 1;
	}
	for (n = 0; n <= k && taken[n]; n++)
		;
	free(taken);
	return n;
}

char *mp_json_dump_with_path(json_t *root, json_t *obj, const char *key, const char *path,
			     size_t flags)
{
	char marker[64], literal[68];
	size_t qlen, n, head, tail, llen;
	char *quoted = mp_json_quote(path, strlen(path), &qlen);
	char *text = NULL, *at, *out = NULL;

	if (!quoted)
		return NULL;
	/*
	 * A manifest may hold any text, markers too: dump once with a marker
	 * that has no number, pick a number no text there uses, dump again.
	 * Two dumps and a few scans, linear in the manifest's size whatever
	 * the other keys hold.
	 */
	if (json_object_set_new(obj, key, json_string(MARKER "x")))
		goto out;
	text = mp_json_dump_line(root, flags);
	if (!text)
		goto out;
	n = free_marker(text);
	free(text);
	text = NULL;
	if (n == SIZE_MAX)
		goto out;
	snprintf(marker, sizeof marker, MARKER "%zu", n);
	llen = (size_t)snprintf(literal, sizeof literal, "\"%s\"", marker);
	if (json_object_set_new(obj, key, json_string(marker)))
		goto out;
	text = mp_json_dump_line(root, flags);
	if (!text)
		goto out;
	at = strstr(text, literal);
	if (!at || strstr(at + llen, literal))
		goto out; /* cannot be: the number was free */
	head = (size_t)(at - text);
	tail = strlen(at + llen);
	out = malloc(head + qlen + tail + 1);
	if (out) {
		memcpy(out, text, head);
		memcpy(out + head, quoted, qlen);
		memcpy(out + head + qlen, at + llen, tail + 1);
	}
out:
	free(text);
	free(quoted);
	return out;
}
