/*
 * epdemo.h - `moepack mkdemo --format expertpack-v1`: a small DeepSeek-V4-Flash
 * GGUF and config.json that `build` turns into a valid SGLANG-EXPERTPACK-v1
 * pack, and a sparse pack of full geometry with no source at all.
 *
 * The GGUF holds the routed experts blk.L.ffn_{gate,up,down}_exps.weight
 * for L = 0..layers-1 (MXFP4, gate and up [hidden, inter, experts], down
 * [inter, hidden, experts], well-formed blocks with small E8M0 scales,
 * mp_quant_fill_demo()) and two small F32 tensors, token_embd.weight and
 * output_norm.weight.  Its config.json has num_hidden_layers,
 * n_routed_experts, num_experts_per_tok, hidden_size, moe_intermediate_size.
 */
#ifndef MOEPACK_EPDEMO_H
#define MOEPACK_EPDEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "writer/expertpack/opts.h"
#include "writer/expertpack/plan.h"

#define MP_EPW_DEMO_GGUF "deepseek-v4-flash-demo.gguf" /* mkdemo --gguf DIR */

struct mp_epw_demo_opts {
	/* 0: the defaults, 2 x 4 experts, top-k 2, hidden 256, inter 512; with
	 * sparse DeepSeek-V4-Flash's 43 x 256, top-k 6, 4096, 2048 */
	uint64_t layers, experts, top_k, hidden, inter;
	uint64_t seed;   /* of the expert payloads */
	bool sparse;
	bool force;      /* replace existing files */
};

/*
 * The defaults for every 0 field, and the checks: layers and experts 1 to
 * 65535, top-k 1 to experts, hidden and inter multiples of 32 up to 65536.
 * MP_E_USAGE naming the option otherwise.
 */
enum mp_err mp_epw_demo_resolve(struct mp_epw_demo_opts *o, struct mp_error *err);

/*
 * The demo GGUF at gguf_path and its config at config_path, each written
 * through a temporary and renamed.  An existing file is replaced only with
 * force (MP_E_USAGE).  MP_E_GGUF_IO / MP_E_CONFIG_IO on a failed write.
 */
enum mp_err mp_epw_demo_source(const struct mp_epw_demo_opts *o, const char *gguf_path,
			       const char *config_path, struct mp_error *err);

/*
 * With sparse: the pack at opts->out, its data a hole, and its manifest,
 * no source file: the tensors and digests describe a GGUF that is not
 * there (its path opts->gguf_path; slice and tensor digests are those of
 * zeros, each distinct size hashed once; source.sha256 is no file's) and
 * the manifest has no pack_sha256.  res as mp_epw_build() fills it.
 */
enum mp_err mp_epw_demo_sparse(const struct mp_epw_demo_opts *o, const struct mp_epw_opts *opts,
			       struct mp_epw_result *res, struct mp_error *err);

#endif
