/* manifestpath.c - expert_pack.path in a manifest's text (manifestpath.h). */
#include "config.h"

#include "pack/manifestpath.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonstr.h"

/* A walk over raw[0..end), reporting as `what`. */
struct cursor {
	const char *base, *p, *end;
	const char *what;
	struct mp_error *err;
};

static enum mp_err bad(struct cursor *c, const char *why)
{
	return mp_fail(c->err, MP_E_MANIFEST_JSON, "manifest is not valid JSON: %s: %s at byte %zu",
		       c->what, why, (size_t)(c->p - c->base));
}

static void skip_ws(struct cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

/* At '"': past the closing quote.  False when the string does not end. */
static bool skip_string(struct cursor *c)
{
	for (c->p++; c->p < c->end; c->p++) {
		if (*c->p == '\\') {
			if (++c->p == c->end)
				return false;
			continue; /* the escaped byte is never the closing quote */
		}
		if (*c->p == '"') {
			c->p++;
			return true;
		}
	}
	return false;
}

/* A scalar (number, true, false, null) runs to a delimiter. */
static bool skip_scalar(struct cursor *c)
{
	const char *start = c->p;

	while (c->p < c->end && !strchr(",}] \t\r\n", *c->p))
		c->p++;
	return c->p > start;
}

/* A value of any kind, nested ones by counting brackets outside strings:
 * past its end.  False when the text ends first or a bracket is stray. */
static bool skip_value(struct cursor *c)
{
	size_t depth = 0;

	do {
		if (c->p == c->end)
			return false;
		if (*c->p == '"') {
			if (!skip_string(c))
				return false;
		} else if (*c->p == '{' || *c->p == '[') {
			depth++;
			c->p++;
		} else if (*c->p == '}' || *c->p == ']') {
			if (depth == 0)
				return false;
			depth--;
			c->p++;
		} else if (depth == 0) {
			return skip_scalar(c);
		} else {
			c->p++;
		}
	} while (depth > 0);
	return true;
}

static int hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* One escape of a member name at t[*i] (after the backslash), decoded;
 * -1 for one that is not ASCII (no name looked for has such). */
static int unescape(const char *t, size_t n, size_t *i)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *at = strchr(from, t[*i]);
	int v = 0;

	if (t[*i] != 'u') {
		if (!at || !*at)
			return -1;
		(*i)++;
		return (unsigned char)to[at - from];
	}
	if (*i + 5 > n)
		return -1;
	for (size_t k = 1; k <= 4; k++) {
		int d = hex_digit(t[*i + k]);

		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	*i += 5;
	return v < 0x80 ? v : -1;
}

/* The string token t[0..n) (quotes included, ended by skip_string())
 * decodes to the ASCII name want. */
static bool name_is(const char *t, size_t n, const char *want)
{
	size_t i = 1, w = 0, len = strlen(want);

	while (i + 1 < n) {
		int ch = (unsigned char)t[i++];

		if (ch == '\\' && (ch = unescape(t, n - 1, &i)) < 0)
			return false;
		if (w == len || want[w++] != (char)ch)
			return false;
	}
	return w == len;
}

/*
 * The object at c->p ('{'): *value is where the value of the member named
 * `name` starts (NULL: none); the cursor ends after the object.  Named
 * twice is an error, as mp_manifest_parse() refuses duplicates.
 */
static enum mp_err find_member(struct cursor *c, const char *name, const char **value)
{
	*value = NULL;
	c->p++;
	skip_ws(c);
	if (c->p < c->end && *c->p == '}') {
		c->p++;
		return MP_OK;
	}
	for (;;) {
		const char *key = c->p, *key_end, *v;

		if (c->p == c->end || *c->p != '"')
			return bad(c, "a member name expected");
		if (!skip_string(c))
			return bad(c, "a string does not end");
		key_end = c->p;
		skip_ws(c);
		if (c->p == c->end || *c->p != ':')
			return bad(c, "':' expected");
		c->p++;
		skip_ws(c);
		v = c->p;
		if (!skip_value(c))
			return bad(c, "a value does not end");
		if (name_is(key, (size_t)(key_end - key), name)) {
			if (*value)
				return bad(c, "a member named twice");
			*value = v;
		}
		skip_ws(c);
		if (c->p < c->end && *c->p == ',') {
			c->p++;
			skip_ws(c);
		} else if (c->p < c->end && *c->p == '}') {
			c->p++;
			return MP_OK;
		} else {
			return bad(c, "',' or '}' expected");
		}
	}
}

/* The top level of the text must be an object, and nothing after it. */
static enum mp_err top_member(struct cursor *c, const char *name, const char **value)
{
	enum mp_err rc;

	skip_ws(c);
	if (c->p == c->end || *c->p != '{')
		return mp_fail(c->err, MP_E_MANIFEST_TYPE, "manifest value has the wrong JSON "
			       "type: the top level of %s is not an object", c->what);
	if ((rc = find_member(c, name, value)))
		return rc;
	skip_ws(c);
	return c->p != c->end ? bad(c, "text after the top-level object") : MP_OK;
}

enum mp_err mp_manifest_key_span(const char *raw, size_t len, const char *what,
				 const char *key, struct mp_text_span *span,
				 struct mp_error *err)
{
	struct cursor c = {raw, raw, raw + len, what, err};
	const char *dot = strchr(key, '.'), *v;
	char outer[64];
	enum mp_err rc;

	snprintf(outer, sizeof outer, "%.*s", dot ? (int)(dot - key) : (int)strlen(key), key);
	if ((rc = top_member(&c, outer, &v)))
		return rc;
	if (!v)
		return mp_fail(err, MP_E_MANIFEST_MISSING, "manifest key is missing: %s", outer);
	if (dot && *v != '{')
		return mp_fail(err, MP_E_MANIFEST_TYPE, "manifest value has the wrong JSON type: "
			       "%s is not an object", outer);
	if (dot) {
		c.p = v;
		if ((rc = find_member(&c, dot + 1, &v)))
			return rc;
		if (!v)
			return mp_fail(err, MP_E_MANIFEST_MISSING, "manifest key is missing: %s",
				       key);
	}
	if (*v != '"')
		return mp_fail(err, MP_E_MANIFEST_TYPE, "manifest value has the wrong JSON type: "
			       "%s is not a string", key);
	c.p = v;
	skip_string(&c); /* it ended when the member was skipped */
	span->start = (size_t)(v - raw);
	span->end = (size_t)(c.p - raw);
	return MP_OK;
}

enum mp_err mp_manifest_path_span(const char *raw, size_t len, const char *what,
				  struct mp_text_span *span, struct mp_error *err)
{
	return mp_manifest_key_span(raw, len, what, "expert_pack.path", span, err);
}

enum mp_err mp_manifest_sha256_without_path(const char *raw, size_t len,
					    const struct mp_text_span *span,
					    unsigned char out[MP_SHA256_LEN], struct mp_error *err)
{
	struct mp_sha256 *h = mp_sha256_new();

	if (!h)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	mp_sha256_update(h, raw, span->start);
	mp_sha256_update(h, "null", 4);
	mp_sha256_update(h, raw + span->end, len - span->end);
	mp_sha256_final(h, out);
	mp_sha256_free(h);
	return MP_OK;
}

enum mp_err mp_manifest_splice_path(const char *raw, size_t len, const struct mp_text_span *span,
				    const char *path, char **out, size_t *out_len,
				    struct mp_error *err)
{
	size_t qlen, n;
	char *quoted = mp_json_quote(path, strlen(path), &qlen);

	*out = NULL;
	n = span->start + qlen + (len - span->end);
	if (quoted)
		*out = malloc(n + 1);
	if (!*out) {
		free(quoted);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	memcpy(*out, raw, span->start);
	memcpy(*out + span->start, quoted, qlen);
	memcpy(*out + span->start + qlen, raw + span->end, len - span->end);
	(*out)[n] = '\0';
	*out_len = n;
	free(quoted);
	return MP_OK;
}
