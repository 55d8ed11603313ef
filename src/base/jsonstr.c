/* jsonstr.c - JSON string literals for arbitrary bytes (see jsonstr.h). */
#include "config.h"

#include "base/jsonstr.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"

char *mp_json_quote(const char *s, size_t n, size_t *out_len)
{
	/* a string alone: the separators are never written */
	static const struct mp_jsonw_style style = {
		.indent = -1, .item_sep = ",", .key_sep = ":", .escapes = MP_JSONW_SHORT_ESCAPES};
	struct mp_jsonw w;

	mp_jsonw_init(&w, &style);
	mp_jsonw_string(&w, s, n);
	if (w.out.failed) {
		free(w.out.p);
		return NULL;
	}
	if (out_len)
		*out_len = w.out.len;
	return w.out.p;
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
