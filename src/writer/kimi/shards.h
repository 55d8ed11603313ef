/*
 * shards.h - a GGUF checkpoint as a set of shards, and its routed experts.
 *
 * A split checkpoint is NAME-0000i-of-0000N.gguf, i = 1..N, in one
 * directory; any one shard names the set.  The set is discovered and
 * checked as the reference builder does it (shard numbering, split.no,
 * split.count, split.tensors.count, general.architecture, no tensor in two
 * shards), except that general.* may be only in the first shard, as stock
 * llama.cpp gguf-split writes it.  A file whose name has no -NNNNN-of-
 * MMMMM part is a set of one, its split.* keys optional.
 *
 * Every shard's metadata goes through mp_gguf_read(), with its limits and
 * ggml's rules.  Problems are collected, not only the first: check-gguf
 * reports them all.
 */
#ifndef MOEPACK_SHARDS_H
#define MOEPACK_SHARDS_H

#include <stdbool.h>
#include <stdint.h>

#include "pack/kimi/format.h"
#include "base/errors.h"
#include "writer/gguf.h"
#include "writer/kimi/ggufcheck.h"
#include "pack/pack.h"

#define MP_SHARDS_MAX 99999       /* five digits */
#define MP_SHARDS_MAX_PROBLEMS 64 /* kept; more are counted */
/*
 * The inventory's bounds, far above a real checkpoint (Kimi-K3: ~30
 * tensors a layer, a few thousand in all) and low enough that a set is
 * read in a few MB: a shard claiming more is refused from its header.
 */
#define MP_SHARD_MAX_TENSORS 16384u   /* tensors of one shard */
#define MP_SHARDS_MAX_TENSORS 65536u  /* tensors of all shards together */
/* Limits on config.json, checked before it is parsed (a real one has a
 * few hundred values, nested 3 deep). */
#define MP_CONFIG_MAX_VALUES 100000u
#define MP_CONFIG_MAX_DEPTH 64u
#define MP_CONFIG_MAX_TREE (16u << 20) /* estimated bytes of the parsed tree */

struct mp_shard {
	char *path;        /* directory + file name, as opened */
	char *real_path;   /* realpath(), for the manifest */
	uint64_t size;
	int fd;            /* open read-only, or -1 */
	bool readable;     /* its metadata passed mp_gguf_read() */
	struct mp_gguf_header hdr;
	uint64_t tensor_count; /* tensors read from it */
};

struct mp_shard_tensor {
	char name[MP_GGUF_NAME_MAX + 1];
	uint32_t type;
	uint32_t n_dims;
	uint64_t dims[MP_GGUF_MAX_DIMS];
	uint32_t shard;        /* index into shards */
	uint64_t data_offset;  /* absolute, in the shard's file */
	uint64_t nbytes;
};

struct mp_shard_set {
	char *dir;
	char *prefix;          /* NAME, before -NNNNN-of-MMMMM.gguf or .gguf */
	bool split;            /* named as a split set */
	size_t count;
	struct mp_shard *shards;
	size_t ntensors;
	struct mp_shard_tensor *tensors; /* shard order, then file order */
	uint64_t total_bytes;  /* of all shard files */
	char architecture[MP_GGUF_ARCH_MAX + 1]; /* of the first shard, or "" */
	size_t nproblems;      /* all found; at most MP_SHARDS_MAX_PROBLEMS kept */
	struct mp_error problems[MP_SHARDS_MAX_PROBLEMS];
};

/*
 * Discover and read the set that `shard` belongs to.  *out is NULL only when
 * nothing could be read (the directory, out of memory): err says why.
 * Otherwise *out is the set; each problem found is in (*out)->problems and
 * the first one's code is returned (MP_OK when there is none).
 */
enum mp_err mp_shards_open(const char *shard, struct mp_shard_set **out,
			   struct mp_error *err);
void mp_shards_close(struct mp_shard_set *set);

/*
 * The set's name for messages, in buf: DIR/NAME-NNNNN-of-MMMMM.gguf for a
 * split set, the file given otherwise.  Not escaped.
 */
void mp_shards_name(const struct mp_shard_set *set, const char *given, char *buf,
		    size_t len);

/* Record one more problem (kept if there is room); returns its code. */
enum mp_err mp_shards_problem(struct mp_shard_set *set, enum mp_err code, const char *fmt,
			      ...) __attribute__((format(printf, 3, 4)));

/* The routed experts, as the pack holds them. */
struct mp_experts {
	uint64_t experts;                      /* ne[2] */
	uint64_t hidden;                       /* row length of up and gate */
	uint64_t inter;                        /* row length of down */
	uint64_t role_bytes[MP_ROLE_COUNT];    /* one expert's slice */
	const struct mp_shard_tensor *tensor[MP_ACTIVE_LAST + 1][MP_ROLE_COUNT];
};

/*
 * Check the expert tensors of a set (every problem recorded in set):
 * exactly one blk.N.ffn_{up,gate,down}_exps.weight for N = 1..92, up and
 * gate Q2_K [hidden, inter, experts], down Q3_K [inter, hidden, experts],
 * the same everywhere; attn_k_b Q4_0 and attn_v_b Q2_K wherever present
 * (checked first, the loader's wording); with kimi, Kimi-K3's 896 x 3584 x
 * 3072, otherwise any count up to 65536 and slices that are whole pages.
 * Names are read as mp_k3_layer() reads them (k3names.h), the same as
 * mp_gguf_check_fd(): blk.017.* is no layer's.
 * Returns the first new problem's code, or MP_OK with *ex filled.
 */
enum mp_err mp_shards_experts(struct mp_shard_set *set, bool kimi, struct mp_experts *ex);

/* The model config a pack is built for (its text_config, if any). */
struct mp_model_config {
	uint64_t num_hidden_layers, first_k_dense_replace, num_experts, top_k;
	uint64_t num_shared_experts, hidden_size, routed_expert_hidden_size;
	uint64_t moe_intermediate_size;
	char hidden_act[32];
	char sha256[MP_SHA256_HEX]; /* of the file's bytes */
};

/*
 * Read config.json (at most 16 MiB) and check it, every problem recorded in
 * set: 93 layers, first_k_dense_replace 1, top-k 16, 2 shared experts,
 * hidden_act "situ", and num_experts, routed_expert_hidden_size and
 * moe_intermediate_size those of *ex; with kimi also hidden_size 7168.
 * A file that cannot be read or parsed returns MP_E_CONFIG_IO or
 * MP_E_CONFIG_MISMATCH in err and records nothing.
 */
enum mp_err mp_model_config_check(const char *path, struct mp_shard_set *set, bool kimi,
				  const struct mp_experts *ex, struct mp_model_config *cfg,
				  struct mp_error *err);

#endif
