/* epdemo.c - mkdemo's DeepSeek-V4-Flash GGUF, its config, and the sparse
 * SGLANG-EXPERTPACK-v1 pack of full geometry. */
#include "config.h"

#include "writer/expertpack/demo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/outfile.h"
#include "base/quant.h"
#include "pack/expertpack/ident.h"
#include "writer/expertpack/job.h"
#include "writer/ggufwrite.h"

#define GGUF_ALIGN 32 /* ggml's default, which the writer uses */
#define SPARSE_DATA_OFFSET (1u << 20) /* where the absent GGUF's data would start */
#define SPARSE_SOURCE "moepack mkdemo --sparse: no source file"

static const struct mp_epw_demo_opts full_defaults = {2, 4, 2, 256, 512, 0, false, false};
static const struct mp_epw_demo_opts sparse_defaults = {43, 256, 6, 4096, 2048, 0, true, false};

static enum mp_err bad(struct mp_error *err, const char *opt, uint64_t v, const char *why)
{
	return mp_fail(err, MP_E_USAGE, "%s: %s %llu: %s", mp_err_summary(MP_E_USAGE), opt,
		       (unsigned long long)v, why);
}

enum mp_err mp_epw_demo_resolve(struct mp_epw_demo_opts *o, struct mp_error *err)
{
	const struct mp_epw_demo_opts *d = o->sparse ? &sparse_defaults : &full_defaults;

	o->layers = o->layers ? o->layers : d->layers;
	o->experts = o->experts ? o->experts : d->experts;
	o->top_k = o->top_k ? o->top_k : d->top_k < o->experts ? d->top_k : o->experts;
	o->hidden = o->hidden ? o->hidden : d->hidden;
	o->inter = o->inter ? o->inter : d->inter;
	if (o->layers > MP_EPW_MAX_LAYERS)
		return bad(err, "--layers", o->layers, "at most 65535");
	if (o->experts > MP_EPW_MAX_EXPERTS)
		return bad(err, "--experts", o->experts, "at most 65535");
	if (o->top_k > o->experts)
		return bad(err, "--top-k", o->top_k, "more than the experts");
	if (o->hidden % MP_QK_MXFP4 || o->hidden > 65536)
		return bad(err, "--hidden", o->hidden, "must be a multiple of 32 up to 65536");
	if (o->inter % MP_QK_MXFP4 || o->inter > 65536)
		return bad(err, "--inter", o->inter, "must be a multiple of 32 up to 65536");
	return MP_OK;
}

/* ---- the tensors ---------------------------------------------------------------- */

/* Every tensor of the demo GGUF, in file order; *n of them. */
static struct mp_gguf_out_tensor *demo_tensors(const struct mp_epw_demo_opts *o, size_t *n)
{
	struct mp_gguf_out_tensor *t = calloc(o->layers * MP_EP_ROLES + 2, sizeof *t);
	char name[MP_GGUF_NAME_MAX + 1];
	size_t k = 0;

	if (!t)
		return NULL;
	mp_gguf_out_tensor_init(&t[k++], "token_embd.weight", MP_GGML_F32, 2, o->hidden, 4, 1,
				0);
	for (uint64_t l = 0; l < o->layers; l++)
		for (unsigned r = 0; r < MP_EP_ROLES; r++) {
			bool down = r == MP_EP_DOWN;

			mp_ep_tensor_name(name, sizeof name, (unsigned)l, r);
			mp_gguf_out_tensor_init(&t[k++], name, MP_GGML_MXFP4, 3,
						down ? o->inter : o->hidden,
						down ? o->hidden : o->inter, o->experts,
						mp_splitmix64(o->seed ^ (l * MP_EP_ROLES + r + 1)));
		}
	mp_gguf_out_tensor_init(&t[k++], "output_norm.weight", MP_GGML_F32, 1, o->hidden, 1, 1,
				0);
	*n = k;
	return t;
}

/* ---- the source files ---------------------------------------------------------- */

static enum mp_err check_free(const char *path, bool force, struct mp_error *err)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return MP_OK;
	if (S_ISLNK(st.st_mode))
		return mp_fail(err, MP_E_USAGE, "%s: %s is a symbolic link: moepack never writes "
			       "through one", mp_err_summary(MP_E_USAGE), path);
	if (!force)
		return mp_fail(err, MP_E_USAGE, "%s: %s exists (--force replaces it)",
			       mp_err_summary(MP_E_USAGE), path);
	return MP_OK;
}

static enum mp_err write_gguf(const struct mp_epw_demo_opts *o, const char *path,
			      struct mp_error *err)
{
	const struct mp_gguf_out_kv kv[] = {
		{"general.architecture", MP_GGUF_STRING, "deepseek4", 0},
		{"general.name", MP_GGUF_STRING, "moepack mkdemo DeepSeek-V4-Flash demo", 0},
		{"deepseek4.block_count", MP_GGUF_U32, NULL, (uint32_t)o->layers},
		{"deepseek4.expert_count", MP_GGUF_U32, NULL, (uint32_t)o->experts},
		{"deepseek4.expert_used_count", MP_GGUF_U32, NULL, (uint32_t)o->top_k},
	};
	struct mp_output_tmp t;
	size_t n = 0;
	struct mp_gguf_out_tensor *tensors = demo_tensors(o, &n);
	enum mp_err rc = tensors ? mp_output_tmp_open(&t, path, MP_TMP_PRIVATE, MP_E_GGUF_IO, err)
				 : mp_fail(err, MP_E_NOMEM, "out of memory");

	if (!tensors)
		return rc;
	if (!rc)
		rc = mp_gguf_write(t.fd, path, kv, sizeof kv / sizeof kv[0], tensors, n, err);
	if (!rc)
		rc = mp_output_tmp_close(&t, err);
	if (!rc)
		rc = mp_output_tmp_rename(&t, err);
	mp_output_tmp_abandon(&t);
	free(tensors);
	return rc;
}

static enum mp_err write_config(const struct mp_epw_demo_opts *o, const char *path,
				struct mp_error *err)
{
	char text[512];
	int n = snprintf(text, sizeof text,
			 "{\n  \"architectures\": [\"DeepseekV4ForCausalLM\"],\n"
			 "  \"hidden_size\": %llu,\n  \"model_type\": \"deepseek_v4\",\n"
			 "  \"moe_intermediate_size\": %llu,\n  \"n_routed_experts\": %llu,\n"
			 "  \"num_experts_per_tok\": %llu,\n  \"num_hidden_layers\": %llu\n}\n",
			 (unsigned long long)o->hidden, (unsigned long long)o->inter,
			 (unsigned long long)o->experts, (unsigned long long)o->top_k,
			 (unsigned long long)o->layers);

	return mp_output_write_atomic(path, MP_TMP_PRIVATE, MP_E_CONFIG_IO, text, (size_t)n, err);
}

enum mp_err mp_epw_demo_source(const struct mp_epw_demo_opts *o, const char *gguf_path,
			       const char *config_path, struct mp_error *err)
{
	enum mp_err rc;

	if ((rc = check_free(gguf_path, o->force, err)) ||
	    (rc = check_free(config_path, o->force, err)) || (rc = write_gguf(o, gguf_path, err)))
		return rc;
	return write_config(o, config_path, err);
}

/* ---- the sparse pack -------------------------------------------------------------- */

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* SHA-256 of n zero bytes. */
static void zeros_sha256(uint64_t n, unsigned char out[MP_SHA256_LEN])
{
	static const unsigned char zero[1 << 16];
	struct mp_sha256 *h = mp_sha256_new();

	for (; h && n; n -= n < sizeof zero ? n : sizeof zero)
		mp_sha256_update(h, zero, n < sizeof zero ? (size_t)n : sizeof zero);
	if (h)
		mp_sha256_final(h, out);
	mp_sha256_free(h);
}

static int tensor_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mp_epw_tensor *)a)->name,
		      ((const struct mp_epw_tensor *)b)->name);
}

/* The absent GGUF's tensors: laid out as the writer would, digests of zeros
 * (each distinct size hashed once). */
static enum mp_err sparse_tensors(const struct mp_epw_demo_opts *o, struct mp_epw_plan *p,
				  struct mp_error *err)
{
	size_t n = 0;
	struct mp_gguf_out_tensor *t = demo_tensors(o, &n);
	uint64_t at = SPARSE_DATA_OFFSET;

	p->tensors = calloc(n, sizeof *p->tensors);
	if (!t || !p->tensors) {
		free(t);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		struct mp_epw_tensor *e = &p->tensors[i];

		snprintf(e->name, sizeof e->name, "%s", t[i].name);
		e->type = t[i].type;
		e->n_dims = t[i].n_dims;
		memcpy(e->ne, t[i].dims, sizeof e->ne);
		e->offset = at = align_up(at, GGUF_ALIGN);
		e->nbytes = mp_gguf_out_tensor_bytes(&t[i]);
		at += e->nbytes;
		if (i && e->nbytes == p->tensors[i - 1].nbytes)
			memcpy(e->sha256, p->tensors[i - 1].sha256, MP_SHA256_LEN);
		else
			zeros_sha256(e->nbytes, e->sha256);
	}
	free(t);
	p->ntensors = n;
	p->gguf_size = at;
	p->gguf_data_offset = SPARSE_DATA_OFFSET;
	qsort(p->tensors, n, sizeof *p->tensors, tensor_cmp);
	return MP_OK;
}

static enum mp_err sparse_plan(const struct mp_epw_demo_opts *o, const char *config_path,
			       struct mp_epw_plan *p, struct mp_epw_digests *d,
			       struct mp_error *err)
{
	char source_hex[MP_SHA256_HEX], config_hex[MP_SHA256_HEX];
	enum mp_err rc;

	p->layers = o->layers;
	p->experts = o->experts;
	p->top_k = o->top_k;
	if ((rc = sparse_tensors(o, p, err)) || (rc = mp_epw_plan_check(p, err)) ||
	    (rc = mp_epw_plan_read_config(p, config_path, err)))
		return rc;
	if (!(d->slice = malloc(p->index_count * MP_SHA256_LEN)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	zeros_sha256(p->role_bytes, d->slice);
	for (uint64_t i = 1; i < p->index_count; i++)
		memcpy(d->slice + i * MP_SHA256_LEN, d->slice, MP_SHA256_LEN);
	mp_sha256_buf(SPARSE_SOURCE, sizeof SPARSE_SOURCE - 1, d->source);
	zeros_sha256(p->gguf_data_offset, d->metadata);
	mp_sha256_hex(d->source, source_hex);
	mp_sha256_hex(p->config_sha256, config_hex);
	mp_ep_model_identity(source_hex, config_hex, d->model);
	return MP_OK;
}

enum mp_err mp_epw_demo_sparse(const struct mp_epw_demo_opts *o, const struct mp_epw_opts *opts,
			       struct mp_epw_result *res, struct mp_error *err)
{
	struct mp_epw_plan p = {.gguf_path = opts->gguf_path};
	struct mp_epw_digests d = {0};
	enum mp_err rc = check_free(opts->config_path, o->force, err);

	if (!rc)
		rc = write_config(o, opts->config_path, err);
	if (!rc)
		rc = sparse_plan(o, opts->config_path, &p, &d, err);
	if (!rc)
		rc = mp_epw_write_sparse(&p, &d, opts, res, err);
	free(d.slice);
	mp_epw_plan_free(&p);
	return rc;
}
