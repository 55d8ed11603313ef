/*
 * pyrandom.h - the sample Python's random module draws, bit for bit.
 *
 * SGLang's offline validator picks the source slices it compares with
 * random.Random(seed).sample(entries, n).  To compare the same slices,
 * this is CPython's generator: MT19937 seeded from an integer as
 * random.seed() does (init_by_array over the integer's 32-bit words,
 * least significant first), getrandbits(), _randbelow() by rejection, and
 * sample()'s two methods (a shrinking pool for small populations, a set of
 * picks otherwise).  Checked against python3 3.11 in tests/check_expertpack.c.
 */
#ifndef MOEPACK_PYRANDOM_H
#define MOEPACK_PYRANDOM_H

#include <stdint.h>

#define MP_MT_N 624

struct mp_pyrandom {
	uint32_t mt[MP_MT_N];
	unsigned mti;
};

/* random.Random(seed) for a non-negative integer seed below 2^64. */
void mp_pyrandom_seed(struct mp_pyrandom *r, uint64_t seed);
/* The next 32 bits of MT19937 (CPython's genrand_uint32). */
uint32_t mp_pyrandom_u32(struct mp_pyrandom *r);
/* getrandbits(k), 1 <= k <= 64. */
uint64_t mp_pyrandom_bits(struct mp_pyrandom *r, unsigned k);
/* _randbelow(n): uniform in [0, n), n >= 1. */
uint64_t mp_pyrandom_below(struct mp_pyrandom *r, uint64_t n);

/*
 * sample(range(n), k) into out[0..k): k distinct numbers below n, in the
 * order Python returns them.  k <= n.  Memory is O(k), never O(n) (when n
 * is small enough for the pool method, n is at most 12k + 21).  Returns 0,
 * or -1 when out of memory.  Python decides between its methods with a
 * floating-point logarithm; the integer form here agrees for k < 2^40.
 */
int mp_pyrandom_sample(struct mp_pyrandom *r, uint64_t n, uint64_t k, uint64_t *out);

#endif
