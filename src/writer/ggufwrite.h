/*
 * ggufwrite.h - write GGUF (v3) files (the Kimi-K3 demo checkpoint made
 * with it is writer/kimi/ggufdemo.h).
 *
 * The writer lays files out as ggml's gguf_write_to_file() does: header,
 * key-value pairs, tensor infos, zero padding to the alignment (32, no
 * general.alignment key), then each tensor's data padded to the alignment,
 * in the order of the infos.  mp_gguf_read() therefore accepts what it
 * writes, at the offsets ggml computes.
 */
#ifndef MOEPACK_GGUFWRITE_H
#define MOEPACK_GGUFWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "writer/gguf.h"

/* GGUF value types the writer emits (the GGUF spec's numbers). */
enum mp_gguf_value {
	MP_GGUF_U16 = 2,
	MP_GGUF_U32 = 4,
	MP_GGUF_I32 = 5,
	MP_GGUF_STRING = 8,
};

struct mp_gguf_out_kv {
	const char *key;
	enum mp_gguf_value type;
	const char *str;   /* MP_GGUF_STRING */
	uint32_t num;      /* the integer types (an I32 is written as its bits) */
};

struct mp_gguf_out_tensor {
	char name[MP_GGUF_NAME_MAX + 1];
	uint32_t type;     /* F32 (0), Q4_0, Q2_K or Q3_K */
	uint32_t n_dims;   /* 1 to MP_GGUF_MAX_DIMS */
	uint64_t dims[MP_GGUF_MAX_DIMS]; /* ne[0], the row, first */
	bool demo;         /* Q2_K/Q3_K/MXFP4: well-formed demo blocks; else zeros */
	uint64_t seed;     /* of the demo blocks */
};

/*
 * Fill *t: its name, type and n_dims, dims d0, d1, d2 (the fourth 1), and
 * demo blocks seeded by seed for the types that have them (Q2_K, Q3_K,
 * MXFP4), zeros for the others.
 */
void mp_gguf_out_tensor_init(struct mp_gguf_out_tensor *t, const char *name, uint32_t type,
			     uint32_t n_dims, uint64_t d0, uint64_t d1, uint64_t d2,
			     uint64_t seed);

/* Bytes of a tensor's data (unpadded); 0 for an unknown type, rows that
 * are not whole blocks, or a size past 2^62. */
uint64_t mp_gguf_out_tensor_bytes(const struct mp_gguf_out_tensor *t);

/*
 * Write one GGUF file to fd (opened for writing on an empty file; `path`
 * names it in messages).  Returns MP_OK, MP_E_USAGE for a tensor the
 * writer cannot encode, MP_E_GGUF_IO naming the path, offset and errno
 * when a write fails, or MP_E_NOMEM.
 */
enum mp_err mp_gguf_write(int fd, const char *path, const struct mp_gguf_out_kv *kv,
			  size_t nkv, const struct mp_gguf_out_tensor *tensors, size_t ntensors,
			  struct mp_error *err);

#endif
