/*
 * epplan.h - what SGLang's expert-pack builder makes of a DeepSeek-V4-Flash
 * GGUF and its config.json, before a byte of the pack is written.
 *
 * One GGUF file (the reference takes one) is read with writer/gguf.h's
 * checked reader: every tensor's name, type, ne, absolute offset and size.
 * The routed tensors blk.{l}.ffn_{gate,up,down}_exps.weight must cover
 * l = 0..L-1 exactly (none missing, none past L-1), each MXFP4 (the only
 * type the format holds), 3-D with ne2 = E, E whole slices of
 * ne0*ne1/32*17 bytes, the same for all three roles of every layer.  L, E
 * and top-k come from config.json's num_hidden_layers, n_routed_experts and
 * num_experts_per_tok.  Every failure is one line naming the tensor or file.
 */
#ifndef MOEPACK_EPPLAN_H
#define MOEPACK_EPPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/digest.h"
#include "pack/expertpack/format.h"
#include "writer/gguf.h"

#define MP_EPW_ALIGNMENT 4096 /* prepare_deepseek_pack.py's */
#define MP_EPW_MAX_LAYERS 65535u  /* the index's u16 layer and expert */
#define MP_EPW_MAX_EXPERTS 65535u

/* One tensor of the GGUF, as the manifest lists it. */
struct mp_epw_tensor {
	char name[MP_GGUF_NAME_MAX + 1];
	uint32_t type, n_dims;
	uint64_t ne[MP_GGUF_MAX_DIMS];
	uint64_t offset;  /* absolute, in the GGUF file */
	uint64_t nbytes;
	bool routed;      /* a blk.L.ffn_{gate,up,down}_exps.weight of the pack */
	uint64_t layer;   /* when routed: its pack layer and role */
	unsigned role;
	unsigned char sha256[MP_SHA256_LEN]; /* of its bytes, once hashed */
};

struct mp_epw_plan {
	const char *gguf_path;    /* as given */
	uint64_t gguf_size, gguf_data_offset;
	struct mp_epw_tensor *tensors; /* every tensor, sorted by name */
	size_t ntensors;
	size_t *routed;           /* layers * 3: tensors[] index of (layer, role) */
	/* from config.json (or, for check-gguf without one, the tensors) */
	uint64_t layers, experts, top_k;
	bool have_config;
	unsigned char config_sha256[MP_SHA256_LEN];
	/* the layout */
	uint64_t role_bytes, object_stride, data_start, index_count, size;
};

/*
 * Read config.json (may be NULL: L and E are then taken from the tensors,
 * as check-gguf does without --config) and the GGUF's tensors, and check
 * them as above.  MP_E_CONFIG_IO / MP_E_CONFIG_MISMATCH for the config,
 * MP_E_GGUF_IO / MP_E_GGUF_FORMAT for the file, MP_E_GGUF_EXPERTS for
 * coverage, shape and size, MP_E_GGUF_EXPERT_TYPE for a routed tensor that
 * is not MXFP4.  Free with mp_epw_plan_free() whatever it returns.
 */
enum mp_err mp_epw_plan_open(struct mp_epw_plan *p, const char *gguf_path,
			     const char *config_path, struct mp_error *err);
void mp_epw_plan_free(struct mp_epw_plan *p);

/*
 * The checks and layout of mp_epw_plan_open() on a plan whose tensors
 * (sorted by name), layers, experts and top-k are filled already (mkdemo
 * --sparse describes a GGUF that is not there).
 */
enum mp_err mp_epw_plan_check(struct mp_epw_plan *p, struct mp_error *err);

/* config.json into the plan: its digest, layers, experts and top-k. */
enum mp_err mp_epw_plan_read_config(struct mp_epw_plan *p, const char *path,
				     struct mp_error *err);

/* The routed tensor of (layer, role). */
static inline struct mp_epw_tensor *mp_epw_routed(const struct mp_epw_plan *p, uint64_t layer,
						  unsigned role)
{
	return &p->tensors[p->routed[layer * MP_EP_ROLES + role]];
}

/* True when the GGUF's blk.0.ffn_gate_exps.weight is MXFP4: the rule by
 * which check-gguf and build pick the expert-pack format. */
bool mp_epw_gguf_is_mxfp4(const char *gguf_path);

#endif
