/*
 * build.h - `moepack build`: build an expert pack and its manifest from a GGUF shard set.
 *
 * The pack is the reference builder's, byte for byte: the layout of
 * layout.h's mp_layout at alignment 4096 (header, entries, zeros up to
 * data_start, then every object up|gate|down), each payload copied verbatim
 * from its GGUF slice.  The manifest carries every key the reference
 * manifest tool writes, with the same values.
 */
#ifndef MOEPACK_BUILD_H
#define MOEPACK_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "writer/kimi/layout.h"
#include "base/errors.h"
#include "pack/pack.h"
#include "writer/builder.h"
#include "writer/kimi/shards.h"

#define MP_BUILD_DEFAULT_SAMPLES 6

struct mp_gguf_build_opts {
	const char *config_path;   /* the HF config.json given */
	const char *out;           /* NULL: <dir>/<prefix>.expert-major.pack */
	const char *manifest;      /* NULL: <pack>.manifest.json */
	const char *tokenizer_dir; /* NULL: no tokenizer block */
	bool kimi;                 /* Kimi-K3 geometry (not --any-geometry) */
	bool full_sha256;          /* hash the pack while writing it */
	bool compare_all;          /* compare every payload byte afterwards */
	uint64_t samples;          /* entries compared otherwise */
	bool check_only;           /* judge an existing pack, write nothing */
	bool resume;               /* continue PACK.partial */
	bool force;                /* replace an existing file that is not a
	                              pack (manifest, seal) at an output name */
	uint64_t margin;           /* free space wanted beyond the pack */
	mp_progress_fn progress;   /* may be NULL */
	void *progress_arg;
	/* A stop asked (the caller's signal handler): looked at by every loop
	 * that copies, hashes or compares, the final check's included; the
	 * build ends with MP_E_INTERRUPTED, what it wrote kept for --resume
	 * when the copy had begun.  May be NULL. */
	const struct mp_cancel *cancel;
};

struct mp_gguf_build_result {
	char *pack_path;
	char *manifest_path;
	uint64_t size;
	uint64_t entries;
	uint64_t objects_copied;   /* by this run */
	uint64_t bytes_copied;     /* payload bytes copied by this run */
	uint64_t resumed_at;       /* objects already in PACK.partial */
	uint64_t samples_compared; /* entries compared with their slices */
	bool sampled;              /* samples only: not every byte compared */
	bool reused;               /* a valid pack was there already, every
	                              byte of it compared with the shards */
	uint64_t chunks_checked;   /* --resume: chunks of PACK.partial checked */
	uint64_t chunks_recopied;  /* --resume: of those, copied again */
	double seconds;            /* writing the pack */
	char index_sha256[MP_SHA256_HEX];
	char inventory_sha256[MP_SHA256_HEX];
	char sha256[MP_SHA256_HEX]; /* "" without --full-sha256 */
	char seal_digest[MP_SHA256_HEX]; /* of PACK.seal; "" when none written */
	bool seal_unanchored;      /* no --full-sha256: the seal is unanchored */
	char notice[MP_MSG_MAX];   /* --resume: why it started over, or "" */
	char detail[MP_MSG_MAX];    /* --check-only: why the pack is invalid */
};

/*
 * Build (or with check_only, judge) the pack of a checked set.  On success
 * the pack and manifest exist under their names and the pack has passed
 * mp_pack_open() and the payload comparison.  Nothing this run wrote is
 * left under the final names on failure (but a pack that a signal stopped
 * after the rename and that cannot be renamed back).  PACK.partial (with
 * its state and digests, for --resume) is kept when a signal stopped the
 * build (MP_E_INTERRUPTED; after the rename, the pack goes back to
 * PACK.partial), and on every failure of a build that resumed it; only a
 * resume point that is not trusted (another shard set or layout,
 * a shard changed, not the file the state names) starts over and removes
 * it.  A PACK.partial this run created is removed on any other failure.
 * The message of a failure that keeps it says so.  With check_only,
 * MP_OK means the pack is valid and MP_E_PACK_LAYOUT / MP_E_PAYLOAD_MISMATCH
 * / MP_E_PACK_IO that it is not.  res->pack_path and manifest_path are set
 * as soon as known and freed with mp_gguf_build_result_free().
 */
enum mp_err mp_gguf_build(const struct mp_shard_set *set, const struct mp_experts *ex,
			  const struct mp_model_config *cfg,
			  const struct mp_gguf_build_opts *opts, struct mp_gguf_build_result *res,
			  struct mp_error *err);
void mp_gguf_build_result_free(struct mp_gguf_build_result *res);

/*
 * Entry index of payload sample i of n among count entries, as the
 * reference picks them: round(i * (count - 1) / (n - 1)), halves to even.
 */
uint64_t mp_build_sample_index(uint64_t i, uint64_t count, uint64_t n);


#endif
