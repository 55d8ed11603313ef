/*
 * seal_internal.h - what the seal module's own files share and nothing
 * outside src/seal/ may use: seal.c (the chunk layout), sealfile.c (the
 * file), sealhash.c (hashing and checking on threads) and zeros.c (the
 * digest of a chunk in a hole, for sealhash.c and entryseal.c).
 */
#ifndef MP_SEAL_INTERNAL_H
#define MP_SEAL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pack/digest.h"

struct mp_seal_layout;

/* True when c is a chunk size a seal may have: a power of two in
 * [MP_SEAL_MIN_CHUNK, MP_SEAL_MAX_CHUNK]. */
bool mp_seal_chunk_size_ok(uint64_t c);

/* a / b rounded up; b > 0. */
uint64_t mp_seal_div_up(uint64_t a, uint64_t b);

/* How many chunks of the layout are roles'. */
uint64_t mp_seal_role_chunks(const struct mp_seal_layout *l);

/* The SHA-256 of len zero bytes for the last MP_SEAL_ZERO_LENS lengths
 * asked (a pack's chunks have a few lengths); zero-initialised, one per
 * thread. */
#define MP_SEAL_ZERO_LENS 8u
struct mp_seal_zeros {
	uint64_t len[MP_SEAL_ZERO_LENS];
	unsigned char d[MP_SEAL_ZERO_LENS][MP_SHA256_LEN];
	unsigned n;
};

/* The SHA-256 of len zero bytes into out: remembered, or hashed with h
 * through buf (bufsize bytes, overwritten with zeros). */
void mp_seal_zeros_digest(struct mp_seal_zeros *z, struct mp_sha256 *h, unsigned char *buf,
			  size_t bufsize, uint64_t len, unsigned char out[MP_SHA256_LEN]);

#endif
