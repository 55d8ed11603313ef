/* pyrandom.c - CPython's Mersenne Twister, getrandbits() and sample(). */
#include "config.h"

#include "pack/expertpack/pyrandom.h"

#include <stdbool.h>
#include <stdlib.h>

#include "base/u64map.h"

#define MT_M 397
#define MATRIX_A 0x9908b0dfu
#define UPPER_MASK 0x80000000u
#define LOWER_MASK 0x7fffffffu

static void init_genrand(struct mp_pyrandom *r, uint32_t s)
{
	r->mt[0] = s;
	for (unsigned i = 1; i < MP_MT_N; i++)
		r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + i;
	r->mti = MP_MT_N;
}

/* MT19937's init_by_array, as CPython's random_seed() calls it. */
static void init_by_array(struct mp_pyrandom *r, const uint32_t *key, unsigned len)
{
	unsigned i = 1, j = 0, k;

	init_genrand(r, 19650218u);
	for (k = MP_MT_N > len ? MP_MT_N : len; k; k--) {
		r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1664525u)) +
			   key[j] + j;
		if (++i >= MP_MT_N) {
			r->mt[0] = r->mt[MP_MT_N - 1];
			i = 1;
		}
		if (++j >= len)
			j = 0;
	}
	for (k = MP_MT_N - 1; k; k--) {
		r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1566083941u)) - i;
		if (++i >= MP_MT_N) {
			r->mt[0] = r->mt[MP_MT_N - 1];
			i = 1;
		}
	}
	r->mt[0] = 0x80000000u; /* MSB is 1, assuring a non-zero initial array */
}

void mp_pyrandom_seed(struct mp_pyrandom *r, uint64_t seed)
{
	/* The integer's 32-bit words, least significant first; 0 is one word. */
	uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};

	init_by_array(r, key, key[1] ? 2 : 1);
}

static uint32_t twist(const uint32_t *mt, unsigned a, unsigned b, unsigned c)
{
	uint32_t y = (mt[a] & UPPER_MASK) | (mt[b] & LOWER_MASK);

	return mt[c] ^ (y >> 1) ^ ((y & 1u) ? MATRIX_A : 0u);
}

uint32_t mp_pyrandom_u32(struct mp_pyrandom *r)
{
	uint32_t y;

	if (r->mti >= MP_MT_N) {
		unsigned kk;

		for (kk = 0; kk < MP_MT_N - MT_M; kk++)
			r->mt[kk] = twist(r->mt, kk, kk + 1, kk + MT_M);
		for (; kk < MP_MT_N - 1; kk++)
			r->mt[kk] = twist(r->mt, kk, kk + 1, kk + MT_M - MP_MT_N);
		r->mt[MP_MT_N - 1] = twist(r->mt, MP_MT_N - 1, 0, MT_M - 1);
		r->mti = 0;
	}
	y = r->mt[r->mti++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	return y ^ (y >> 18);
}

uint64_t mp_pyrandom_bits(struct mp_pyrandom *r, unsigned k)
{
	uint64_t low;

	if (k <= 32)
		return mp_pyrandom_u32(r) >> (32 - k);
	/* CPython fills 32-bit words from the least significant one up and
	 * drops the low bits of the last word. */
	low = mp_pyrandom_u32(r);
	return low | (uint64_t)(mp_pyrandom_u32(r) >> (64 - k)) << 32;
}

uint64_t mp_pyrandom_below(struct mp_pyrandom *r, uint64_t n)
{
	unsigned k = 64 - (unsigned)__builtin_clzll(n); /* n.bit_length() */
	uint64_t v;

	do
		v = mp_pyrandom_bits(r, k);
	while (v >= n);
	return v;
}

/* Python's setsize: 21, plus 4^ceil(log4(3k)) when k > 5. */
static uint64_t set_size(uint64_t k)
{
	uint64_t p = 1;

	if (k <= 5)
		return 21;
	/* 3k is never a power of 4, so ceil(log4(3k)) is the least m with
	 * 4^m > 3k. */
	while (p <= 3 * k)
		p *= 4;
	return 21 + p;
}

static int sample_pool(struct mp_pyrandom *r, uint64_t n, uint64_t k, uint64_t *out)
{
	uint64_t *pool = malloc((size_t)n * sizeof *pool);

	if (!pool)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		pool[i] = i;
	for (uint64_t i = 0; i < k; i++) {
		uint64_t j = mp_pyrandom_below(r, n - i);

		out[i] = pool[j];
		pool[j] = pool[n - i - 1];
	}
	free(pool);
	return 0;
}

static int sample_set(struct mp_pyrandom *r, uint64_t n, uint64_t k, uint64_t *out)
{
	struct mp_u64map selected = MP_U64MAP_INIT;
	int rc = 0;

	for (uint64_t i = 0; i < k && rc == 0; i++) {
		bool fresh = false;
		uint64_t j;

		do {
			j = mp_pyrandom_below(r, n);
			if (!mp_u64map_put(&selected, j, &fresh))
				rc = -1;
		} while (rc == 0 && !fresh);
		out[i] = j;
	}
	mp_u64map_free(&selected);
	return rc;
}

int mp_pyrandom_sample(struct mp_pyrandom *r, uint64_t n, uint64_t k, uint64_t *out)
{
	if (k > n)
		return -1;
	return n <= set_size(k) ? sample_pool(r, n, k, out) : sample_set(r, n, k, out);
}
