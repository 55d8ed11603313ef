/*
 * gguf.h - a bounds-checked reader of GGUF (v2, v3) headers and tensor
 * infos, and the Kimi-K3 pre-load check of tensor quant types.
 *
 * Only the metadata at the start of the file is read: header, KV pairs
 * (skipped) and tensor infos.  Every count and length taken from the file
 * is checked against the bytes the file still has before it is used, so a
 * corrupt header costs neither memory nor time.
 */
#ifndef MOEPACK_GGUF_H
#define MOEPACK_GGUF_H

#include <stdint.h>

#include "errors.h"

#define MP_GGUF_MAX_DIMS 4
/* Longest tensor name kept in full; longer ones (ggml allows 63 bytes)
 * are passed truncated with name_truncated set. */
#define MP_GGUF_NAME_MAX 255

struct mp_gguf_header {
	uint32_t version;
	uint64_t tensor_count;
	uint64_t kv_count;
};

struct mp_gguf_tensor {
	uint64_t index;        /* position among the tensor infos */
	const char *name;      /* NUL-terminated copy; may hold NUL bytes itself */
	uint64_t name_len;     /* the name's length in the file */
	int name_truncated;    /* name holds only the first MP_GGUF_NAME_MAX bytes */
	uint32_t type;         /* GGML type id, not checked against known types */
	uint32_t n_dims;
	uint64_t dims[MP_GGUF_MAX_DIMS]; /* ne[0] (the row) first; 1 past n_dims */
	uint64_t offset;       /* relative to the data section */
};

/*
 * Called once per tensor info, in file order.  Return MP_OK to go on, or
 * any code (with *err filled) to stop the walk with that code.
 */
typedef enum mp_err (*mp_gguf_tensor_fn)(const struct mp_gguf_tensor *t, void *ctx,
					 struct mp_error *err);

/*
 * Read the GGUF metadata of fd (opened on `path`, used only in messages):
 * fill *hdr (may be NULL) and call fn (may be NULL) for each tensor.
 * The data of every tensor of a type whose size is known (F32, F16, BF16
 * and the types of quant.h) must be whole blocks aligned to
 * general.alignment, checked before fn sees the tensor, and lie inside the
 * file, checked once all tensor infos are read (what fn returned comes first).
 * Returns MP_OK, MP_E_GGUF_FORMAT when the file is not a valid GGUF,
 * MP_E_GGUF_IO when it cannot be read, or what fn returned.
 */
enum mp_err mp_gguf_read(int fd, const char *path, struct mp_gguf_header *hdr,
			 mp_gguf_tensor_fn fn, void *ctx, struct mp_error *err);

struct mp_gguf_check_result {
	uint64_t tensor_count;    /* from the header */
	uint64_t tensors_checked; /* tensors a rule applied to, up to the first violation */
};

/*
 * The Kimi-K3 rules on tensor quant types: blk.N.attn_k_b.weight Q4_0,
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
