/*
 * view.c - SGLang's expert pack (SGLANG-EXPERTPACK-v1) as a pack format:
 * mp_ep_open() validates it (expertpack.h), this turns what it found into
 * the view the rest of the tree reads (struct mp_model), and answers the
 * format's questions from the index: its generations, tensor names and
 * per-role checksums.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/quant.h"
#include "pack/expertpack/expertpack.h"
#include "pack/mjson.h"
#include "pack/manifestpath.h"
#include "pack/pack.h"

/* SGLang numbers its roles gate, up, down; ours are up, gate, down. */
static enum mp_ep_role ep_role(enum mp_role r)
{
	return r == MP_ROLE_UP ? MP_EP_UP : r == MP_ROLE_GATE ? MP_EP_GATE : MP_EP_DOWN;
}

/* The loader's arguments, and moepack's asks, as the module takes them. */
static enum mp_err ep_options(const struct mp_open_opts *o, struct mp_ep_opts *eo,
			      char config_hex[MP_SHA256_HEX], struct mp_error *err)
{
	*eo = (struct mp_ep_opts){
		.manifest_path = o->manifest_path,
		.manifest_text = o->manifest_text,
		.manifest_text_len = o->manifest_text_len,
		.expect_layers = o->expect_layers,
		.expect_experts = o->expect_experts,
		.expect_top_k = o->expect_top_k,
		.expect_source_sha256 = o->expect_source_sha256,
		.expect_model_identity_sha256 = o->expect_model_identity_sha256,
		.expect_config_sha256 = o->expect_config_sha256,
		.full = o->full,
		.source_path = o->source_path,
		.progress = o->progress,
		.progress_arg = o->progress_arg,
		.opened = o->opened,
		.opened_arg = o->opened_arg,
		.cancel = o->cancel,
	};
	/* --config FILE: its digest is the one the header must record */
	if (o->config_path) {
		enum mp_err rc = mp_config_sha256(o->config_path, config_hex, err);

		if (rc)
			return rc;
		if (o->expect_config_sha256 && strcasecmp(o->expect_config_sha256, config_hex))
			return mp_fail(err, MP_E_USAGE, "invalid usage: --config %s has SHA-256 "
				       "%s, not the expected config SHA-256 given",
				       o->config_path, config_hex);
		eo->expect_config_sha256 = config_hex;
	}
	return MP_OK;
}

/* A role's shape as the entry of that object records it. */
static void entry_shape(const struct mp_ep *ep, uint64_t object, enum mp_role r,
			struct mp_role_info *ri)
{
	const struct mp_ep_role_info *e = mp_ep_role_at(ep, object, ep_role(r));

	memset(ri->shape, 0, sizeof ri->shape);
	ri->shape_len = e->rank < MP_MAX_SHAPE ? e->rank : MP_MAX_SHAPE;
	for (unsigned i = 0; i < ri->shape_len; i++)
		ri->shape[i] = e->shape[i];
}

/* Whether an entry of role r records another shape than object 0's: both
 * checkers leave shapes free, so experts may differ (moepack-pack(5)). */
static bool shape_varies(const struct mp_ep *ep, enum mp_role r)
{
	const struct mp_ep_role_info *first = mp_ep_role_at(ep, 0, ep_role(r));

	for (uint64_t k = 1; k < ep->object_count; k++) {
		const struct mp_ep_role_info *e = mp_ep_role_at(ep, k, ep_role(r));

		if (e->rank != first->rank ||
		    memcmp(e->shape, first->shape, e->rank * sizeof e->shape[0]) != 0)
			return true;
	}
	return false;
}

/* Role r of the view: its facts, the same for every object, and object
 * 0's shape, with whether another object's differs. */
static void model_role(const struct mp_ep *ep, enum mp_role r, struct mp_role_info *ri)
{
	memset(ri, 0, sizeof *ri);
	snprintf(ri->dtype, sizeof ri->dtype, "%s", "MXFP4");
	ri->dtype_id = MP_GGML_MXFP4;
	ri->expert_bytes = ep->role_bytes;
	ri->role_offset = (uint64_t)ep_role(r) * ep->role_bytes;
	entry_shape(ep, 0, r, ri);
	ri->shape_varies = shape_varies(ep, r);
}

static enum mp_err fill_model(struct mp_pack *p, const struct mp_ep *ep,
			      struct mp_error *err)
{
	struct mp_model *m = &p->m;

	m->model_layers = ep->num_layers;
	m->num_experts = ep->num_experts;
	m->top_k = ep->top_k;
	m->layer_count = (size_t)ep->num_layers;
	m->layer_ids = calloc(m->layer_count ? m->layer_count : 1, sizeof *m->layer_ids);
	p->object_offset = malloc((size_t)ep->object_count * sizeof *p->object_offset);
	if (!m->layer_ids || !p->object_offset)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	/* the loader numbers the layers of the pack from 0 */
	for (size_t l = 0; l < m->layer_count; l++)
		m->layer_ids[l] = (uint32_t)l;
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		model_role(ep, (enum mp_role)r, &m->roles[r]);
	m->order[0] = MP_ROLE_GATE;
	m->order[1] = MP_ROLE_UP;
	m->order[2] = MP_ROLE_DOWN;
	m->object_bytes = MP_ROLE_COUNT * ep->role_bytes;
	m->data_start = ep->data_start;
	m->alignment = ep->alignment;
	mp_sha256_hex(ep->index_digest, m->index_sha256);
	memcpy(m->sha256, ep->pack_sha256, sizeof m->sha256);
	for (uint64_t k = 0; k < ep->object_count; k++)
		p->object_offset[k] = mp_ep_object_offset(ep, k);
	return MP_OK;
}

/* What the module opened and found, moved into the pack: the files whole
 * (the same struct mp_pack_file), the rest the format's view needs. */
static void take_files(struct mp_pack *p, struct mp_ep *ep)
{
	p->file = ep->file;
	mp_pack_file_init(&ep->file);
	p->index_count = ep->index_count;
	p->object_count = ep->object_count;
	memcpy(p->index_digest, ep->index_digest, sizeof p->index_digest);
	p->page_aligned = ep->page_aligned;
	p->full_checked = ep->full_checked;
}

static enum mp_err ep_open(struct mp_pack *p, const char *path,
			   const struct mp_open_opts *o, struct mp_error *err)
{
	char config_hex[MP_SHA256_HEX];
	struct mp_ep_opts eo;
	enum mp_err rc = ep_options(o, &eo, config_hex, err);

	if (rc == MP_OK)
		rc = mp_ep_open(&p->ep, path, &eo, err);
	if (rc)
		return rc;
	take_files(p, p->ep);
	return fill_model(p, p->ep, err);
}

static void ep_close(struct mp_pack *p)
{
	free(p->m.layer_ids);
	p->m.layer_ids = NULL;
	mp_ep_close(p->ep);
	p->ep = NULL;
}

static uint64_t ep_generation(const struct mp_pack *p, uint64_t object)
{
	return p->ep->generation[object];
}

static void ep_tensor_name(const struct mp_pack *p, uint64_t object, enum mp_role role,
			   char *buf, size_t len)
{
	snprintf(buf, len, "%s", mp_ep_role_at(p->ep, object, ep_role(role))->tensor_name);
}

static void ep_role_shape(const struct mp_pack *p, uint64_t object, enum mp_role role,
			  struct mp_role_info *ri)
{
	entry_shape(p->ep, object, role, ri);
}

static const unsigned char *ep_role_sha256(const struct mp_pack *p, uint64_t object,
					   enum mp_role role)
{
	return mp_ep_role_at(p->ep, object, ep_role(role))->checksum;
}

/* The text as it is, but for pack_path's string: the reference reads it
 * with Python's json, which a re-encoding could not promise to match. */
static enum mp_err ep_manifest_with_path(const struct mp_pack *p, const char *path,
					 char **out, size_t *out_len, struct mp_error *err)
{
	struct mp_text_span span;
	enum mp_err rc = mp_manifest_key_span(p->file.manifest_raw, p->file.manifest_len,
					      p->file.manifest_path, p->format->path_key, &span, err);

	*out = NULL;
	return rc ? rc : mp_manifest_splice_path(p->file.manifest_raw, p->file.manifest_len, &span,
						 path, out, out_len, err);
}

static void hex_fact(struct mp_pack_fact *f, const char *key, const char *label,
		     const unsigned char d[MP_SHA256_LEN])
{
	*f = (struct mp_pack_fact){.key = key, .label = label, .tail = true};
	mp_sha256_hex(d, f->text);
}

static unsigned ep_facts(const struct mp_pack *p, struct mp_pack_fact *f)
{
	const struct mp_ep *ep = p->ep;

	f[0] = (struct mp_pack_fact){.key = "format", .label = "format"};
	snprintf(f[0].text, sizeof f[0].text, "%s", MP_EP_MAGIC);
	f[1] = (struct mp_pack_fact){.key = "object_stride", .label = "object stride",
				     .number = true, .tail = true, .u64 = ep->object_stride};
	hex_fact(&f[2], "model_identity_sha256", "model identity", ep->header.model_identity_sha256);
	hex_fact(&f[3], "source_sha256", "source sha256", ep->header.source_blob_sha256);
	hex_fact(&f[4], "config_sha256", "config sha256", ep->header.config_sha256);
	return 5;
}

const struct mp_pack_format mp_format_expertpack = {
	.name = MP_EP_MAGIC, .model = "DeepSeek-V4-Flash", .manifest_format = MP_EP_MAGIC,
	.magic = MP_EP_MAGIC "\0\0\0\0", .magic_len = MP_EP_MAGIC_LEN,
	MP_PACK_FORMAT_OPS(ep),
	.path_key = "pack_path", .sha256_key = "pack_sha256", .layers_key = "num_layers",
	.sha256_hint = MP_EP_SHA256_HINT,
};
