/*
 * epopts.h - what an expert-pack build is asked for and what it reports
 * (epwrite.h builds; its phases share these without including it).
 */
#ifndef MOEPACK_EPOPTS_H
#define MOEPACK_EPOPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/cancel.h"
#include "base/progress_fn.h"
#include "pack/digest.h"

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
	/* A stop asked (the caller's signal handler): looked at by every loop
	 * that copies, hashes or compares, the final check's included, and
	 * once more before the rename; PACK.partial is kept for --resume.
	 * May be NULL. */
	const struct mp_cancel *cancel;
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

#endif
