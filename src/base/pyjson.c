/* pyjson.c - JSON text as Python's json.dumps() writes it. */
#include "config.h"

#include "base/pyjson.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

struct out {
	char *buf;
	size_t len, cap;
	bool failed;
	int indent;
	bool ascii;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->failed)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		char *b;

		while (cap < o->len + n + 1)
			cap *= 2;
		if (!(b = realloc(o->buf, cap))) {
			o->failed = true;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_u16(struct out *o, unsigned v)
{
	char b[8];

	snprintf(b, sizeof b, "\\u%04x", v & 0xffffu);
	puts_(o, b);
}

/* The code point of the UTF-8 sequence at s (valid: jansson checked it);
 * *n gets its length. */
static uint32_t utf8_at(const unsigned char *s, size_t left, size_t *n)
{
	size_t len = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	uint32_t c = s[0] & (0x7fu >> len);

	if (len > left)
		len = left;
	for (size_t i = 1; i < len; i++)
		c = c << 6 | (s[i] & 0x3fu);
	*n = len;
	return c;
}

static void put_code_point(struct out *o, uint32_t c)
{
	if (c < 0x10000) {
		put_u16(o, c);
		return;
	}
	c -= 0x10000;
	put_u16(o, 0xd800 | (c >> 10));
	put_u16(o, 0xdc00 | (c & 0x3ff));
}

/* One character that needs an escape (or is non-ASCII text); returns the
 * bytes it took. */
static size_t put_escaped(struct out *o, const unsigned char *s, size_t left)
{
	static const char *const named[0x20] = {['\b'] = "\\b", ['\t'] = "\\t", ['\n'] = "\\n",
						['\f'] = "\\f", ['\r'] = "\\r"};
	size_t n = 1;

	if (*s == '"')
		puts_(o, "\\\"");
	else if (*s == '\\')
		puts_(o, "\\\\");
	else if (*s < 0x20)
		named[*s] ? puts_(o, named[*s]) : put_u16(o, *s);
	else if (*s == 0x7f)
		put_u16(o, *s);
	else
		put_code_point(o, utf8_at(s, left, &n));
	return n;
}

static bool plain(const struct out *o, unsigned char c)
{
	if (c == '"' || c == '\\' || c < 0x20)
		return false;
	return !o->ascii || c < 0x7f;
}

static void put_string(struct out *o, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	put(o, "\"", 1);
	while (i < n) {
		size_t run = i;

		while (run < n && plain(o, s[run]))
			run++;
		put(o, str + i, run - i);
		if (run < n)
			run += put_escaped(o, s + run, n - run);
		i = run;
	}
	put(o, "\"", 1);
}

/* The shortest "%.*e" digits that read back as d, laid out as Python's
 * float_repr_style 'short' does: plain notation for exponents -4..15. */
static void repr_finite(double d, char *buf, size_t len)
{
	char e[40], digits[24], *p, *q;
	int prec = 0, exp, nd = 0;

	do
		snprintf(e, sizeof e, "%.*e", prec, d);
	while (strtod(e, NULL) != d && ++prec < 17);
	p = e;
	q = buf;
	if (*p == '-')
		*q++ = *p++;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	digits[nd] = '\0';
	exp = atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		digits[--nd] = '\0';
	if (exp < -4 || exp >= 16) {
		snprintf(q, len - (size_t)(q - buf), "%c%s%se%c%02d", digits[0], nd > 1 ? "." : "",
			 digits + 1, exp < 0 ? '-' : '+', abs(exp));
		return;
	}
	if (exp < 0) { /* 0.000ddd */
		*q++ = '0';
		*q++ = '.';
		for (int i = 0; i < -exp - 1; i++)
			*q++ = '0';
		memcpy(q, digits, (size_t)nd + 1);
		return;
	}
	for (int i = 0; i <= exp || i < nd; i++) { /* ddd[.ddd] or ddd000.0 */
		if (i == exp + 1)
			*q++ = '.';
		*q++ = i < nd ? digits[i] : '0';
	}
	if (nd <= exp + 1) {
		*q++ = '.';
		*q++ = '0';
	}
	*q = '\0';
}

void mp_pyjson_repr(double d, char *buf, size_t len)
{
	if (isnan(d))
		snprintf(buf, len, "NaN");
	else if (isinf(d))
		snprintf(buf, len, "%sInfinity", d < 0 ? "-" : "");
	else
		repr_finite(d, buf, len);
}

static void put_value(struct out *o, const json_t *v, int depth);

static void newline(struct out *o, int depth)
{
	if (o->indent < 0)
		return;
	put(o, "\n", 1);
	for (int i = 0; i < depth * o->indent; i++)
		put(o, " ", 1);
}

static void separator(struct out *o, int depth)
{
	put(o, ",", 1);
	if (o->indent < 0)
		put(o, " ", 1);
	newline(o, depth);
}

static void put_array(struct out *o, const json_t *v, int depth)
{
	size_t n = json_array_size(v);

	if (!n) {
		puts_(o, "[]");
		return;
	}
	put(o, "[", 1);
	newline(o, depth + 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			separator(o, depth + 1);
		put_value(o, json_array_get(v, i), depth + 1);
	}
	newline(o, depth);
	put(o, "]", 1);
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The object's keys in code point order (strcmp compares unsigned bytes). */
static const char **sorted_keys(struct out *o, const json_t *v, size_t *n)
{
	const char **keys = malloc((json_object_size(v) + 1) * sizeof *keys);
	const char *k;
	json_t *val;

	*n = 0;
	if (!keys) {
		o->failed = true;
		return NULL;
	}
	json_object_foreach((json_t *)v, k, val)
		keys[(*n)++] = k;
	qsort(keys, *n, sizeof *keys, key_cmp);
	return keys;
}

static void put_object(struct out *o, const json_t *v, int depth)
{
	size_t n;
	const char **keys;

	if (!json_object_size(v)) {
		puts_(o, "{}");
		return;
	}
	if (!(keys = sorted_keys(o, v, &n)))
		return;
	put(o, "{", 1);
	newline(o, depth + 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			separator(o, depth + 1);
		put_string(o, keys[i], strlen(keys[i]));
		puts_(o, ": ");
		put_value(o, json_object_get(v, keys[i]), depth + 1);
	}
	newline(o, depth);
	put(o, "}", 1);
	free(keys);
}

static void put_scalar(struct out *o, const json_t *v)
{
	char b[48];

	switch (json_typeof(v)) {
	case JSON_STRING:
		put_string(o, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		snprintf(b, sizeof b, "%lld", (long long)json_integer_value(v));
		break;
	case JSON_REAL:
		mp_pyjson_repr(json_real_value(v), b, sizeof b);
		break;
	case JSON_TRUE:
		snprintf(b, sizeof b, "true");
		break;
	case JSON_FALSE:
		snprintf(b, sizeof b, "false");
		break;
	default:
		snprintf(b, sizeof b, "null");
	}
	puts_(o, b);
}

static void put_value(struct out *o, const json_t *v, int depth)
{
	if (depth > MAX_DEPTH) {
		o->failed = true;
		return;
	}
	if (json_is_array(v))
		put_array(o, v, depth);
	else if (json_is_object(v))
		put_object(o, v, depth);
	else
		put_scalar(o, v);
}

char *mp_pyjson_dumps(const json_t *v, int indent, bool ensure_ascii, size_t *len)
{
	struct out o = {.indent = indent, .ascii = ensure_ascii};

	put(&o, "", 0);
	put_value(&o, v, 0);
	if (o.failed) {
		free(o.buf);
		return NULL;
	}
	if (len)
		*len = o.len;
	return o.buf;
}
