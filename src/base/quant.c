/*
 * quant.c - GGML quant type table, demo block generator, fp16 conversion.
 *
 * The demo generator exists so that packs written by `moepack mkdemo` hold
 * blocks a ggml dequantizer turns into finite numbers, while costing almost
 * nothing to produce: benchmarks fill many gigabytes with it.
 */
#include "config.h"

#include "base/quant.h"

#include <string.h>

static const struct mp_quant_type quant_types[] = {
	{"Q4_0", MP_GGML_Q4_0, 32, 18},
	{"Q4_1", MP_GGML_Q4_1, 32, 20},
	{"Q5_0", MP_GGML_Q5_0, 32, 22},
	{"Q5_1", MP_GGML_Q5_1, 32, 24},
	{"Q8_0", MP_GGML_Q8_0, 32, 34},
	{"Q2_K", MP_GGML_Q2_K, 256, 84},
	{"Q3_K", MP_GGML_Q3_K, 256, 110},
	{"Q4_K", MP_GGML_Q4_K, 256, 144},
	{"Q5_K", MP_GGML_Q5_K, 256, 176},
	{"Q6_K", MP_GGML_Q6_K, 256, 210},
	{"Q8_K", MP_GGML_Q8_K, 256, 292},
};

#define QUANT_TYPE_COUNT (sizeof quant_types / sizeof quant_types[0])

const struct mp_quant_type *mp_quant_by_id(int id)
{
	for (size_t i = 0; i < QUANT_TYPE_COUNT; i++)
		if (quant_types[i].id == id)
			return &quant_types[i];
	return NULL;
}

const struct mp_quant_type *mp_quant_by_name(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < QUANT_TYPE_COUNT; i++)
		if (strcmp(quant_types[i].name, name) == 0)
			return &quant_types[i];
	return NULL;
}

uint64_t mp_quant_bytes(const struct mp_quant_type *t, uint64_t weights)
{
	uint64_t bytes;

	if (!t || weights % t->block_weights != 0)
		return 0;
	if (__builtin_mul_overflow(weights / t->block_weights,
				   (uint64_t)t->block_bytes, &bytes))
		return 0;
	return bytes;
}

/* Byte layout of the two k-quant blocks we generate (ggml's block_q2_K and
 * block_q3_K, QK_K = 256). */
#define Q2K_SCALES 16
#define Q2K_QS 64
#define Q2K_D (Q2K_SCALES + Q2K_QS)      /* fp16 d, then fp16 dmin */
#define Q3K_HMASK 32
#define Q3K_QS 64
#define Q3K_SCALES 12
#define Q3K_D (Q3K_HMASK + Q3K_QS + Q3K_SCALES)

static inline uint64_t splitmix64_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t mp_splitmix64(uint64_t x)
{
	return splitmix64_next(&x);
}

/* Bytes come out the same on every host: the stream is defined as
 * little-endian words. */
static inline void store_le64(unsigned char *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, 8);
}

static inline void store_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

/* Fill n bytes (a multiple of 8 or not) with the generator's output. */
static inline void fill_random(unsigned char *p, size_t n, uint64_t *state)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		store_le64(p + i, splitmix64_next(state));
	if (i < n) {
		unsigned char tail[8];

		store_le64(tail, splitmix64_next(state));
		memcpy(p + i, tail, n - i);
	}
}

/*
 * A positive normal fp16 in [2^-10, 2^-6): exponent field 5..8, any
 * mantissa.  Scales this small keep every dequantized weight finite and far
 * from fp16 overflow whatever the quants are.
 */
static inline uint16_t demo_scale(uint64_t bits)
{
	return (uint16_t)(((5 + (bits & 3)) << 10) | ((bits >> 2) & 0x3ff));
}

int mp_quant_fill_demo(const struct mp_quant_type *t, uint64_t seed,
		       uint64_t stream_pos, void *buf, size_t nbytes)
{
	unsigned char *p = buf;
	uint64_t block;
	size_t bb;

	if (!t || (t->id != MP_GGML_Q2_K && t->id != MP_GGML_Q3_K))
		return -1;
	bb = t->block_bytes;
	if (nbytes % bb != 0 || stream_pos % bb != 0)
		return -1;
	block = stream_pos / bb;

	for (size_t off = 0; off < nbytes; off += bb, block++) {
		/* Seeding per block makes any block computable on its own. */
		uint64_t state = seed ^ (block * 0xd1342543de82ef95ULL);
		unsigned char *b = p + off;
		uint64_t scale_bits;

		(void)splitmix64_next(&state);
		if (t->id == MP_GGML_Q2_K) {
			fill_random(b, Q2K_D, &state);
			scale_bits = splitmix64_next(&state);
			store_le16(b + Q2K_D, demo_scale(scale_bits));
			store_le16(b + Q2K_D + 2, demo_scale(scale_bits >> 16));
		} else {
			fill_random(b, Q3K_D, &state);
			scale_bits = splitmix64_next(&state);
			store_le16(b + Q3K_D, demo_scale(scale_bits));
		}
	}
	return 0;
}

static inline uint32_t float_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

static inline float bits_float(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

float mp_fp16_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff;

	if (exp == 0x1f) /* inf or NaN; keep the NaN payload's top bits */
		return bits_float(sign | 0x7f800000u | (mant << 13));
	if (exp == 0) {
		/* zero or subnormal: mant * 2^-24, exact in float */
		float v = (float)mant * bits_float(0x33800000u);

		return sign ? -v : v;
	}
	return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t mp_float_to_fp16(float f)
{
	uint32_t u = float_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t exp = (u >> 23) & 0xff;
	uint32_t mant = u & 0x7fffff;
	int e;

	if (exp == 0xff) /* inf stays inf; NaN stays a quiet NaN */
		return sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0);

	e = (int)exp - 127 + 15;
	if (e >= 0x1f)
		return sign | 0x7c00;
	if (e <= 0) {
		/* Subnormal half (or zero): shift the full significand down,
		 * rounding to nearest even. */
		uint32_t shift, full, half_mant, rem, halfway;

		if (e < -10)
			return sign;
		full = mant | 0x800000;
		shift = (uint32_t)(14 - e);
		half_mant = full >> shift;
		rem = full & ((1u << shift) - 1);
		halfway = 1u << (shift - 1);
		if (rem > halfway || (rem == halfway && (half_mant & 1)))
			half_mant++;
		/* A carry into bit 10 correctly yields the smallest normal. */
		return sign | (uint16_t)half_mant;
	}
	{
		uint32_t half = ((uint32_t)e << 10) | (mant >> 13);
		uint32_t rem = mant & 0x1fff;

		/* A carry out of the mantissa bumps the exponent, and past the
		 * largest finite value becomes inf: both are right. */
		if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
			half++;
		return sign | (uint16_t)half;
	}
}
