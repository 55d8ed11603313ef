/* manifest.c - manifest reading, typed access by dotted path, and its checks. */
#include "config.h"

#include "pack/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/jsonstr.h"
#include "base/quant.h"
#include "base/text.h"
#include "pack/digest.h"

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
static const char *json_kind(const json_t *v)
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

/*
 * Walk a dotted path ("expert_pack.roles.up.dtype").  A missing key at any
 * depth is reported with the path up to it; a non-object on the way is a
 * type error at that prefix.
 */
static enum mp_err get(json_t *root, const char *path, json_t **out, struct mp_error *err)
{
	char prefix[256];
	const char *p = path;
	json_t *cur = root;

	for (;;) {
		const char *dot = strchr(p, '.');
		size_t seg = dot ? (size_t)(dot - p) : strlen(p);
		size_t plen = (size_t)(p - path) + seg;
		char key[128];

		if (seg >= sizeof key || plen >= sizeof prefix)
			return mp_fail(err, MP_E_USAGE, "manifest key path too long: %s", path);
		memcpy(key, p, seg);
		key[seg] = '\0';
		memcpy(prefix, path, plen);
		prefix[plen] = '\0';
		cur = json_object_get(cur, key);
		if (!cur)
			return mp_fail(err, MP_E_MANIFEST_MISSING, "manifest key is missing: %s",
				       prefix);
		if (!dot)
			break;
		if (!json_is_object(cur))
			return mp_fail(err, MP_E_MANIFEST_TYPE,
				       "manifest value has the wrong JSON type: %s is %s, must "
				       "be an object",
				       prefix, json_kind(cur));
		p = dot + 1;
	}
	*out = cur;
	return MP_OK;
}

static enum mp_err wrong_type(const char *path, const json_t *v, const char *want,
			      struct mp_error *err)
{
	return mp_fail(err, MP_E_MANIFEST_TYPE,
		       "manifest value has the wrong JSON type: %s is %s, must be %s", path,
		       json_kind(v), want);
}

static enum mp_err get_typed(json_t *root, const char *path, json_type type,
			     const char *want, json_t **out, struct mp_error *err)
{
	enum mp_err rc = get(root, path, out, err);
	if (rc)
		return rc;
	if (type == JSON_TRUE ? !json_is_boolean(*out) : json_typeof(*out) != type)
		return wrong_type(path, *out, want, err);
	return MP_OK;
}

static enum mp_err get_object(json_t *root, const char *path, json_t **out,
			      struct mp_error *err)
{
	return get_typed(root, path, JSON_OBJECT, "an object", out, err);
}

static enum mp_err get_string(json_t *root, const char *path, const char **out,
			      struct mp_error *err)
{
	json_t *v;
	enum mp_err rc = get_typed(root, path, JSON_STRING, "a string", &v, err);
	if (!rc)
		*out = json_string_value(v);
	return rc;
}

/* A JSON integer that is >= min (and so non-negative when min >= 0). */
static enum mp_err get_uint(json_t *root, const char *path, uint64_t min, uint64_t *out,
			    struct mp_error *err)
{
	json_t *v;
	enum mp_err rc = get_typed(root, path, JSON_INTEGER, "an integer", &v, err);
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

static enum mp_err get_digest(json_t *root, const char *path, char out[MP_SHA256_HEX],
			      struct mp_error *err)
{
	const char *s;
	enum mp_err rc = get_string(root, path, &s, err);
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

static enum mp_err check_hard_constraints(json_t *root, struct mp_error *err)
{
	static const struct {
		const char *key;
		json_type type; /* JSON_TRUE, JSON_FALSE or JSON_INTEGER (16) */
	} want[] = {
		{"all_selected_experts_must_execute", JSON_TRUE},
		{"expert_pruning_allowed", JSON_FALSE},
		{"requantization_allowed", JSON_FALSE},
		{"top_k", JSON_INTEGER},
		{"top_k_is_immutable", JSON_TRUE},
	};
	const size_t n = sizeof want / sizeof want[0];
	json_t *hc, *v;
	const char *key;
	enum mp_err rc = get_object(root, "hard_constraints", &hc, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		v = json_object_get(hc, want[i].key);
		if (!v)
			return mp_fail(err, MP_E_HARD_CONSTRAINTS,
				       "hard constraints differ: hard_constraints.%s is missing",
				       want[i].key);
		if (want[i].type == JSON_INTEGER ? !(json_is_integer(v) &&
						     json_integer_value(v) == MP_TOP_K)
						 : json_typeof(v) != want[i].type)
			return mp_fail(err, MP_E_HARD_CONSTRAINTS,
				       "hard constraints differ: hard_constraints.%s must be %s",
				       want[i].key,
				       want[i].type == JSON_INTEGER ? "16"
				       : want[i].type == JSON_TRUE  ? "true"
								    : "false");
	}
	json_object_foreach(hc, key, v) {
		size_t i;
		for (i = 0; i < n && strcmp(key, want[i].key); i++)
			;
		if (i == n)
			return mp_fail(err, MP_E_HARD_CONSTRAINTS,
				       "hard constraints differ: unexpected key "
				       "hard_constraints.%s",
				       key);
	}
	return MP_OK;
}

/* Item i of the array at path, which must be an integer. */
static enum mp_err get_integer_item(json_t *arr, const char *path, size_t i, json_int_t *value,
				    struct mp_error *err)
{
	json_t *v = json_array_get(arr, i);

	if (!json_is_integer(v))
		return mp_fail(err, MP_E_MANIFEST_TYPE,
			       "manifest value has the wrong JSON type: %s[%zu] is %s, must be "
			       "an integer",
			       path, i, json_kind(v));
	*value = json_integer_value(v);
	return MP_OK;
}

static enum mp_err check_active_layers(json_t *root, struct mp_manifest *m,
				       struct mp_error *err)
{
	const char *path = "model.active_moe_layer_ids";
	const size_t count = MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1;
	json_t *arr;
	enum mp_err rc = get_typed(root, path, JSON_ARRAY, "an array", &arr, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_int_t v;

		if ((rc = get_integer_item(arr, path, i, &v, err)))
			return rc;
		if (i >= count || v != (json_int_t)(MP_ACTIVE_FIRST + i))
			return mp_fail(err, MP_E_ACTIVE_LAYERS,
				       "active MoE layer ids must be exactly %d..%d: %s[%zu] is "
				       "%lld",
				       MP_ACTIVE_FIRST, MP_ACTIVE_LAST, path, i, (long long)v);
	}
	if (json_array_size(arr) != count)
		return mp_fail(err, MP_E_ACTIVE_LAYERS,
			       "active MoE layer ids must be exactly %d..%d: %s has %zu "
			       "entries",
			       MP_ACTIVE_FIRST, MP_ACTIVE_LAST, path, json_array_size(arr));
	if (MP_ACTIVE_LAST >= m->num_hidden_layers)
		return mp_fail(err, MP_E_ACTIVE_LAYERS,
			       "active MoE layer ids must be exactly %d..%d: layer %d is not "
			       "below model.num_hidden_layers (%llu)",
			       MP_ACTIVE_FIRST, MP_ACTIVE_LAST, MP_ACTIVE_LAST,
			       (unsigned long long)m->num_hidden_layers);
	m->layer_ids = malloc(count * sizeof *m->layer_ids);
	if (!m->layer_ids)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (size_t i = 0; i < count; i++)
		m->layer_ids[i] = (uint32_t)(MP_ACTIVE_FIRST + i);
	m->layer_count = count;
	return MP_OK;
}

/*
 * A copy of s with each U+F780..U+F7FF (what mp_manifest_parse_ex() made of
 * a lone \udcXX escape) turned back into the byte 0xXX.
 */
static char *unescape_bytes(const char *s)
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

/* Resolve expert_pack.path the way a loader would, relative to the manifest. */
static enum mp_err check_pack_path(json_t *root, const struct mp_manifest_input *in,
				   struct mp_manifest *m, struct mp_error *err)
{
	const char *path;
	char *joined = NULL, *real;
	enum mp_err rc = get_string(root, "expert_pack.path", &path, err);

	if (rc)
		return rc;
	m->pack_path = in->surrogate_escapes ? unescape_bytes(path) : strdup(path);
	if (!m->pack_path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	path = m->pack_path;
	if (path[0] != '/') {
		const char *slash = strrchr(in->manifest_path, '/');
		int dirlen = slash ? (int)(slash - in->manifest_path) : 1;
		const char *dir = slash ? in->manifest_path : ".";
		if (asprintf(&joined, "%.*s/%s", dirlen ? dirlen : 1, dirlen ? dir : "/",
			     path) < 0)
			return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	real = realpath(joined ? joined : path, NULL);
	if (!real) {
		rc = mp_fail(err, MP_E_PACK_PATH,
			     "manifest pack path does not resolve to the pack: "
			     "expert_pack.path \"%s\": %s",
			     path, strerror(errno));
	} else if (strcmp(real, in->pack_real_path) != 0) {
		rc = mp_fail(err, MP_E_PACK_PATH,
			     "manifest pack path does not resolve to the pack: "
			     "expert_pack.path \"%s\" is %s, the pack is %s",
			     path, real, in->pack_real_path);
	}
	free(real);
	free(joined);
	return rc;
}

static enum mp_err check_role_order(json_t *root, struct mp_error *err)
{
	const char *path = "expert_pack.physical_role_order";
	json_t *arr;
	enum mp_err rc = get_typed(root, path, JSON_ARRAY, "an array", &arr, err);

	if (rc)
		return rc;
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const char *s = json_string_value(json_array_get(arr, (size_t)r));
		if (!s || strcmp(s, mp_role_name(r)) != 0)
			goto bad;
	}
	if (json_array_size(arr) == MP_ROLE_COUNT)
		return MP_OK;
bad:
	return mp_fail(err, MP_E_ROLE_ORDER,
		       "physical role order must be [\"up\", \"gate\", \"down\"]: %s differs",
		       path);
}

static enum mp_err check_role_dtype(json_t *root, enum mp_role r, struct mp_role_info *ri,
				    struct mp_error *err)
{
	const struct mp_quant_type *want = mp_quant_by_id(mp_role_dtype[r]);
	const struct mp_quant_type *named;
	char path[64];
	const char *dtype;
	uint64_t id;
	enum mp_err rc;

	snprintf(path, sizeof path, "expert_pack.roles.%s.dtype", mp_role_name(r));
	if ((rc = get_string(root, path, &dtype, err)))
		return rc;
	snprintf(path, sizeof path, "expert_pack.roles.%s.dtype_id", mp_role_name(r));
	if ((rc = get_uint(root, path, 0, &id, err)))
		return rc;
	if (strcmp(dtype, want->name) != 0 || id != (uint64_t)want->id) {
		char shown[24];
		named = mp_quant_by_name(dtype);
		snprintf(shown, sizeof shown, "%.16s", dtype);
		return mp_fail(err, MP_E_ROLE_DTYPE,
			       "%s quant type is unsupported: manifest says %s (%llu)%s, must "
			       "be %s (%d)",
			       mp_role_name(r), shown, (unsigned long long)id,
			       named && (uint64_t)named->id != id ? " (name and id disagree)"
								  : "",
			       want->name, want->id);
	}
	snprintf(ri->dtype, sizeof ri->dtype, "%s", want->name);
	ri->dtype_id = want->id;
	return MP_OK;
}

/*
 * The only shapes the Kimi-K3 runtime's MoE method accepts, row length
 * first: up and gate map hidden 3584 to 3072, down maps 3072 back.
 */
static const uint64_t k3_shape[MP_ROLE_COUNT][2] = {
	[MP_ROLE_UP] = {MP_K3_HIDDEN, MP_K3_INTER},
	[MP_ROLE_GATE] = {MP_K3_HIDDEN, MP_K3_INTER},
	[MP_ROLE_DOWN] = {MP_K3_INTER, MP_K3_HIDDEN},
};

/* The array at path: 1 to MP_MAX_SHAPE positive integers into ri->shape;
 * *weights their product, 0 when it overflows. */
static enum mp_err get_shape(json_t *root, const char *path, struct mp_role_info *ri,
			     uint64_t *weights, struct mp_error *err)
{
	json_t *arr;
	enum mp_err rc;

	if ((rc = get_typed(root, path, JSON_ARRAY, "an array", &arr, err)))
		return rc;
	if (json_array_size(arr) < 1 || json_array_size(arr) > MP_MAX_SHAPE)
		return mp_fail(err, MP_E_MANIFEST_VALUE,
			       "manifest value is out of range: %s has %zu dimensions, must "
			       "have 1 to %d",
			       path, json_array_size(arr), MP_MAX_SHAPE);
	ri->shape_len = (unsigned)json_array_size(arr);
	*weights = 1;
	for (unsigned i = 0; i < ri->shape_len; i++) {
		json_int_t v;

		if ((rc = get_integer_item(arr, path, i, &v, err)))
			return rc;
		if (v <= 0)
			return mp_fail(err, MP_E_MANIFEST_VALUE,
				       "manifest value is out of range: %s[%u] is %lld, must be "
				       "positive",
				       path, i, (long long)v);
		ri->shape[i] = (uint64_t)v;
		if (__builtin_mul_overflow(*weights, ri->shape[i], weights))
			*weights = 0; /* mp_quant_bytes() turns 0 into a mismatch */
	}
	return MP_OK;
}

/* The caller expects Kimi-K3 geometry: role r's shape must be its own. */
static enum mp_err check_k3_shape(const char *path, enum mp_role r,
				  const struct mp_role_info *ri, struct mp_error *err)
{
	char got[160];
	size_t used = 0;

	if (ri->shape_len == 2 && ri->shape[0] == k3_shape[r][0] &&
	    ri->shape[1] == k3_shape[r][1])
		return MP_OK;
	for (unsigned i = 0; i < ri->shape_len && used < sizeof got; i++)
		used += (size_t)snprintf(got + used, sizeof got - used, "%s%llu", i ? ", " : "",
					 (unsigned long long)ri->shape[i]);
	return mp_fail(err, MP_E_RUNTIME_SHAPE,
		       "role shape is not the Kimi-K3 runtime's: %s is [%s], the "
		       "runtime needs [%llu, %llu]",
		       path, got, (unsigned long long)k3_shape[r][0],
		       (unsigned long long)k3_shape[r][1]);
}

/* k3: the caller expects Kimi-K3 geometry, so the shapes must be its own. */
static enum mp_err check_role_shape(json_t *root, enum mp_role r, struct mp_role_info *ri,
				    bool k3, struct mp_error *err)
{
	const struct mp_quant_type *qt = mp_quant_by_id(ri->dtype_id);
	char path[64];
	uint64_t weights = 0;
	enum mp_err rc;

	snprintf(path, sizeof path, "expert_pack.roles.%s.expert_bytes", mp_role_name(r));
	if ((rc = get_uint(root, path, 1, &ri->expert_bytes, err)))
		return rc;
	snprintf(path, sizeof path, "expert_pack.roles.%s.logical_shape", mp_role_name(r));
	if ((rc = get_shape(root, path, ri, &weights, err)))
		return rc;
	/* GGUF ne[] order: ne0, the first number, is the GGML row length. */
	if (ri->shape[0] % qt->block_weights != 0)
		return mp_fail(err, MP_E_ROLE_SHAPE,
			       "role size does not match its logical shape: %s row length "
			       "(first number) %llu is not a multiple of the %s block (%u "
			       "weights)",
			       path, (unsigned long long)ri->shape[0], qt->name,
			       qt->block_weights);
	if (weights == 0 || mp_quant_bytes(qt, weights) != ri->expert_bytes)
		return mp_fail(err, MP_E_ROLE_SHAPE,
			       "role size does not match its logical shape: "
			       "expert_pack.roles.%s.expert_bytes is %llu, %s of %s weights "
			       "take %llu",
			       mp_role_name(r), (unsigned long long)ri->expert_bytes,
			       weights ? "" : "an overflowing count", qt->name,
			       (unsigned long long)mp_quant_bytes(qt, weights));
	return k3 ? check_k3_shape(path, r, ri, err) : MP_OK;
}

/* complete, format and hard_constraints: what the pack claims to be. */
static enum mp_err check_envelope(json_t *root, struct mp_error *err)
{
	json_t *v;
	const char *s;
	enum mp_err rc;

	if ((rc = get_typed(root, "complete", JSON_TRUE, "a boolean", &v, err)))
		return rc;
	if (!json_is_true(v))
		return mp_fail(err, MP_E_INCOMPLETE,
			       "manifest says the pack is not complete: complete is false");

	if ((rc = get_string(root, "format", &s, err)))
		return rc;
	if (strcmp(s, MP_FORMAT) != 0)
		return mp_fail(err, MP_E_FORMAT,
			       "unsupported manifest format: format is \"%.64s\", must be "
			       "\"%s\"",
			       s, MP_FORMAT);
	return check_hard_constraints(root, err);
}

/* A count the caller expects (0: any) against the manifest's key. */
static enum mp_err check_expected(enum mp_err code, const char *what, const char *key,
				  uint64_t have, uint64_t want, struct mp_error *err)
{
	if (!want || want == have)
		return MP_OK;
	return mp_fail(err, code, "%s count differs from the expected one: %s is %llu, "
		       "expected %llu", what, key, (unsigned long long)have,
		       (unsigned long long)want);
}

/* model.*: layer and expert counts, top-k, against what the caller expects. */
static enum mp_err check_model(json_t *root, const struct mp_manifest_input *in,
			       struct mp_manifest *m, struct mp_error *err)
{
	json_t *v;
	enum mp_err rc;

	if ((rc = get_object(root, "model", &v, err)) ||
	    (rc = get_uint(root, "model.num_hidden_layers", 1, &m->num_hidden_layers, err)) ||
	    (rc = get_uint(root, "model.num_experts", 1, &m->num_experts, err)))
		return rc;
	if (m->num_experts > MP_MAX_EXPERTS)
		return mp_fail(err, MP_E_MANIFEST_VALUE,
			       "manifest value is out of range: model.num_experts is %llu, "
			       "must be at most %u",
			       (unsigned long long)m->num_experts, MP_MAX_EXPERTS);
	if ((rc = get_uint(root, "model.num_experts_per_token", 0, &m->top_k, err)))
		return rc;
	if (m->top_k != MP_TOP_K)
		return mp_fail(err, MP_E_TOP_K,
			       "top-k must be 16: model.num_experts_per_token is %llu",
			       (unsigned long long)m->top_k);
	if ((rc = check_expected(MP_E_EXPECT_LAYERS, "layer", "model.num_hidden_layers",
				 m->num_hidden_layers, in->expect_layers, err)))
		return rc;
	return check_expected(MP_E_EXPECT_EXPERTS, "expert", "model.num_experts", m->num_experts,
			      in->expect_experts, err);
}

/*
 * With --config, model.config_sha256 is checked here, where the caller's
 * expectations are; without, last, where the reference loader reads it:
 * mp_manifest_check_recorded().
 */
static enum mp_err check_config_digest(json_t *root, const struct mp_manifest_input *in,
				       struct mp_manifest *m, struct mp_error *err)
{
	enum mp_err rc;

	if (!in->config_sha256)
		return MP_OK;
	if ((rc = get_digest(root, "model.config_sha256", m->config_sha256, err)))
		return rc;
	if (strcmp(in->config_sha256, m->config_sha256) != 0)
		return mp_fail(err, MP_E_CONFIG_DIGEST,
			       "config SHA-256 does not match manifest: computed %s, "
			       "model.config_sha256 %s",
			       in->config_sha256, m->config_sha256);
	return MP_OK;
}

/* The roles' dtypes and shapes, their offsets inside an object, and
 * expert_pack.object_bytes as their sum. */
static enum mp_err check_roles(json_t *root, const struct mp_manifest_input *in,
			       struct mp_manifest *m, struct mp_error *err)
{
	uint64_t sum = 0;
	bool wrapped = false;
	enum mp_err rc;

	if ((rc = check_role_order(root, err)))
		return rc;
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		if ((rc = check_role_dtype(root, r, &m->roles[r], err)))
			return rc;
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		if ((rc = check_role_shape(root, r, &m->roles[r],
					   in->expect_experts == MP_K3_EXPERTS, err)))
			return rc;
		m->roles[r].role_offset = sum;
		/* One Q3_K role alone can reach 2^62.9 bytes: the sum can wrap. */
		if (__builtin_add_overflow(sum, m->roles[r].expert_bytes, &sum))
			wrapped = true;
	}
	if ((rc = get_uint(root, "expert_pack.object_bytes", 0, &m->object_bytes, err)))
		return rc;
	if (wrapped)
		return mp_fail(err, MP_E_OBJECT_BYTES,
			       "object bytes is not the sum of the role sizes: "
			       "expert_pack.object_bytes is %llu, up+gate+down is more than "
			       "2^64-1",
			       (unsigned long long)m->object_bytes);
	if (m->object_bytes != sum)
		return mp_fail(err, MP_E_OBJECT_BYTES,
			       "object bytes is not the sum of the role sizes: "
			       "expert_pack.object_bytes is %llu, up+gate+down is %llu",
			       (unsigned long long)m->object_bytes, (unsigned long long)sum);
	return MP_OK;
}

/* A power of two.  Below a page the pack still works, only slower (no
 * O_DIRECT), so that is a warning, not a failure. */
static enum mp_err check_alignment(json_t *root, struct mp_manifest *m,
				   char warn[][MP_MSG_MAX], unsigned *nwarn,
				   struct mp_error *err)
{
	json_t *v;
	enum mp_err rc;

	if ((rc = get_typed(root, "expert_pack.alignment", JSON_INTEGER, "an integer", &v,
			    err)))
		return rc;
	if (json_integer_value(v) < 1 ||
	    (json_integer_value(v) & (json_integer_value(v) - 1)) != 0)
		return mp_fail(err, MP_E_ALIGNMENT,
			       "alignment must be a power of two: expert_pack.alignment is "
			       "%lld",
			       (long long)json_integer_value(v));
	m->alignment = (uint64_t)json_integer_value(v);
	if (m->alignment < MP_PAGE && *nwarn < MP_MAX_WARNINGS)
		snprintf(warn[(*nwarn)++], MP_MSG_MAX,
			 "expert_pack.alignment is %llu, below the %d-byte page: payloads "
			 "are not page-aligned (no O_DIRECT, slower mmap)",
			 (unsigned long long)m->alignment, MP_PAGE);
	return MP_OK;
}

/* expert_pack.*: path, size, roles, alignment, data start and digests. */
static enum mp_err check_expert_pack(json_t *root, const struct mp_manifest_input *in,
				     struct mp_manifest *m, char warn[][MP_MSG_MAX],
				     unsigned *nwarn, struct mp_error *err)
{
	json_t *v;
	enum mp_err rc;

	if ((rc = get_object(root, "expert_pack", &v, err)) ||
	    (rc = check_pack_path(root, in, m, err)) ||
	    (rc = get_uint(root, "expert_pack.size", 0, &m->size, err)))
		return rc;
	if (m->size != in->pack_size)
		return mp_fail(err, MP_E_PACK_SIZE,
			       "pack size does not match manifest: expert_pack.size is %llu, "
			       "the pack has %llu bytes",
			       (unsigned long long)m->size, (unsigned long long)in->pack_size);
	if ((rc = check_roles(root, in, m, err)) ||
	    (rc = check_alignment(root, m, warn, nwarn, err)) ||
	    (rc = get_uint(root, "expert_pack.data_start", 0, &m->data_start, err)) ||
	    (rc = get_digest(root, "expert_pack.index_sha256", m->index_sha256, err)))
		return rc;
	if (json_object_get(v, "sha256") &&
	    (rc = get_digest(root, "expert_pack.sha256", m->sha256, err)))
		return rc;
	return MP_OK;
}

/* In moepack-pack(5)'s order, which is the reference loader's. */
enum mp_err mp_manifest_check(json_t *root, const struct mp_manifest_input *in,
			      struct mp_manifest *m, char warn[][MP_MSG_MAX],
			      unsigned *nwarn, struct mp_error *err)
{
	enum mp_err rc;

	memset(m, 0, sizeof *m);
	if ((rc = check_envelope(root, err)) ||
	    (rc = check_model(root, in, m, err)) ||
	    (rc = check_config_digest(root, in, m, err)) ||
	    (rc = check_active_layers(root, m, err)) ||
	    (rc = check_expert_pack(root, in, m, warn, nwarn, err)))
		return rc;
	return MP_OK;
}

enum mp_err mp_manifest_check_recorded(json_t *root, struct mp_manifest *m,
				       struct mp_error *err)
{
	enum mp_err rc;

	/* The reference loader records both (a KeyError when absent) and never
	 * recomputes them. */
	if ((rc = get_digest(root, "model.config_sha256", m->config_sha256, err)) ||
	    (rc = get_object(root, "source", &(json_t *){NULL}, err)) ||
	    (rc = get_digest(root, "source.inventory_sha256", m->inventory_sha256, err)))
		return rc;
	return MP_OK;
}

void mp_manifest_free(struct mp_manifest *m)
{
	free(m->layer_ids);
	free(m->pack_path);
	m->layer_ids = NULL;
	m->pack_path = NULL;
}

enum mp_err mp_manifest_with_path(const char *raw, size_t len, const char *new_path,
				  char **out, size_t *out_len, struct mp_error *err)
{
	json_t *root, *ep;
	enum mp_err rc = mp_manifest_parse(raw, len, "manifest", &root, err);

	*out = NULL;
	if (rc)
		return rc;
	ep = json_object_get(root, "expert_pack");
	if (!json_is_object(ep)) {
		json_decref(root);
		return mp_fail(err, MP_E_MANIFEST_TYPE,
			       "manifest value has the wrong JSON type: expert_pack is not an "
			       "object");
	}
	*out = mp_json_dump_with_path(root, ep, "path", new_path,
				      JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!*out)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	*out_len = strlen(*out);
	return MP_OK;
}
