/*
 * ggufcheck.h - the Kimi-K3 pre-load check of a GGUF file's tensor quant
 * types (`moepack check-gguf`), on the reader of writer/gguf.h.
 */
#ifndef MOEPACK_GGUFCHECK_H
#define MOEPACK_GGUFCHECK_H

#include <stdint.h>

#include "base/errors.h"

struct mp_gguf_check_result {
	uint64_t tensor_count;    /* from the header */
	uint64_t tensors_checked; /* tensors a rule applied to, up to the first violation */
};

/*
 * The Kimi-K3 rules on tensor quant types (k3names.h, which also says
 * which names are blk.N.): blk.N.attn_k_b.weight Q4_0,
 * blk.N.attn_v_b.weight Q2_K, blk.N.ffn_{up,gate}_exps.weight Q2_K,
 * blk.N.ffn_down_exps.weight Q3_K.  Stops at the first violation with
 * MP_E_GGUF_MLA_K, MP_E_GGUF_MLA_V or MP_E_GGUF_EXPERT_TYPE and a message
 * naming the tensor and both types.  *res (may be NULL) is filled either way.
 */
enum mp_err mp_gguf_check_fd(int fd, const char *path, struct mp_gguf_check_result *res,
			     struct mp_error *err);
/* The same on a file by name (MP_E_GGUF_IO when it cannot be opened). */
enum mp_err mp_gguf_check_file(const char *path, struct mp_gguf_check_result *res,
			       struct mp_error *err);

#endif
