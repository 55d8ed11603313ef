/* manifest.c - the Kimi manifest's checks, on the JSON that mjson.c reads. */
#include "config.h"

#include "pack/kimi/manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonstr.h"
#include "base/quant.h"


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
	enum mp_err rc = mp_json_get_object(root, "hard_constraints", &hc, err);

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
			       path, i, mp_json_kind(v));
	*value = json_integer_value(v);
	return MP_OK;
}

static enum mp_err check_active_layers(json_t *root, struct mp_manifest *m,
				       struct mp_error *err)
{
	const char *path = "model.active_moe_layer_ids";
	const size_t count = MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1;
	json_t *arr;
	enum mp_err rc = mp_json_get_typed(root, path, JSON_ARRAY, "an array", &arr, err);

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

/* Resolve expert_pack.path the way a loader would, relative to the manifest. */
static enum mp_err check_pack_path(json_t *root, const struct mp_manifest_input *in,
				   struct mp_manifest *m, struct mp_error *err)
{
	const char *path;
	char *joined = NULL, *real;
	enum mp_err rc = mp_json_get_string(root, "expert_pack.path", &path, err);

	if (rc)
		return rc;
	m->pack_path = in->surrogate_escapes ? mp_json_unescape_bytes(path) : strdup(path);
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
	/* a pack copied or moved with its manifest: say how to point it back */
	real = realpath(joined ? joined : path, NULL);
	if (!real) {
		rc = mp_fail(err, MP_E_PACK_PATH,
			     "manifest pack path does not resolve to the pack: "
			     "expert_pack.path \"%s\": %s (a pack that moved: 'moepack "
			     "relocate' rewrites it)",
			     path, strerror(errno));
	} else if (strcmp(real, in->pack_real_path) != 0) {
		rc = mp_fail(err, MP_E_PACK_PATH,
			     "manifest pack path does not resolve to the pack: "
			     "expert_pack.path \"%s\" is %s, the pack is %s (a pack that "
			     "moved: 'moepack relocate' rewrites it)",
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
	enum mp_err rc = mp_json_get_typed(root, path, JSON_ARRAY, "an array", &arr, err);

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
	if ((rc = mp_json_get_string(root, path, &dtype, err)))
		return rc;
	snprintf(path, sizeof path, "expert_pack.roles.%s.dtype_id", mp_role_name(r));
	if ((rc = mp_json_get_uint(root, path, 0, &id, err)))
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

	if ((rc = mp_json_get_typed(root, path, JSON_ARRAY, "an array", &arr, err)))
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
	if ((rc = mp_json_get_uint(root, path, 1, &ri->expert_bytes, err)))
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
	if (weights == 0 || mp_quant_bytes(qt, weights) == 0)
		return mp_fail(err, MP_E_ROLE_SHAPE,
			       "role size does not match its logical shape: "
			       "expert_pack.roles.%s.expert_bytes is %llu, the %s size of %s "
			       "does not fit in 64 bits",
			       mp_role_name(r), (unsigned long long)ri->expert_bytes, qt->name,
			       path);
	if (mp_quant_bytes(qt, weights) != ri->expert_bytes)
		return mp_fail(err, MP_E_ROLE_SHAPE,
			       "role size does not match its logical shape: "
			       "expert_pack.roles.%s.expert_bytes is %llu, the %llu %s weights "
			       "of %s take %llu",
			       mp_role_name(r), (unsigned long long)ri->expert_bytes,
			       (unsigned long long)weights, qt->name, path,
			       (unsigned long long)mp_quant_bytes(qt, weights));
	return k3 ? check_k3_shape(path, r, ri, err) : MP_OK;
}

/* complete, format and hard_constraints: what the pack claims to be. */
static enum mp_err check_envelope(json_t *root, struct mp_error *err)
{
	json_t *v;
	const char *s;
	enum mp_err rc;

	if ((rc = mp_json_get_typed(root, "complete", JSON_TRUE, "a boolean", &v, err)))
		return rc;
	if (!json_is_true(v))
		return mp_fail(err, MP_E_INCOMPLETE,
			       "manifest says the pack is not complete: complete is false");

	if ((rc = mp_json_get_string(root, "format", &s, err)))
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

	if ((rc = mp_json_get_object(root, "model", &v, err)) ||
	    (rc = mp_json_get_uint(root, "model.num_hidden_layers", 1, &m->num_hidden_layers,
				   err)) ||
	    (rc = mp_json_get_uint(root, "model.num_experts", 1, &m->num_experts, err)))
		return rc;
	if (m->num_experts > MP_MAX_EXPERTS)
		return mp_fail(err, MP_E_MANIFEST_VALUE,
			       "manifest value is out of range: model.num_experts is %llu, "
			       "must be at most %u",
			       (unsigned long long)m->num_experts, MP_MAX_EXPERTS);
	if ((rc = mp_json_get_uint(root, "model.num_experts_per_token", 0, &m->top_k, err)))
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
	if ((rc = mp_json_get_digest(root, "model.config_sha256", m->config_sha256, err)))
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
	if ((rc = mp_json_get_uint(root, "expert_pack.object_bytes", 0, &m->object_bytes, err)))
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

	if ((rc = mp_json_get_typed(root, "expert_pack.alignment", JSON_INTEGER, "an integer",
				    &v, err)))
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

	if ((rc = mp_json_get_object(root, "expert_pack", &v, err)) ||
	    (rc = check_pack_path(root, in, m, err)) ||
	    (rc = mp_json_get_uint(root, "expert_pack.size", 0, &m->size, err)))
		return rc;
	if (m->size != in->pack_size)
		return mp_fail(err, MP_E_PACK_SIZE,
			       "pack size does not match manifest: expert_pack.size is %llu, "
			       "the pack has %llu bytes",
			       (unsigned long long)m->size, (unsigned long long)in->pack_size);
	if ((rc = check_roles(root, in, m, err)) ||
	    (rc = check_alignment(root, m, warn, nwarn, err)) ||
	    (rc = mp_json_get_uint(root, "expert_pack.data_start", 0, &m->data_start, err)) ||
	    (rc = mp_json_get_digest(root, "expert_pack.index_sha256", m->index_sha256, err)))
		return rc;
	/* null is no digest, as absent is: the reference reads it with .get() */
	if (json_object_get(v, "sha256") && !json_is_null(json_object_get(v, "sha256")) &&
	    (rc = mp_json_get_digest(root, "expert_pack.sha256", m->sha256, err)))
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
	if ((rc = mp_json_get_digest(root, "model.config_sha256", m->config_sha256, err)) ||
	    (rc = mp_json_get_object(root, "source", &(json_t *){NULL}, err)) ||
	    (rc = mp_json_get_digest(root, "source.inventory_sha256", m->inventory_sha256, err)))
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
