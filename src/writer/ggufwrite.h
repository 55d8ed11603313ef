/*
 * ggufwrite.h - write GGUF (v3) files, and a small Kimi-K3-shaped split
 * checkpoint to try `moepack build` on without a 1 TB download.
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

/* ---- the demo checkpoint --------------------------------------------------- */

#define MP_GGUF_DEMO_SHARDS 3
#define MP_GGUF_DEMO_PREFIX "kimi-k3-demo"

struct mp_gguf_demo_opts {
	const char *dir;     /* created if missing (its parent must exist) */
	uint64_t experts;    /* 0: 2 */
	uint64_t hidden;     /* up/gate row length; 0: 512 */
	uint64_t inter;      /* down row length; 0: 1024 */
	uint64_t seed;       /* of the expert payloads */
	bool force;          /* replace files of an earlier demo */
};

struct mp_gguf_demo_result {
	char *shard[MP_GGUF_DEMO_SHARDS]; /* DIR/kimi-k3-demo-0000i-of-00003.gguf */
	char *config;                     /* DIR/config.json */
	uint64_t tensors;                 /* in all shards */
	uint64_t bytes;                   /* of all shards */
};

/*
 * Fill the defaults of *o and check the geometry: hidden and inter
 * multiples of 256, hidden x inter a multiple of 2^19 so that one expert's
 * slice of every role is whole 4096-byte pages (what `build` needs), each
 * at most 65536, experts 1 to 65536.  MP_E_USAGE names the option at fault.
 */
enum mp_err mp_gguf_demo_resolve(struct mp_gguf_demo_opts *o, struct mp_error *err);

/*
 * Write DIR/kimi-k3-demo-0000i-of-00003.gguf (i = 1..3) and DIR/config.json:
 * a checkpoint `moepack check-gguf --any-geometry` passes and `moepack build
 * --any-geometry` turns into a valid pack.  Shards hold split.no (u16),
 * split.count (u16), split.tensors.count (i32) and general.architecture
 * "kimi-k3" each (the reference builder's layout, which moepack accepts
 * too); layers 0..92 each have blk.N.attn_k_b.weight (Q4_0) and
 * blk.N.attn_v_b.weight (Q2_K), layers 1..92 the routed experts (up and
 * gate Q2_K [hidden, inter, experts], down Q3_K [inter, hidden, experts],
 * well-formed blocks); token_embd.weight and output_norm.weight (F32).
 * config.json has the keys `build` checks, matching.
 *
 * Each file is written to a temporary sibling (O_EXCL, O_NOFOLLOW), synced
 * and renamed into place.  Without force an existing target is refused
 * (MP_E_USAGE) before anything is written; so is a directory that holds
 * other *.gguf files, since `build` takes every one of them as the set.  A
 * failure before the files are renamed into place (a write error, a full
 * disk) removes every temporary file.  res is filled on success and freed
 * with mp_gguf_demo_result_free().
 */
enum mp_err mp_gguf_demo_write(const struct mp_gguf_demo_opts *o,
			       struct mp_gguf_demo_result *res, struct mp_error *err);
void mp_gguf_demo_result_free(struct mp_gguf_demo_result *res);

#endif
