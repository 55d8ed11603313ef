/*
 * ephash.h - what SGLang's expert-pack builder hashes before it writes: the
 * source GGUF's digest, its metadata's, every tensor's and every routed
 * slice's, in one pass over the file.
 */
#ifndef MOEPACK_EPHASH_H
#define MOEPACK_EPHASH_H

#include "base/cancel.h"
#include "base/errors.h"
#include "pack/digest.h"
#include "writer/expertpack/plan.h"

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
 * MP_E_INTERRUPTED when a stop was asked through cancel (may be NULL),
 * between chunks.
 */
enum mp_err mp_epw_hash_source(struct mp_epw_plan *plan, struct mp_epw_digests *d,
			       const struct mp_cancel *cancel, struct mp_error *err);

#endif
