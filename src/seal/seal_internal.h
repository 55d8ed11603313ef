/*
 * seal_internal.h - what the seal module's own files share and nothing
 * outside src/seal/ may use: seal.c (the chunk layout), sealfile.c (the
 * file) and sealhash.c (hashing and checking on threads).
 */
#ifndef MP_SEAL_INTERNAL_H
#define MP_SEAL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

struct mp_seal_layout;

/* True when c is a chunk size a seal may have: a power of two in
 * [MP_SEAL_MIN_CHUNK, MP_SEAL_MAX_CHUNK]. */
bool mp_seal_chunk_size_ok(uint64_t c);

/* a / b rounded up; b > 0. */
uint64_t mp_seal_div_up(uint64_t a, uint64_t b);

/* How many chunks of the layout are roles'. */
uint64_t mp_seal_role_chunks(const struct mp_seal_layout *l);

#endif
