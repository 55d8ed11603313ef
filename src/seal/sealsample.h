/*
 * sealsample.h - is a seal about these bytes at all?
 *
 * mp_seal_bind() compares what a seal says of the pack: its size, its
 * index digest, its anchoring.  Two packs of the same geometry share all
 * of that when their manifests carry no expert_pack.sha256 (so their
 * seals are unanchored): a seal of one then binds to the other, and every
 * read of the mount fails.  So before such a seal is used, the first
 * chunk of a few objects spread over the pack is hashed: when none of
 * them matches, the seal is another pack's and is refused.  One that
 * matches is enough to go on: a pack with a few damaged chunks is still
 * this seal's, and those chunks fail when they are read.
 */
#ifndef MOEPACK_SEALSAMPLE_H
#define MOEPACK_SEALSAMPLE_H

#include "base/errors.h"
#include "pack/pack.h"
#include "seal/seal.h"

/* Objects whose first chunk is hashed (all of them in a smaller pack). */
#define MP_SEAL_SAMPLES 8

/*
 * Hash the first chunk of up to MP_SEAL_SAMPLES objects of the pack open
 * as fd, spread from the first to the last.  MP_OK when one matches the
 * seal; MP_E_SEAL_MISMATCH when none does; MP_E_PACK_IO when the pack
 * cannot be read; MP_E_NOMEM.
 */
enum mp_err mp_seal_sample(const struct mp_seal *s, const struct mp_seal_layout *l,
			   const struct mp_pack *pack, int fd, struct mp_error *err);

#endif
