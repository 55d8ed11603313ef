/*
 * epwrite.h - `moepack build` and `mkdemo` for SGLang's expert pack
 * (SGLANG-EXPERTPACK-v1): the pack and manifest SGLang's reference builder
 * (build.py, driven by prepare_deepseek_pack.py) makes of a DeepSeek-V4-Flash
 * GGUF, byte for byte.
 *
 * The pack is header, zeros up to data_start, objects (l*E + e) of gate,
 * up, down, each its expert's contiguous slice of the routed tensor copied
 * unchanged, zeros to the stride, and the index (written last) at 176.
 * The manifest is json.dumps(indent=2, sort_keys=True, ensure_ascii=False)
 * text with every key the reference writes; where a value describes the
 * reference tool (created_at, builder.*, transform.tool_sha256) it
 * describes moepack instead.
 *
 * Safety, as the Kimi build: outputs are checked against the inputs and
 * each other (outputs.h), opened without following links; the pack is
 * written as PACK.partial, kept for --resume only when a signal stopped the
 * copy, and renamed over PACK only after mp_ep_open() has passed it with
 * every check: the whole-file digest, every entry's checksum, every slice
 * compared with the GGUF and the GGUF's own digests.  The manifest follows
 * through a temporary and a rename.
 */
#ifndef MOEPACK_EPWRITE_H
#define MOEPACK_EPWRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "base/progress_fn.h"
#include "pack/digest.h"
#include "writer/epplan.h"

#define MP_EPW_DEFAULT_NAME "DeepSeek-V4-Flash.expert-pack" /* beside the GGUF */
#define MP_EPW_DEFAULT_REF "deepseek-v4-flash"

struct mp_epw_opts {
	const char *gguf_path, *config_path; /* as given (the plan's inputs) */
	const char *out;        /* NULL: MP_EPW_DEFAULT_NAME beside the GGUF */
	const char *manifest;   /* NULL: <pack>.manifest.json */
	const char *model_ref;  /* NULL: MP_EPW_DEFAULT_REF */
	const char *command;    /* builder.command: the argv joined by spaces */
	bool resume;            /* continue PACK.partial */
	bool force;             /* replace an existing PACK and manifest */
	uint64_t margin;        /* free space wanted beyond the pack */
	mp_progress_fn progress; /* objects done of all; may be NULL */
	void *progress_arg;
};

struct mp_epw_result {
	char *pack_path, *manifest_path; /* as written (malloc'd) */
	uint64_t size, entries, objects;
	uint64_t objects_copied;  /* written by this run */
	uint64_t objects_kept;    /* --resume: found right in PACK.partial */
	uint64_t bytes_copied;
	double seconds;
	char pack_sha256[MP_SHA256_HEX], index_sha256[MP_SHA256_HEX];
	char inventory_sha256[MP_SHA256_HEX];
};

/* What the builder hashes before it writes: the GGUF's digests, every
 * tensor's (into plan->tensors[].sha256) and every slice's. */
struct mp_epw_digests {
	unsigned char source[MP_SHA256_LEN];   /* the whole GGUF file */
	unsigned char metadata[MP_SHA256_LEN]; /* its bytes [0, data offset) */
	unsigned char model[MP_SHA256_LEN];    /* model_identity_sha256 */
	unsigned char *slice;  /* index_count digests, entry order (malloc'd) */
};

/*
 * One pass over the GGUF: the digests above.  MP_E_GGUF_IO on a read
 * failure; the file must still be plan->gguf_size bytes long.
 */
enum mp_err mp_epw_hash_source(struct mp_epw_plan *plan, struct mp_epw_digests *d,
			       struct mp_error *err);

/*
 * Build the pack and manifest of a checked plan.  MP_OK: both exist under
 * their names and passed the checks above.  MP_E_USAGE for outputs that
 * alias inputs, exist (without force) or are links; MP_E_INTERRUPTED when
 * mp_gguf_build_interrupt() stopped the copy at a layer boundary (PACK.partial
 * kept, synced); MP_E_NO_SPACE, MP_E_PACK_IO, MP_E_GGUF_IO, or the code of
 * the check the written pack failed.  res freed with mp_epw_result_free().
 */
enum mp_err mp_epw_build(struct mp_epw_plan *plan, const struct mp_epw_opts *opts,
			 struct mp_epw_result *res, struct mp_error *err);
void mp_epw_result_free(struct mp_epw_result *res);

#endif
