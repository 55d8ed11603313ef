/* pyjson.c - JSON text as Python's json.dumps() writes it (pyjson.h). */
#include "config.h"

#include "base/pyjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"

#define MAX_DEPTH 64

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

static void put_value(struct mp_jsonw *w, const json_t *v, int depth);

static void put_array(struct mp_jsonw *w, const json_t *v, int depth)
{
	mp_jsonw_open(w, '[');
	for (size_t i = 0; i < json_array_size(v); i++)
		put_value(w, json_array_get(v, i), depth + 1);
	mp_jsonw_close(w, ']');
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The object's keys in code point order (strcmp compares unsigned bytes,
 * and UTF-8's byte order is code point order). */
static const char **sorted_keys(const json_t *v, size_t *n)
{
	const char **keys = malloc((json_object_size(v) + 1) * sizeof *keys);
	const char *k;
	json_t *val;

	*n = 0;
	if (!keys)
		return NULL;
	json_object_foreach((json_t *)v, k, val)
		keys[(*n)++] = k;
	qsort(keys, *n, sizeof *keys, key_cmp);
	return keys;
}

static void put_object(struct mp_jsonw *w, const json_t *v, int depth)
{
	size_t n;
	const char **keys = sorted_keys(v, &n);

	if (!keys) {
		w->out.failed = true;
		return;
	}
	mp_jsonw_open(w, '{');
	for (size_t i = 0; i < n; i++) {
		mp_jsonw_key(w, keys[i]);
		put_value(w, json_object_get(v, keys[i]), depth + 1);
	}
	mp_jsonw_close(w, '}');
	free(keys);
}

/* A number, true, false or null. */
static void put_scalar(struct mp_jsonw *w, const json_t *v)
{
	char b[48];

	if (json_is_integer(v))
		snprintf(b, sizeof b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		mp_pyjson_repr(json_real_value(v), b, sizeof b);
	else
		snprintf(b, sizeof b, "%s", json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null");
	mp_jsonw_literal(w, b);
}

static void put_value(struct mp_jsonw *w, const json_t *v, int depth)
{
	if (depth > MAX_DEPTH)
		w->out.failed = true;
	else if (json_is_array(v))
		put_array(w, v, depth);
	else if (json_is_object(v))
		put_object(w, v, depth);
	else if (json_is_string(v))
		mp_jsonw_string(w, json_string_value(v), json_string_length(v));
	else
		put_scalar(w, v);
}

/* v's text in a style; NULL when out of memory or nested too deep. */
static char *dumps(const json_t *v, const struct mp_jsonw_style *style, size_t *len)
{
	struct mp_jsonw w;

	mp_jsonw_init(&w, style);
	put_value(&w, v, 0);
	if (w.out.failed) {
		free(w.out.p);
		return NULL;
	}
	if (len)
		*len = w.out.len;
	return w.out.p;
}

char *mp_pyjson_dumps(const json_t *v, int indent, bool ensure_ascii, size_t *len)
{
	/* Python's separators: "," before a newline, ", " on one line */
	const struct mp_jsonw_style style = {
		.indent = indent < 0 ? -1 : indent,
		.item_sep = indent < 0 ? ", " : ",",
		.key_sep = ": ",
		.escapes = MP_JSONW_SHORT_ESCAPES | (ensure_ascii ? MP_JSONW_ASCII : 0),
	};

	return dumps(v, &style, len);
}

char *mp_pyjson_canonical(const json_t *v)
{
	static const struct mp_jsonw_style style = {
		.indent = -1, .item_sep = ",", .key_sep = ":", .escapes = MP_JSONW_SHORT_ESCAPES};

	return dumps(v, &style, NULL);
}
