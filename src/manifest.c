/* manifest.c - manifest reading, typed access by dotted path, and its checks. */
#include "config.h"

#include "manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "quant.h"

enum mp_err mp_manifest_read(const char *path, char **raw, size_t *len,
			     struct mp_error *err)
{
	struct stat st;
	char *buf;
	size_t done = 0;
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
	while (done < (size_t)st.st_size) {
		ssize_t got = read(fd, buf + done, (size_t)st.st_size - done);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			int e = got < 0 ? errno : EIO;
			free(buf);
			close(fd);
			return mp_fail(err, MP_E_MANIFEST_IO, "cannot read manifest %s: %s",
				       path, strerror(e));
		}
		done += (size_t)got;
	}
	close(fd);
	buf[done] = '\0';
	*raw = buf;
	*len = done;
	return MP_OK;
}

enum mp_err mp_manifest_parse(const char *raw, size_t len, const char *path,
			      json_t **root, struct mp_error *err)
{
	json_error_t je;
	*root = json_loadb(raw, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
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
	if (strlen(s) != MP_SHA256_HEX - 1 || strspn(s, "0123456789abcdef") != MP_SHA256_HEX - 1)
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
		json_t *v = json_array_get(arr, i);
		if (!json_is_integer(v))
			return mp_fail(err, MP_E_MANIFEST_TYPE,
				       "manifest value has the wrong JSON type: %s[%zu] is %s, "
				       "must be an integer",
				       path, i, json_kind(v));
		if (i >= count || json_integer_value(v) != (json_int_t)(MP_ACTIVE_FIRST + i))
			return mp_fail(err, MP_E_ACTIVE_LAYERS,
				       "active MoE layer ids must be exactly %d..%d: %s[%zu] is "
				       "%lld",
				       MP_ACTIVE_FIRST, MP_ACTIVE_LAST, path, i,
				       (long long)json_integer_value(v));
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

/* Resolve expert_pack.path the way a loader would, relative to the manifest. */
static enum mp_err check_pack_path(json_t *root, const struct mp_manifest_input *in,
				   struct mp_manifest *m, struct mp_error *err)
{
	const char *path;
	char *joined = NULL, *real;
	enum mp_err rc = get_string(root, "expert_pack.path", &path, err);

	if (rc)
		return rc;
	m->pack_path = strdup(path);
	if (!m->pack_path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
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

static const int role_dtype_id[MP_ROLE_COUNT] = {MP_GGML_Q2_K, MP_GGML_Q2_K, MP_GGML_Q3_K};

static enum mp_err check_role_dtype(json_t *root, enum mp_role r, struct mp_role_info *ri,
				    struct mp_error *err)
{
	const struct mp_quant_type *want = mp_quant_by_id(role_dtype_id[r]);
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

/* k3: the caller expects Kimi-K3 geometry, so the shapes must be its own. */
static enum mp_err check_role_shape(json_t *root, enum mp_role r, struct mp_role_info *ri,
				    bool k3, struct mp_error *err)
{
	const struct mp_quant_type *qt = mp_quant_by_id(ri->dtype_id);
	char path[64];
	json_t *arr;
	uint64_t weights = 1;
	enum mp_err rc;

	snprintf(path, sizeof path, "expert_pack.roles.%s.expert_bytes", mp_role_name(r));
	if ((rc = get_uint(root, path, 1, &ri->expert_bytes, err)))
		return rc;
	snprintf(path, sizeof path, "expert_pack.roles.%s.logical_shape", mp_role_name(r));
	if ((rc = get_typed(root, path, JSON_ARRAY, "an array", &arr, err)))
		return rc;
	if (json_array_size(arr) < 1 || json_array_size(arr) > MP_MAX_SHAPE)
		return mp_fail(err, MP_E_MANIFEST_VALUE,
			       "manifest value is out of range: %s has %zu dimensions, must "
			       "have 1 to %d",
			       path, json_array_size(arr), MP_MAX_SHAPE);
	ri->shape_len = (unsigned)json_array_size(arr);
	for (unsigned i = 0; i < ri->shape_len; i++) {
		json_t *v = json_array_get(arr, i);
		if (!json_is_integer(v))
			return mp_fail(err, MP_E_MANIFEST_TYPE,
				       "manifest value has the wrong JSON type: %s[%u] is %s, "
				       "must be an integer",
				       path, i, json_kind(v));
		if (json_integer_value(v) <= 0)
			return mp_fail(err, MP_E_MANIFEST_VALUE,
				       "manifest value is out of range: %s[%u] is %lld, must be "
				       "positive",
				       path, i, (long long)json_integer_value(v));
		ri->shape[i] = (uint64_t)json_integer_value(v);
		if (__builtin_mul_overflow(weights, ri->shape[i], &weights))
			weights = 0; /* mp_quant_bytes() turns 0 into a mismatch */
	}
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
	if (k3 && (ri->shape_len != 2 || ri->shape[0] != k3_shape[r][0] ||
		   ri->shape[1] != k3_shape[r][1])) {
		char got[160];
		size_t used = 0;

		for (unsigned i = 0; i < ri->shape_len && used < sizeof got; i++)
			used += (size_t)snprintf(got + used, sizeof got - used, "%s%llu",
						 i ? ", " : "",
						 (unsigned long long)ri->shape[i]);
		return mp_fail(err, MP_E_RUNTIME_SHAPE,
			       "role shape is not the Kimi-K3 runtime's: %s is [%s], the "
			       "runtime needs [%llu, %llu]",
			       path, got, (unsigned long long)k3_shape[r][0],
			       (unsigned long long)k3_shape[r][1]);
	}
	return MP_OK;
}

enum mp_err mp_manifest_check(json_t *root, const struct mp_manifest_input *in,
			      struct mp_manifest *m, char warn[][MP_MSG_MAX],
			      unsigned *nwarn, struct mp_error *err)
{
	json_t *v;
	const char *s;
	uint64_t sum = 0;
	enum mp_err rc;

	memset(m, 0, sizeof *m);

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

	if ((rc = check_hard_constraints(root, err)))
		return rc;

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
	if (in->expect_layers && in->expect_layers != m->num_hidden_layers)
		return mp_fail(err, MP_E_EXPECT_LAYERS,
			       "layer count differs from the expected one: "
			       "model.num_hidden_layers is %llu, expected %llu",
			       (unsigned long long)m->num_hidden_layers,
			       (unsigned long long)in->expect_layers);
	if (in->expect_experts && in->expect_experts != m->num_experts)
		return mp_fail(err, MP_E_EXPECT_EXPERTS,
			       "expert count differs from the expected one: model.num_experts "
			       "is %llu, expected %llu",
			       (unsigned long long)m->num_experts,
			       (unsigned long long)in->expect_experts);
	if (in->config_sha256) {
		if ((rc = get_digest(root, "model.config_sha256", m->config_sha256, err)))
			return rc;
		if (strcmp(in->config_sha256, m->config_sha256) != 0)
			return mp_fail(err, MP_E_CONFIG_DIGEST,
				       "config SHA-256 does not match manifest: computed %s, "
				       "model.config_sha256 %s",
				       in->config_sha256, m->config_sha256);
	} else if (json_object_get(json_object_get(root, "model"), "config_sha256") &&
		   (rc = get_string(root, "model.config_sha256", &s, err)) == MP_OK) {
		snprintf(m->config_sha256, sizeof m->config_sha256, "%s", s);
	} else if (rc) {
		return rc;
	}

	if ((rc = check_active_layers(root, m, err)))
		return rc;

	if ((rc = get_object(root, "expert_pack", &v, err)) ||
	    (rc = check_pack_path(root, in, m, err)) ||
	    (rc = get_uint(root, "expert_pack.size", 0, &m->size, err)))
		return rc;
	if (m->size != in->pack_size)
		return mp_fail(err, MP_E_PACK_SIZE,
			       "pack size does not match manifest: expert_pack.size is %llu, "
			       "the pack has %llu bytes",
			       (unsigned long long)m->size, (unsigned long long)in->pack_size);

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
		sum += m->roles[r].expert_bytes; /* each is < 2^60: no overflow */
	}
	if ((rc = get_uint(root, "expert_pack.object_bytes", 0, &m->object_bytes, err)))
		return rc;
	if (m->object_bytes != sum)
		return mp_fail(err, MP_E_OBJECT_BYTES,
			       "object bytes is not the sum of the role sizes: "
			       "expert_pack.object_bytes is %llu, up+gate+down is %llu",
			       (unsigned long long)m->object_bytes, (unsigned long long)sum);

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

	if ((rc = get_uint(root, "expert_pack.data_start", 0, &m->data_start, err)) ||
	    (rc = get_digest(root, "expert_pack.index_sha256", m->index_sha256, err)))
		return rc;
	if (json_object_get(json_object_get(root, "expert_pack"), "sha256") &&
	    (rc = get_digest(root, "expert_pack.sha256", m->sha256, err)))
		return rc;
	if ((v = json_object_get(root, "source")) && json_object_get(v, "inventory_sha256") &&
	    (rc = get_string(root, "source.inventory_sha256", &s, err)) == MP_OK)
		snprintf(m->inventory_sha256, sizeof m->inventory_sha256, "%s", s);
	return rc;
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
	if (!json_is_object(ep) || json_object_set_new(ep, "path", json_string(new_path))) {
		json_decref(root);
		return mp_fail(err, MP_E_MANIFEST_TYPE,
			       "manifest value has the wrong JSON type: expert_pack is not an "
			       "object");
	}
	*out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!*out)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	*out_len = strlen(*out);
	/* End with a newline like the manifests the tools write. */
	char *grown = realloc(*out, *out_len + 2);
	if (!grown) {
		free(*out);
		*out = NULL;
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	*out = grown;
	(*out)[(*out_len)++] = '\n';
	(*out)[*out_len] = '\0';
	return MP_OK;
}
