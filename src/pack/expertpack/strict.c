/*
 * epstrict.c - the stricter checks of the manifest, after every check of
 * the reference runtime: what SGLang's offline validator checks without the
 * source file (format, pack_path, pack_size, the index digest, the header
 * against the manifest, the tensors and their coverage), in its order, and
 * moepack's own (top-k in range, pack_sha256 well-formed).  The entries'
 * own checks follow in epentry.c.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack/expertpack/check.h"
#include "pack/mjson.h"

static enum mp_err check_format(const struct mp_epcheck *c, struct mp_error *err)
{
	const char *s;
	enum mp_err rc = mp_json_get_string(c->root, "format", &s, err);

	if (rc)
		return rc;
	if (strcmp(s, MP_EP_FORMAT) != 0)
		return mp_fail(err, MP_E_FORMAT,
			       "unsupported manifest format: format is \"%.64s\", must be \"%s\"",
			       s, MP_EP_FORMAT);
	return MP_OK;
}

/* pack_path, relative to the manifest's directory (the offline validator
 * takes the current directory), must be the pack once resolved. */
static enum mp_err check_pack_path(const struct mp_epcheck *c, struct mp_error *err)
{
	const char *given, *mp = c->ep->file.manifest_path, *slash = strrchr(mp, '/');
	char *path, *joined = NULL, *real = NULL;
	enum mp_err rc = mp_json_get_string(c->root, "pack_path", &given, err);

	if (rc)
		return rc;
	path = c->surrogates ? mp_json_unescape_bytes(given) : strdup(given);
	if (!path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	/* "DIR/path"; "./path" for a manifest named without a directory */
	if (path[0] != '/' && asprintf(&joined, "%.*s/%s", slash ? (int)(slash - mp) : 1,
				       slash ? mp : ".", path) < 0) {
		free(path);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	if (!(real = realpath(joined ? joined : path, NULL)))
		rc = mp_fail(err, MP_E_PACK_PATH,
			     "manifest pack path does not resolve to the pack: pack_path \"%s\": %s",
			     path, strerror(errno));
	else if (strcmp(real, c->ep->file.real_path) != 0)
		rc = mp_fail(err, MP_E_PACK_PATH,
			     "manifest pack path does not resolve to the pack: pack_path \"%s\" "
			     "is %s, the pack is %s",
			     path, real, c->ep->file.real_path);
	free(real);
	free(joined);
	free(path);
	return rc;
}

static enum mp_err check_sizes_and_index(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_ep *ep = c->ep;
	char computed[MP_SHA256_HEX];
	uint64_t size;
	enum mp_err rc;

	if ((rc = mp_json_get_uint(c->root, "pack_size", 0, &size, err)))
		return rc;
	if (size != ep->file.size)
		return mp_fail(err, MP_E_PACK_SIZE,
			       "pack size does not match manifest: pack_size is %llu, the pack "
			       "has %llu bytes",
			       (unsigned long long)size, (unsigned long long)ep->file.size);
	if ((rc = mp_json_get_digest(c->root, "index_sha256", ep->index_sha256, err)) ||
	    (rc = mp_epcheck_digest_wait(c, err)))
		return rc;
	mp_sha256_hex(ep->index_digest, computed);
	if (strcmp(computed, ep->index_sha256) != 0)
		return mp_fail(err, MP_E_INDEX_DIGEST,
			       "index SHA-256 does not match manifest: computed %s, index_sha256 %s",
			       computed, ep->index_sha256);
	return MP_OK;
}

/* The header's digests and counts against the manifest's, in the offline
 * validator's order. */
static enum mp_err check_header_digests(const struct mp_epcheck *c, struct mp_error *err)
{
	const struct mp_ep_header *h = &c->ep->header;
	static const char *const key[3] = {"model.model_identity_sha256", "source.sha256",
					   "model.config_sha256"};
	static const char *const field[3] = {"model_identity_sha256", "source_blob_sha256",
					     "config_sha256"};
	const unsigned char *have[3] = {h->model_identity_sha256, h->source_blob_sha256,
					h->config_sha256};

	for (int i = 0; i < 3; i++) {
		char want[MP_SHA256_HEX], hex[MP_SHA256_HEX];
		enum mp_err rc = mp_json_get_digest(c->root, key[i], want, err);

		if (rc)
			return rc;
		mp_sha256_hex(have[i], hex);
		if (strcmp(hex, want) != 0)
			return mp_fail(err, MP_E_EP_HEADER_MANIFEST,
				       "pack header does not match manifest: header %s is %s, %s "
				       "is %s",
				       field[i], hex, key[i], want);
	}
	return MP_OK;
}

static enum mp_err check_header_counts(const struct mp_epcheck *c, struct mp_error *err)
{
	const struct mp_ep *ep = c->ep;
	static const char *const key[6] = {"model.num_layers", "model.num_routed_experts",
					   "model.top_k", "index_count", "data_start",
					   "alignment"};
	static const char *const field[6] = {"num_layers", "num_experts", "top_k",
					     "index_count", "data_start", "alignment"};
	const uint64_t have[6] = {ep->num_layers, ep->num_experts,  ep->top_k,
				  ep->index_count, ep->data_start, ep->alignment};

	for (int i = 0; i < 6; i++) {
		uint64_t want;
		enum mp_err rc = mp_json_get_uint(c->root, key[i], 0, &want, err);

		if (rc)
			return rc;
		if (want != have[i])
			return mp_fail(err, MP_E_EP_HEADER_MANIFEST,
				       "pack header does not match manifest: header %s is %llu, %s "
				       "is %llu",
				       field[i], (unsigned long long)have[i], key[i],
				       (unsigned long long)want);
	}
	return MP_OK;
}

/* Ours: top-k a router can use, and pack_sha256 (when there and not null)
 * a digest. */
static enum mp_err check_ours(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_ep *ep = c->ep;

	if (ep->top_k < 1 || ep->top_k > ep->num_experts)
		return mp_fail(err, MP_E_EP_TOP_K,
			       "top-k is not between 1 and the expert count: header top_k is %llu, "
			       "num_experts %llu",
			       (unsigned long long)ep->top_k, (unsigned long long)ep->num_experts);
	if (mp_epcheck_has_pack_sha256(c))
		return mp_json_get_digest(c->root, "pack_sha256", ep->pack_sha256, err);
	return MP_OK;
}

/* tensors[i]: name and category; a routed one's source range and digest. */
static enum mp_err load_tensor(const struct mp_epcheck *c, size_t i, struct mp_eptensor *t,
			       struct mp_error *err)
{
	char path[64], hex[MP_SHA256_HEX];
	const char *category;
	enum mp_err rc;

#define AT(key) (snprintf(path, sizeof path, "tensors[%zu].%s", i, key), path)
	if ((rc = mp_json_get_string(c->root, AT("name"), &t->name, err)) ||
	    (rc = mp_json_get_string(c->root, AT("category"), &category, err)))
		return rc;
	t->routed = strcmp(category, "routed_expert") == 0;
	t->non_routed = strcmp(category, "non_routed") == 0;
	if (!t->routed)
		return MP_OK;
	if ((rc = mp_json_get_uint(c->root, AT("source_offset"), 0, &t->offset, err)) ||
	    (rc = mp_json_get_uint(c->root, AT("source_nbytes"), 0, &t->nbytes, err)) ||
	    (rc = mp_json_get_digest(c->root, AT("source_payload_sha256"), hex, err)))
		return rc;
#undef AT
	for (int k = 0; k < 32; k++)
		sscanf(hex + 2 * k, "%2hhx", &t->sha256[k]);
	return MP_OK;
}

/* Each name once, into by_name. */
static enum mp_err index_name(struct mp_eptensors *t, size_t i, struct mp_error *err)
{
	json_t *seen = json_object_get(t->by_name, t->t[i].name);

	if (seen)
		return mp_fail(err, MP_E_EP_TENSORS,
			       "manifest tensors do not match its coverage: tensors[%zu].name "
			       "\"%s\" is also tensors[%lld]'s",
			       i, t->t[i].name, (long long)json_integer_value(seen));
	if (json_object_set_new(t->by_name, t->t[i].name, json_integer((json_int_t)i)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	return MP_OK;
}

/* The canonical name of each (layer, role), looked up once. */
static enum mp_err index_canonical(const struct mp_epcheck *c, struct mp_eptensors *t,
				   struct mp_error *err)
{
	uint64_t n = c->ep->num_layers * MP_EP_ROLES;

	t->canon = malloc((size_t)n * sizeof *t->canon);
	t->canon_name = malloc((size_t)n * sizeof *t->canon_name);
	if (!t->canon || !t->canon_name)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (uint64_t k = 0; k < n; k++) {
		char *name = t->canon_name[k];
		json_t *v;

		mp_ep_tensor_name(name, MP_EP_CANON_LEN, (unsigned)(k / MP_EP_ROLES),
				  (unsigned)(k % MP_EP_ROLES));
		v = json_object_get(t->by_name, name);
		t->canon[k] = v ? (uint64_t)json_integer_value(v) : MP_EP_NONE;
	}
	return MP_OK;
}

static enum mp_err count_mismatch(const char *what, const char *key, uint64_t have,
				  uint64_t want, struct mp_error *err)
{
	return mp_fail(err, MP_E_EP_TENSORS,
		       "manifest tensors do not match its coverage: tensors has %llu %s, %s is "
		       "%llu",
		       (unsigned long long)have, what, key, (unsigned long long)want);
}

/* The tensors, their counts by category against coverage, a name map. */
static enum mp_err load_tensors(const struct mp_epcheck *c, struct mp_eptensors *t,
				struct mp_error *err)
{
	uint64_t routed = 0, other = 0, want;
	json_t *arr;
	enum mp_err rc = mp_json_get_typed(c->root, "tensors", JSON_ARRAY, "an array", &arr, err);

	if (rc)
		return rc;
	t->n = json_array_size(arr);
	t->t = calloc(t->n + 1, sizeof *t->t);
	if (!t->t || !(t->by_name = json_object()))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (size_t i = 0; i < t->n; i++) {
		if ((rc = load_tensor(c, i, &t->t[i], err)))
			return rc;
		routed += t->t[i].routed;
		other += t->t[i].non_routed;
	}
	if ((rc = mp_json_get_uint(c->root, "coverage.non_routed_tensor_count", 0, &want, err)))
		return rc;
	if (want != other)
		return count_mismatch("non_routed", "coverage.non_routed_tensor_count", other, want,
				      err);
	if ((rc = mp_json_get_uint(c->root, "coverage.routed_tensor_count", 0, &want, err)))
		return rc;
	if (want != routed)
		return count_mismatch("routed_expert", "coverage.routed_tensor_count", routed, want,
				      err);
	for (size_t i = 0; i < t->n; i++)
		if ((rc = index_name(t, i, err)))
			return rc;
	return index_canonical(c, t, err);
}

enum mp_err mp_epcheck_strict(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_eptensors t = {0};
	enum mp_err rc;

	if (!(rc = check_format(c, err)) && !(rc = check_pack_path(c, err)) &&
	    !(rc = check_sizes_and_index(c, err)) && !(rc = check_header_digests(c, err)) &&
	    !(rc = check_header_counts(c, err)) && !(rc = check_ours(c, err)) &&
	    !(rc = load_tensors(c, &t, err)))
		rc = mp_epcheck_strict_entries(c, &t, err);
	free(t.t);
	free(t.canon);
	free(t.canon_name);
	json_decref(t.by_name);
	return rc;
}
