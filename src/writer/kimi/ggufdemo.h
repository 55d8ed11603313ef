/*
 * ggufdemo.h - a small Kimi-K3-shaped split checkpoint, to try `moepack
 * build` on without a 1 TB download.
 */
#ifndef MOEPACK_GGUFDEMO_H
#define MOEPACK_GGUFDEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/kimi/format.h"
#include "writer/ggufwrite.h"

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
