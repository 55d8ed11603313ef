/* epplan.c - a DeepSeek-V4-Flash GGUF and config.json checked as SGLang's
 * expert-pack builder checks them, and the pack's layout. */
#include "config.h"

#include "writer/expertpack/plan.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "base/quant.h"

#define CONFIG_MAX (16u << 20)

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- config.json ------------------------------------------------------------ */

static enum mp_err config_key(const json_t *root, const char *key,
			      uint64_t max, uint64_t *out, struct mp_error *err)
{
	json_t *v = json_object_get(root, key);

	if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return mp_fail(err, MP_E_CONFIG_MISMATCH,
			       "%s: %s must be an integer from 1 to %llu (%s)",
			       mp_err_summary(MP_E_CONFIG_MISMATCH), key,
			       (unsigned long long)max, !v ? "it is missing" : "it is not");
	*out = (uint64_t)json_integer_value(v);
	return MP_OK;
}

static enum mp_err read_whole(const char *path, char **buf, size_t *len, struct mp_error *err)
{
	struct stat st;
	int fd;
	enum mp_err rc = mp_open_regular(path, "config file", MP_E_CONFIG_IO, &fd, &st, err);

	if (rc)
		return rc;
	if ((uint64_t)st.st_size > CONFIG_MAX) {
		close(fd);
		return mp_fail(err, MP_E_CONFIG_IO, "%s %s: larger than %u bytes",
			       mp_err_summary(MP_E_CONFIG_IO), path, CONFIG_MAX);
	}
	*len = (size_t)st.st_size;
	if (!(*buf = malloc(*len + 1))) {
		close(fd);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	rc = mp_pread_full(fd, *buf, *len, 0, "config file", path, MP_E_CONFIG_IO, err);
	close(fd);
	(*buf)[*len] = '\0';
	return rc;
}

enum mp_err mp_epw_plan_read_config(struct mp_epw_plan *p, const char *path,
				     struct mp_error *err)
{
	char *text = NULL;
	size_t len = 0;
	json_error_t jerr;
	json_t *root = NULL;
	enum mp_err rc = read_whole(path, &text, &len, err);

	if (!rc) {
		mp_sha256_buf(text, len, p->config_sha256);
		root = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
		if (!json_is_object(root))
			rc = mp_fail(err, MP_E_CONFIG_MISMATCH, "%s: not a JSON object (%s)",
				     mp_err_summary(MP_E_CONFIG_MISMATCH),
				     root ? "another value" : jerr.text);
	}
	if (!rc)
		rc = config_key(root, "num_hidden_layers", MP_EPW_MAX_LAYERS, &p->layers, err);
	if (!rc)
		rc = config_key(root, "n_routed_experts", MP_EPW_MAX_EXPERTS, &p->experts, err);
	if (!rc)
		rc = config_key(root, "num_experts_per_tok", UINT32_MAX, &p->top_k, err);
	p->have_config = !rc;
	json_decref(root);
	free(text);
	return rc;
}

/* ---- the GGUF's tensors ------------------------------------------------------ */

struct collect {
	struct mp_epw_plan *p;
	size_t cap;
};

static enum mp_err collect_tensor(const struct mp_gguf_tensor *t, void *ctx,
				  struct mp_error *err)
{
	struct collect *c = ctx;
	struct mp_epw_plan *p = c->p;
	struct mp_epw_tensor *e;

	if (p->ntensors == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		void *n = realloc(p->tensors, cap * sizeof *p->tensors);

		if (!n)
			return mp_fail(err, MP_E_NOMEM, "out of memory");
		p->tensors = n;
		c->cap = cap;
	}
	e = &p->tensors[p->ntensors++];
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "%s", t->name);
	e->type = t->type;
	e->n_dims = t->n_dims;
	memcpy(e->ne, t->dims, sizeof e->ne);
	e->offset = t->offset; /* relative until the data start is known */
	e->nbytes = t->nbytes;
	return MP_OK;
}

static int tensor_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mp_epw_tensor *)a)->name,
		      ((const struct mp_epw_tensor *)b)->name);
}

static enum mp_err read_tensors(struct mp_epw_plan *p, const char *path, struct mp_error *err)
{
	struct mp_gguf_header h;
	struct collect c = {.p = p};
	struct stat st;
	int fd;
	enum mp_err rc = mp_open_regular(path, "GGUF file", MP_E_GGUF_IO, &fd, &st, err);

	if (rc)
		return rc;
	rc = mp_gguf_read(fd, path, &h, collect_tensor, &c, err);
	close(fd);
	if (rc)
		return rc;
	p->gguf_size = (uint64_t)st.st_size;
	p->gguf_data_offset = h.data_start;
	for (size_t i = 0; i < p->ntensors; i++)
		p->tensors[i].offset += h.data_start; /* the reader kept it in the file */
	qsort(p->tensors, p->ntensors, sizeof *p->tensors, tensor_cmp);
	return MP_OK;
}

/* (layer, role) of a routed tensor name in its one canonical spelling. */
static bool routed_name(const char *name, uint64_t *layer, unsigned *role)
{
	char canon[MP_GGUF_NAME_MAX + 1];
	unsigned long long l;

	if (strncmp(name, "blk.", 4) != 0 || name[4] < '0' || name[4] > '9' ||
	    !strstr(name, "_exps.weight"))
		return false;
	l = strtoull(name + 4, NULL, 10);
	if (l > MP_EPW_MAX_LAYERS)
		return false;
	for (unsigned r = 0; r < MP_EP_ROLES; r++) {
		mp_ep_tensor_name(canon, sizeof canon, (unsigned)l, r);
		if (strcmp(canon, name) == 0) {
			*layer = l;
			*role = r;
			return true;
		}
	}
	return false;
}

/* ---- coverage ---------------------------------------------------------------- */

/* Append "'NAME'" to a Python-style list in buf, or "..." once it is full. */
static void list_add(char *buf, size_t len, const char *name)
{
	size_t at = strlen(buf);

	if (at + strlen(name) + 12 >= len) {
		if (at + 5 < len && (at < 4 || strcmp(buf + at - 3, "...") != 0))
			snprintf(buf + at, len - at, "%s...", buf[1] ? ", " : "");
		return;
	}
	snprintf(buf + at, len - at, "%s'%s'", buf[1] ? ", " : "", name);
}

/* Mark tensors routed into p->routed; the extra ones (layer >= L) into extra. */
static void match_routed(struct mp_epw_plan *p, char *extra, size_t len)
{
	for (size_t i = 0; i < p->ntensors; i++) {
		uint64_t layer;
		unsigned role;

		if (!routed_name(p->tensors[i].name, &layer, &role))
			continue;
		if (layer >= p->layers) {
			list_add(extra, len, p->tensors[i].name);
			continue;
		}
		p->tensors[i].routed = true;
		p->tensors[i].layer = layer;
		p->tensors[i].role = role;
		p->routed[layer * MP_EP_ROLES + role] = i;
	}
}

/* Without a config: layers up to the highest routed block, experts of
 * blk.0's gate (its shape is checked below like any other). */
static void infer_geometry(struct mp_epw_plan *p)
{
	for (size_t i = 0; i < p->ntensors; i++) {
		uint64_t layer;
		unsigned role;

		if (routed_name(p->tensors[i].name, &layer, &role) && layer + 1 > p->layers)
			p->layers = layer + 1;
		if (strcmp(p->tensors[i].name, "blk.0.ffn_gate_exps.weight") == 0 &&
		    p->tensors[i].n_dims == 3)
			p->experts = p->tensors[i].ne[2];
	}
	if (!p->layers)
		p->layers = 1; /* so that blk.0's three are reported missing */
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* The missing names sorted, as Python's sorted() lists them. */
static enum mp_err list_missing(const struct mp_epw_plan *p, char *buf, size_t len,
				struct mp_error *err)
{
	uint64_t n = p->layers * MP_EP_ROLES, k = 0;
	char (*names)[MP_GGUF_NAME_MAX + 1] = malloc(n * sizeof *names);

	if (!names)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < n; i++)
		if (p->routed[i] == SIZE_MAX)
			mp_ep_tensor_name(names[k++], sizeof names[0], (unsigned)(i / MP_EP_ROLES),
					  (unsigned)(i % MP_EP_ROLES));
	qsort(names, k, sizeof names[0], name_cmp);
	for (uint64_t i = 0; i < k; i++)
		list_add(buf, len, names[i]);
	free(names);
	return MP_OK;
}

static enum mp_err check_coverage(struct mp_epw_plan *p, struct mp_error *err)
{
	char missing[MP_MSG_MAX / 2] = "[", extra[MP_MSG_MAX / 4] = "[";
	uint64_t n = p->layers * MP_EP_ROLES;
	enum mp_err rc;

	if (!(p->routed = malloc(n * sizeof *p->routed)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < n; i++)
		p->routed[i] = SIZE_MAX;
	match_routed(p, extra, sizeof extra);
	if ((rc = list_missing(p, missing, sizeof missing, err)))
		return rc;
	if (!missing[1] && !extra[1])
		return MP_OK;
	return mp_fail(err, MP_E_GGUF_EXPERTS,
		       "%s: routed-expert tensor coverage mismatch: missing=%s] extra=%s]",
		       mp_err_summary(MP_E_GGUF_EXPERTS), missing, extra);
}

/* ---- each routed tensor ---------------------------------------------------------- */

static enum mp_err check_type(const struct mp_epw_plan *p, const struct mp_epw_tensor *t,
			      struct mp_error *err)
{
	char have[32];

	if (t->type == MP_GGML_MXFP4)
		return MP_OK;
	return mp_fail(err, MP_E_GGUF_EXPERT_TYPE,
		       "%s: %s is %s; SGLANG-EXPERTPACK-v1 holds MXFP4 (39) only",
		       mp_err_summary(MP_E_GGUF_EXPERT_TYPE), t->name,
		       mp_gguf_type_text(have, sizeof have, t->type));
}

static void shape_text(const struct mp_epw_tensor *t, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (uint32_t d = 0; d < t->n_dims && at < len; d++)
		at += (size_t)snprintf(buf + at, len - at, "%s%llu", d ? ", " : "",
				       (unsigned long long)t->ne[d]);
}

/* The role size of t, its checks the reference's, in its order. */
static enum mp_err check_slice(const struct mp_epw_plan *p, const struct mp_epw_tensor *t,
			       uint64_t layer, unsigned role, uint64_t *slice,
			       struct mp_error *err)
{
	const struct mp_quant_type *q = mp_ggml_type(t->type);
	char shape[96];
	uint64_t want;

	if (t->n_dims != 3 || t->ne[2] != p->experts) {
		shape_text(t, shape, sizeof shape);
		return mp_fail(err, MP_E_GGUF_EXPERTS,
			       "%s: unexpected expert shape for layer=%llu role=%s: [%s] "
			       "(%s; %llu experts wanted)", mp_err_summary(MP_E_GGUF_EXPERTS),
			       (unsigned long long)layer, mp_ep_role_name(role), shape, t->name,
			       (unsigned long long)p->experts);
	}
	if (t->nbytes % p->experts)
		return mp_fail(err, MP_E_GGUF_EXPERTS, "%s: expert tensor is not evenly "
			       "sliceable: %s", mp_err_summary(MP_E_GGUF_EXPERTS), t->name);
	*slice = t->nbytes / p->experts;
	want = mp_quant_bytes(q, t->ne[0] * t->ne[1]);
	if (*slice != want)
		return mp_fail(err, MP_E_GGUF_EXPERTS, "%s: quantized slice size mismatch "
			       "for %s: %llu != %llu", mp_err_summary(MP_E_GGUF_EXPERTS), t->name,
			       (unsigned long long)*slice, (unsigned long long)want);
	return MP_OK;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One role size for every routed tensor, else the sorted distinct sizes. */
static enum mp_err check_uniform(struct mp_epw_plan *p, uint64_t *sizes, uint64_t n,
				 struct mp_error *err)
{
	char list[MP_MSG_MAX / 2] = "";
	size_t at = 0;

	qsort(sizes, n, sizeof *sizes, u64_cmp);
	if (sizes[0] == sizes[n - 1]) {
		p->role_bytes = sizes[0];
		return MP_OK;
	}
	for (uint64_t i = 0; i < n && at + 24 < sizeof list; i++)
		if (!i || sizes[i] != sizes[i - 1])
			at += (size_t)snprintf(list + at, sizeof list - at, "%s%llu", at ? ", " : "",
					       (unsigned long long)sizes[i]);
	return mp_fail(err, MP_E_GGUF_EXPERTS, "%s: triplet v1 requires uniform role sizes, "
		       "got [%s]", mp_err_summary(MP_E_GGUF_EXPERTS), list);
}

static enum mp_err check_routed(struct mp_epw_plan *p, struct mp_error *err)
{
	uint64_t n = p->layers * MP_EP_ROLES, *sizes;
	enum mp_err rc = MP_OK;

	for (uint64_t i = 0; i < n && !rc; i++)
		rc = check_type(p, &p->tensors[p->routed[i]], err);
	if (rc)
		return rc;
	if (!(sizes = malloc(n * sizeof *sizes)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < n && !rc; i++)
		rc = check_slice(p, &p->tensors[p->routed[i]], i / MP_EP_ROLES,
				 (unsigned)(i % MP_EP_ROLES), &sizes[i], err);
	if (!rc)
		rc = check_uniform(p, sizes, n, err);
	free(sizes);
	return rc;
}

static void plan_layout(struct mp_epw_plan *p)
{
	p->object_stride = align_up(MP_EP_ROLES * p->role_bytes, MP_EPW_ALIGNMENT);
	p->index_count = p->layers * p->experts * MP_EP_ROLES;
	p->data_start = align_up(MP_EP_HEADER_SIZE + MP_EP_ENTRY_SIZE * p->index_count,
				 MP_EPW_ALIGNMENT);
	p->size = p->data_start + p->layers * p->experts * p->object_stride;
}

enum mp_err mp_epw_plan_open(struct mp_epw_plan *p, const char *gguf_path,
			     const char *config_path, struct mp_error *err)
{
	enum mp_err rc;

	memset(p, 0, sizeof *p);
	p->gguf_path = gguf_path;
	if (config_path && (rc = mp_epw_plan_read_config(p, config_path, err)))
		return rc;
	if ((rc = read_tensors(p, gguf_path, err)))
		return rc;
	if (!config_path)
		infer_geometry(p);
	return mp_epw_plan_check(p, err);
}

enum mp_err mp_epw_plan_check(struct mp_epw_plan *p, struct mp_error *err)
{
	enum mp_err rc;

	if ((rc = check_coverage(p, err)) || (rc = check_routed(p, err)))
		return rc;
	if (p->experts > MP_EPW_MAX_EXPERTS) /* only without a config, which bounds it */
		return mp_fail(err, MP_E_GGUF_EXPERTS, "%s: %llu experts a layer: the index's "
			       "u16 expert field holds at most %u", mp_err_summary(MP_E_GGUF_EXPERTS),
			       (unsigned long long)p->experts, MP_EPW_MAX_EXPERTS);
	plan_layout(p);
	return MP_OK;
}

void mp_epw_plan_free(struct mp_epw_plan *p)
{
	free(p->tensors);
	free(p->routed);
	memset(p, 0, sizeof *p);
}

static enum mp_err first_gate(const struct mp_gguf_tensor *t, void *ctx, struct mp_error *err)
{
	(void)err;
	if (strcmp(t->name, "blk.0.ffn_gate_exps.weight") == 0)
		*(uint32_t *)ctx = t->type;
	return MP_OK;
}

bool mp_epw_gguf_is_mxfp4(const char *gguf_path)
{
	struct mp_error err;
	struct stat st;
	uint32_t type = UINT32_MAX;
	int fd;

	if (mp_open_regular(gguf_path, "GGUF file", MP_E_GGUF_IO, &fd, &st, &err))
		return false;
	(void)mp_gguf_read(fd, gguf_path, NULL, first_gate, &type, &err);
	close(fd);
	return type == MP_GGML_MXFP4;
}
