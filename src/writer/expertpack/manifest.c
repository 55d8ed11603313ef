/* epmanifest.c - the SGLANG-EXPERTPACK-v1 manifest and inventory digest. */
#include "config.h"

#include "writer/expertpack/manifest.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "pack/expertpack/format.h"
#include "base/pyjson.h"

static json_t *u64(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *hex(const unsigned char d[MP_SHA256_LEN])
{
	char h[MP_SHA256_HEX];

	mp_sha256_hex(d, h);
	return json_string(h);
}

static json_t *shape(const struct mp_epw_tensor *t)
{
	json_t *a = json_array();

	for (uint32_t i = 0; i < t->n_dims; i++)
		json_array_append_new(a, u64(t->ne[i]));
	return a;
}

static json_t *type_name(uint32_t type)
{
	const char *n = mp_gguf_type_name(type);

	return json_string(n ? n : "?");
}

static json_t *roles(void)
{
	json_t *a = json_array();

	for (unsigned r = 0; r < MP_EP_ROLES; r++)
		json_array_append_new(a, json_string(mp_ep_role_name(r)));
	return a;
}

/* One line of the inventory: json.dumps(record, sort_keys=True). */
static json_t *inventory_record(const struct mp_epw_tensor *t)
{
	return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "kind", "tensor", "name",
			 t->name, "shape", shape(t), "type", type_name(t->type), "type_id",
			 u64(t->type), "offset", u64(t->offset), "nbytes", u64(t->nbytes),
			 "sha256", hex(t->sha256));
}

enum mp_err mp_epw_inventory_sha256(const struct mp_epw_plan *plan, char out[MP_SHA256_HEX],
				    struct mp_error *err)
{
	struct mp_sha256 *h = mp_sha256_new();
	unsigned char d[MP_SHA256_LEN];
	enum mp_err rc = MP_OK;

	for (size_t i = 0; h && i < plan->ntensors && !rc; i++) {
		json_t *rec = inventory_record(&plan->tensors[i]);
		size_t len;
		char *line = rec ? mp_pyjson_dumps(rec, MP_PYJSON_ONE_LINE, true, &len) : NULL;

		if (line) {
			mp_sha256_update(h, line, len);
			mp_sha256_update(h, "\n", 1);
		} else {
			rc = MP_E_NOMEM;
		}
		free(line);
		json_decref(rec);
	}
	if (!h || rc) {
		mp_sha256_free(h);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	mp_sha256_final(h, d);
	mp_sha256_free(h);
	mp_sha256_hex(d, out);
	return MP_OK;
}

static json_t *tensor_json(const struct mp_epw_tensor *t)
{
	bool mxfp4 = t->type == MP_EP_DTYPE_ID;

	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:s, s:s}", "name", t->name,
			 "shape", shape(t), "type", type_name(t->type), "type_id", u64(t->type),
			 "source_offset", u64(t->offset), "source_nbytes", u64(t->nbytes),
			 "source_payload_sha256", hex(t->sha256),
			 "category", t->routed ? "routed_expert" : "non_routed",
			 "mapping", t->routed ? "expert_pack_identity" : "gguf_direct_identity",
			 "scale_storage", mxfp4 ? "inline_quant_block" : "tensor_native");
}

static json_t *tensors_json(const struct mp_epw_plan *p)
{
	json_t *a = json_array();

	for (size_t i = 0; i < p->ntensors; i++)
		json_array_append_new(a, tensor_json(&p->tensors[i]));
	return a;
}

static json_t *layers_json(const struct mp_epw_plan *p)
{
	json_t *a = json_array();

	for (uint64_t l = 0; l < p->layers; l++)
		json_array_append_new(a, u64(l));
	return a;
}

static json_t *model_json(const struct mp_epw_manifest_in *in)
{
	const struct mp_epw_plan *p = in->plan;

	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:b}", "ref", in->model_ref,
			 "model_identity_sha256", hex(in->d->model),
			 "config_sha256", hex(p->config_sha256), "num_layers", u64(p->layers),
			 "num_routed_experts", u64(p->experts), "top_k", u64(p->top_k),
			 "single_gpu", 1);
}

static json_t *source_json(const struct mp_epw_manifest_in *in)
{
	const struct mp_epw_plan *p = in->plan;

	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:n, s:s, s:o}", "path", in->source_path,
			 "size", u64(p->gguf_size), "sha256", hex(in->d->source),
			 "gguf_data_offset", u64(p->gguf_data_offset),
			 "gguf_metadata_sha256", hex(in->d->metadata), "inventory_path",
			 "inventory_sha256", in->inventory_sha256, "tensor_count",
			 u64(p->ntensors));
}

static json_t *coverage_json(const struct mp_epw_plan *p)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o}", "layers", layers_json(p),
			 "experts_per_layer", u64(p->experts), "roles", roles(),
			 "routed_tensor_count", u64(MP_EP_ROLES * p->layers),
			 "non_routed_tensor_count", u64(p->ntensors - MP_EP_ROLES * p->layers));
}

static json_t *provenance_json(const struct mp_epw_manifest_in *in, json_t **transform)
{
	*transform = json_pack("{s:s, s:s, s:b, s:s}", "id", MP_EP_TRANSFORM, "description",
			       "Contiguous source bytes; no dequantization, requantization, "
			       "or value transform", "reversible", 1, "tool_sha256",
			       in->tool_sha256);
	/* not Python: builder.python is null (moepack-pack(5)) */
	return json_pack("{s:s, s:n, s:s, s:s, s:f}", "git_sha", "unknown", "python",
			 "command", in->command, "started_at", in->started_at, "elapsed_s",
			 in->elapsed_s);
}

/* The keys about the pack file itself. */
static json_t *layout_json(const struct mp_epw_manifest_in *in)
{
	const struct mp_epw_plan *p = in->plan;
	uint64_t objects = p->layers * p->experts, payload = p->index_count * p->role_bytes;

	return json_pack("{s:s, s:i, s:b, s:s, s:s, s:o, s:o, s:s, s:o, s:i, s:o, s:i, s:s, "
			 "s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "format", MP_EP_FORMAT, "version", MP_EP_VERSION, "complete", 1,
			 "created_at", in->created_at, "layout", "triplet_identity",
			 "role_order", roles(), "alignment", u64(MP_EPW_ALIGNMENT),
			 "pack_path", in->pack_path, "pack_size", u64(p->size),
			 "header_bytes", MP_EP_HEADER_SIZE, "index_count", u64(p->index_count),
			 "index_entry_bytes", MP_EP_ENTRY_SIZE, "index_sha256", in->index_sha256,
			 "data_start", u64(p->data_start), "object_count", u64(objects),
			 "object_payload_bytes", u64(MP_EP_ROLES * p->role_bytes),
			 "object_stride", u64(p->object_stride), "role_bytes", u64(p->role_bytes),
			 "payload_bytes", u64(payload),
			 "padding_bytes", u64(p->size - p->data_start - payload));
}

char *mp_epw_manifest_text(const struct mp_epw_manifest_in *in, size_t *len)
{
	json_t *m = layout_json(in), *transform = NULL, *builder = provenance_json(in, &transform);
	char *text = NULL, *line;
	int bad = !m;

	if (!m) {
		json_decref(transform);
		json_decref(builder);
		return NULL;
	}
	if (in->pack_sha256[0])
		bad |= json_object_set_new(m, "pack_sha256", json_string(in->pack_sha256));
	bad |= json_object_set_new(m, "model", model_json(in));
	bad |= json_object_set_new(m, "source", source_json(in));
	bad |= json_object_set_new(m, "coverage", coverage_json(in->plan));
	bad |= json_object_set_new(m, "transform", transform);
	bad |= json_object_set_new(m, "builder", builder);
	bad |= json_object_set_new(m, "tensors", tensors_json(in->plan));
	if (!bad)
		text = mp_pyjson_dumps(m, 2, false, len);
	json_decref(m);
	if (!text)
		return NULL;
	if ((line = realloc(text, *len + 2))) {
		line[(*len)++] = '\n';
		line[*len] = '\0';
	} else {
		free(text);
	}
	return line;
}

void mp_epw_now(char buf[MP_EPW_TIME_LEN])
{
	struct timespec ts;
	struct tm tm;
	size_t n;
	long us;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, MP_EPW_TIME_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
	us = ts.tv_nsec / 1000;
	if (us)
		n += (size_t)snprintf(buf + n, MP_EPW_TIME_LEN - n, ".%06ld", us);
	snprintf(buf + n, MP_EPW_TIME_LEN - n, "+00:00");
}

void mp_epw_tool_sha256(char out[MP_SHA256_HEX])
{
	struct mp_error err;
	struct stat st;
	unsigned char d[MP_SHA256_LEN];
	int fd;

	out[0] = '\0';
	if (mp_open_regular("/proc/self/exe", "program", MP_E_PACK_IO, &fd, &st, &err))
		return;
	if (!mp_sha256_fd(fd, (uint64_t)st.st_size, "program", NULL, NULL, NULL, d, &err))
		mp_sha256_hex(d, out);
	close(fd);
}
