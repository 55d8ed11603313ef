/*
 * mjson.c - manifest JSON for any format: the whole-file read, the one
 * pass that bounds the text before jansson parses it, the parse itself
 * (with Python's surrogate escapes), and typed access by key path.
 */
#include "config.h"

#include "pack/mjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"

enum mp_err mp_manifest_read(const char *path, char **raw, size_t *len,
			     struct mp_error *err)
{
	struct stat st;
	char *buf;
	int fd;
	enum mp_err rc;

	*raw = NULL;
	*len = 0;
	if ((rc = mp_open_regular(path, "manifest", MP_E_MANIFEST_IO, &fd, &st, err)))
		return rc;
	if ((uint64_t)st.st_size > MP_MANIFEST_MAX) {
		close(fd);
		return mp_fail(err, MP_E_MANIFEST_IO,
			       "cannot read manifest %s: larger than %u MiB", path,
			       MP_MANIFEST_MAX >> 20);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return mp_fail(err, MP_E_NOMEM, "out of memory reading manifest %s", path);
	}
	rc = mp_pread_full(fd, buf, (size_t)st.st_size, 0, "manifest", path, MP_E_MANIFEST_IO,
			   err);
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[st.st_size] = '\0';
	*raw = buf;
	*len = (size_t)st.st_size;
	return MP_OK;
}

/*
 * What the pre-parse pass learns about the text.  The estimate weights are
 * what jansson 2.14 takes per item on glibc, allocator overhead included,
 * rounded up (measured with 10^6 of each): an object 232 bytes, an array
 * 140, an object member 100 on top of its value, a string 90 plus its
 * length, a number or literal 40.
 */
#define COST_OBJECT 256u
#define COST_ARRAY 160u
#define COST_MEMBER 112u
#define COST_STRING 96u
#define COST_SCALAR 48u

struct scan {
	uint64_t values, cost;
	uint64_t lone_surrogates; /* \udc80..\udcff not after a high surrogate */
	bool private_use;         /* U+F780..U+F7FF, raw or escaped */
	unsigned char *mark;      /* second pass: a bit per byte to rewrite */
};

/*
 * Bytes that are not UTF-8 travel in a manifest as lone \udc80..\udcff
 * escapes (jsonstr.h); jansson refuses those, so they are parsed as the
 * private-use code points U+F780..U+F7FF (UTF-8 ef 9e 80 .. ef 9f bf), which
 * must not occur otherwise.
 */
#define BYTE_ESCAPE_FIRST 0xdc80
#define BYTE_ESCAPE_LAST 0xdcff
#define HIGH_SURROGATE_FIRST 0xd800
#define HIGH_SURROGATE_LAST 0xdbff
#define BYTE_CODE_FIRST 0xf780
#define BYTE_CODE_LAST 0xf7ff

/* u (3 bytes, or fewer before a NUL) starts one of U+F780..U+F7FF. */
static bool byte_code_at(const unsigned char *u)
{
	return u[0] == 0xef && (u[1] == 0x9e || u[1] == 0x9f) && u[2] >= 0x80 && u[2] <= 0xbf;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The \uXXXX escape at s (s[0] == '\\'), or -1. */
static long u_escape(const unsigned char *s, size_t left)
{
	long v = 0;

	if (left < 6 || s[1] != 'u')
		return -1;
	for (int k = 2; k < 6; k++) {
		int h = hexval(s[k]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/*
 * One pass over the bytes that counts what jansson would build.  Only
 * brackets, colons, string quotes and escapes matter; jansson reports any
 * syntax error afterwards.  Stops at the first limit exceeded.
 */
const struct mp_json_limits mp_manifest_limits = {
	MP_E_MANIFEST_LIMIT, MP_MANIFEST_MAX_VALUES, MP_MANIFEST_MAX_DEPTH, MP_MANIFEST_MAX_TREE,
};

/* Mark byte i of the text for the second pass to rewrite. */
static void mark_byte(struct scan *sc, size_t i)
{
	sc->mark[i >> 3] |= (unsigned char)(1u << (i & 7));
}

/* The string whose first byte is u[i]: counts what it holds; returns the
 * index of its closing quote (len when there is none). */
static size_t scan_string(const unsigned char *u, size_t len, size_t i, struct scan *sc)
{
	long prev = -1; /* the code of the escape just before */

	for (; i < len && u[i] != '"'; i++) {
		long v;

		if (i + 2 < len && byte_code_at(u + i))
			sc->private_use = true;
		if (u[i] != '\\') {
			prev = -1;
			continue;
		}
		v = u_escape(u + i, len - i);
		if (v < 0) {
			i++; /* a two-character escape such as \" or \\ */
			prev = -1;
			continue;
		}
		if (v >= BYTE_ESCAPE_FIRST && v <= BYTE_ESCAPE_LAST &&
		    !(prev >= HIGH_SURROGATE_FIRST && prev <= HIGH_SURROGATE_LAST)) {
			sc->lone_surrogates++;
			if (sc->mark) { /* "dc" of \udcXX becomes "f7" */
				mark_byte(sc, i + 2);
				mark_byte(sc, i + 3);
			}
		}
		if (v >= BYTE_CODE_FIRST && v <= BYTE_CODE_LAST)
			sc->private_use = true;
		prev = v;
		i += 5;
	}
	return i;
}

/* The totals against the limits, once the text is counted. */
static enum mp_err check_totals(const struct scan *sc, const char *path,
				const struct mp_json_limits *lim, struct mp_error *err)
{
	const char *what = mp_err_summary(lim->code);

	if (sc->values > lim->values)
		return mp_fail(err, lim->code, "%s: %s has more than %u JSON values", what,
			       path, lim->values);
	if (sc->cost > lim->tree)
		return mp_fail(err, lim->code,
			       "%s: %s would take about %llu MiB to parse, more than %u MiB",
			       what, path, (unsigned long long)(sc->cost >> 20),
			       lim->tree >> 20);
	return MP_OK;
}

static bool scalar_byte(unsigned char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'E' ||
	       (c >= 'a' && c <= 'z');
}

static enum mp_err scan_text(const char *raw, size_t len, const char *path,
			     const struct mp_json_limits *lim, struct scan *sc,
			     struct mp_error *err)
{
	const unsigned char *u = (const unsigned char *)raw;
	unsigned depth = 0;
	bool in_scalar = false;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = u[i];

		if (c == '"') {
			size_t start = i + 1;

			i = scan_string(u, len, start, sc);
			sc->values++;
			sc->cost += COST_STRING + (i - start);
		} else if (scalar_byte(c)) {
			if (!in_scalar) {
				sc->values++;
				sc->cost += COST_SCALAR;
			}
			in_scalar = true;
			continue;
		} else if (c == '{' || c == '[') {
			sc->values++;
			sc->cost += c == '{' ? COST_OBJECT : COST_ARRAY;
			if (++depth > lim->depth)
				return mp_fail(err, lim->code,
					       "%s: %s nests objects and arrays deeper than %u "
					       "levels",
					       mp_err_summary(lim->code), path, lim->depth);
		} else if (c == '}' || c == ']') {
			if (depth)
				depth--;
		} else if (c == ':') {
			/* a key: counted as a string above, but not a value (in
			 * text that is not JSON there may be more colons than
			 * strings; jansson reports that) */
			if (sc->values)
				sc->values--;
			sc->cost += COST_MEMBER;
		}
		in_scalar = false;
		if (c != '"' && sc->values > lim->values)
			return check_totals(sc, path, lim, err);
	}
	return check_totals(sc, path, lim, err);
}

enum mp_err mp_json_check_limits(const char *raw, size_t len, const char *path,
				 const struct mp_json_limits *lim, struct mp_error *err)
{
	struct scan sc = {0};

	return scan_text(raw, len, path, lim, &sc, err);
}

/* Feeds jansson the text with the marked "dc" of each lone \udcXX as "f7". */
struct rewrite {
	const unsigned char *raw;
	const unsigned char *mark;
	size_t len, pos;
};

static size_t rewrite_chunk(void *buf, size_t size, void *arg)
{
	struct rewrite *rw = arg;
	unsigned char *out = buf;
	size_t n = rw->len - rw->pos < size ? rw->len - rw->pos : size;

	memcpy(out, rw->raw + rw->pos, n);
	for (size_t k = 0; k < n; k++)
		if (rw->mark[(rw->pos + k) >> 3] & (1u << ((rw->pos + k) & 7)))
			out[k] = (out[k] == 'd' || out[k] == 'D') ? 'f' : '7';
	rw->pos += n;
	return n;
}

enum mp_err mp_manifest_parse_ex(const char *raw, size_t len, const char *path,
				 json_t **root, bool *surrogates, struct mp_error *err)
{
	const size_t flags = JSON_REJECT_DUPLICATES | JSON_DECODE_ANY;
	struct scan sc = {0};
	json_error_t je;
	enum mp_err rc;

	*root = NULL;
	*surrogates = false;
	if ((rc = scan_text(raw, len, path, &mp_manifest_limits, &sc, err)))
		return rc;
	if (sc.lone_surrogates && sc.private_use)
		return mp_fail(err, MP_E_MANIFEST_JSON,
			       "manifest is not valid JSON: %s has both lone \\udcXX escapes "
			       "(bytes of a file name that is not UTF-8) and characters "
			       "U+F780..U+F7FF, which moepack reads them as",
			       path);
	if (sc.lone_surrogates) {
		struct scan again = {0};
		struct rewrite rw = {(const unsigned char *)raw, NULL, len, 0};

		/* A bit per byte: 1/8 of the text, far less than a copy of it. */
		again.mark = calloc(len / 8 + 1, 1);
		if (!again.mark)
			return mp_fail(err, MP_E_NOMEM, "out of memory reading manifest %s", path);
		scan_text(raw, len, path, &mp_manifest_limits, &again, NULL);
		rw.mark = again.mark;
		*root = json_load_callback(rewrite_chunk, &rw, flags, &je);
		free(again.mark);
		*surrogates = true;
	} else {
		*root = json_loadb(raw, len, flags, &je);
	}
	/* JSON_DECODE_ANY: a scalar top level is a type error, not a syntax one. */
	if (!*root)
		return mp_fail(err, MP_E_MANIFEST_JSON,
			       "manifest is not valid JSON: %s:%d:%d: %s", path, je.line,
			       je.column, je.text);
	if (!json_is_object(*root)) {
		json_decref(*root);
		*root = NULL;
		return mp_fail(err, MP_E_MANIFEST_TYPE,
			       "manifest value has the wrong JSON type: the top level of %s "
			       "is not an object",
			       path);
	}
	return MP_OK;
}

enum mp_err mp_manifest_parse(const char *raw, size_t len, const char *path,
			      json_t **root, struct mp_error *err)
{
	bool surrogates;

	return mp_manifest_parse_ex(raw, len, path, root, &surrogates, err);
}

/* "an integer", "a string"...: for messages. */
const char *mp_json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "unknown";
}

/* The value at path[0..end): the text up to a component, for messages. */
static void path_prefix(char prefix[256], const char *path, size_t end)
{
	memcpy(prefix, path, end);
	prefix[end] = '\0';
}

/*
 * The "[N]" indexes after a key, *p at the first "[": each steps into an
 * array.  prefix gets the path up to the item at fault.
 */
static enum mp_err walk_items(const char *path, const char **p, json_t **cur, char prefix[256],
			      struct mp_error *err)
{
	while (**p == '[') {
		const char *close = strchr(*p, ']');
		size_t before = (size_t)(*p - path), idx = 0;

		for (const char *d = *p + 1; close && d < close; d++)
			if (*d < '0' || *d > '9' || __builtin_mul_overflow(idx, 10, &idx) ||
			    __builtin_add_overflow(idx, (size_t)(*d - '0'), &idx))
				close = NULL;
		if (!close || close == *p + 1)
			return mp_fail(err, MP_E_USAGE, "manifest key path is malformed: %s",
				       path);
		path_prefix(prefix, path, before);
		if (!json_is_array(*cur))
			return mp_fail(err, MP_E_MANIFEST_TYPE,
				       "manifest value has the wrong JSON type: %s is %s, must "
				       "be an array",
				       prefix, mp_json_kind(*cur));
		path_prefix(prefix, path, (size_t)(close + 1 - path));
		*cur = json_array_get(*cur, idx);
		if (!*cur)
			return mp_fail(err, MP_E_MANIFEST_MISSING, "manifest key is missing: %s",
				       prefix);
		*p = close + 1;
	}
	return MP_OK;
}

/*
 * Walk a key path ("expert_pack.roles.up.dtype", "tensors[3].name").  A
 * missing key at any depth is reported with the path up to it; a
 * non-object on the way is a type error at that prefix.
 */
enum mp_err mp_json_get(json_t *root, const char *path, json_t **out, struct mp_error *err)
{
	char prefix[256];
	const char *p = path;
	json_t *cur = root;
	enum mp_err rc;

	if (strlen(path) >= sizeof prefix)
		return mp_fail(err, MP_E_USAGE, "manifest key path too long: %s", path);
	for (;;) {
		size_t seg = strcspn(p, ".[");
		char key[128];

		if (seg >= sizeof key)
			return mp_fail(err, MP_E_USAGE, "manifest key path too long: %s", path);
		memcpy(key, p, seg);
		key[seg] = '\0';
		path_prefix(prefix, path, (size_t)(p - path) + seg);
		cur = json_object_get(cur, key);
		if (!cur)
			return mp_fail(err, MP_E_MANIFEST_MISSING, "manifest key is missing: %s",
				       prefix);
		p += seg;
		if ((rc = walk_items(path, &p, &cur, prefix, err)))
			return rc;
		if (*p != '.')
			break;
		if (!json_is_object(cur))
			return mp_fail(err, MP_E_MANIFEST_TYPE,
				       "manifest value has the wrong JSON type: %s is %s, must "
				       "be an object",
				       prefix, mp_json_kind(cur));
		p++;
	}
	*out = cur;
	return MP_OK;
}

enum mp_err mp_json_wrong_type(const char *path, const json_t *v, const char *want,
			       struct mp_error *err)
{
	return mp_fail(err, MP_E_MANIFEST_TYPE,
		       "manifest value has the wrong JSON type: %s is %s, must be %s", path,
		       mp_json_kind(v), want);
}

enum mp_err mp_json_get_typed(json_t *root, const char *path, json_type type,
			      const char *want, json_t **out, struct mp_error *err)
{
	enum mp_err rc = mp_json_get(root, path, out, err);
	if (rc)
		return rc;
	if (type == JSON_TRUE ? !json_is_boolean(*out) : json_typeof(*out) != type)
		return mp_json_wrong_type(path, *out, want, err);
	return MP_OK;
}

enum mp_err mp_json_get_object(json_t *root, const char *path, json_t **out,
			       struct mp_error *err)
{
	return mp_json_get_typed(root, path, JSON_OBJECT, "an object", out, err);
}

enum mp_err mp_json_get_string(json_t *root, const char *path, const char **out,
			       struct mp_error *err)
{
	json_t *v;
	enum mp_err rc = mp_json_get_typed(root, path, JSON_STRING, "a string", &v, err);
	if (!rc)
		*out = json_string_value(v);
	return rc;
}

/* A JSON integer that is >= min (and so non-negative when min >= 0). */
enum mp_err mp_json_get_uint(json_t *root, const char *path, uint64_t min, uint64_t *out,
			     struct mp_error *err)
{
	json_t *v;
	enum mp_err rc = mp_json_get_typed(root, path, JSON_INTEGER, "an integer", &v, err);
	if (rc)
		return rc;
	if (json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < min)
		return mp_fail(err, MP_E_MANIFEST_VALUE,
			       "manifest value is out of range: %s is %lld, must be at "
			       "least %llu",
			       path, (long long)json_integer_value(v), (unsigned long long)min);
	*out = (uint64_t)json_integer_value(v);
	return MP_OK;
}

enum mp_err mp_json_get_digest(json_t *root, const char *path, char out[MP_SHA256_HEX],
			       struct mp_error *err)
{
	const char *s;
	enum mp_err rc = mp_json_get_string(root, path, &s, err);
	if (rc)
		return rc;
	if (!mp_is_sha256_hex(s))
		return mp_fail(err, MP_E_MANIFEST_VALUE,
			       "manifest value is out of range: %s must be 64 lowercase hex "
			       "digits",
			       path);
	memcpy(out, s, MP_SHA256_HEX);
	return MP_OK;
}

/*
 * A copy of s with each U+F780..U+F7FF (what mp_manifest_parse_ex() made of
 * a lone \udcXX escape) turned back into the byte 0xXX.
 */
char *mp_json_unescape_bytes(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	char *out = malloc(strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	while (*u) {
		if (byte_code_at(u)) {
			unsigned cp = ((u[0] & 0x0fu) << 12) | ((u[1] & 0x3fu) << 6) | (u[2] & 0x3fu);
			*o++ = (char)(cp & 0xff);
			u += 3;
		} else {
			*o++ = (char)*u++;
		}
	}
	*o = '\0';
	return out;
}

