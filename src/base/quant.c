/*
 * quant.c - GGML quant type table, demo block generator, fp16 conversion.
 *
 * The demo generator exists so that packs written by `moepack mkdemo` hold
 * blocks a ggml dequantizer turns into finite numbers, while costing almost
 * nothing to produce: benchmarks fill many gigabytes with it.
 */
#include "config.h"

#include "base/quant.h"

#include "base/le.h"

#include <string.h>

/* Name, weights and bytes per block, and whether a pack may hold it, of
 * every id ggml 0.23.0 knows, one row each; the ids of removed types have
 * a block size of 0, as ggml refuses their tensors. */
#define T(id, name, weights, bytes, pack) [id] = {name, id, weights, bytes, pack}
const struct mp_quant_type mp_ggml_types[MP_GGML_TYPE_COUNT] = {
	T(0, "F32", 1, 4, false),
	T(1, "F16", 1, 2, false),
	T(2, "Q4_0", 32, 18, true),
	T(3, "Q4_1", 32, 20, true),
	T(4, "Q4_2", 0, 0, false),
	T(5, "Q4_3", 0, 0, false),
	T(6, "Q5_0", 32, 22, true),
	T(7, "Q5_1", 32, 24, true),
	T(8, "Q8_0", 32, 34, true),
	T(9, "Q8_1", 32, 36, false),
	T(10, "Q2_K", MP_QK_K, MP_Q2K_BYTES, true),
	T(11, "Q3_K", MP_QK_K, MP_Q3K_BYTES, true),
	T(12, "Q4_K", 256, 144, true),
	T(13, "Q5_K", 256, 176, true),
	T(14, "Q6_K", 256, 210, true),
	T(15, "Q8_K", 256, 292, true),
	T(16, "IQ2_XXS", 256, 66, false),
	T(17, "IQ2_XS", 256, 74, false),
	T(18, "IQ3_XXS", 256, 98, false),
	T(19, "IQ1_S", 256, 50, false),
	T(20, "IQ4_NL", 32, 18, false),
	T(21, "IQ3_S", 256, 110, false),
	T(22, "IQ2_S", 256, 82, false),
	T(23, "IQ4_XS", 256, 136, false),
	T(24, "I8", 1, 1, false),
	T(25, "I16", 1, 2, false),
	T(26, "I32", 1, 4, false),
	T(27, "I64", 1, 8, false),
	T(28, "F64", 1, 8, false),
	T(29, "IQ1_M", 256, 56, false),
	T(30, "BF16", 1, 2, false),
	T(31, "Q4_0_4_4", 0, 0, false),
	T(32, "Q4_0_4_8", 0, 0, false),
	T(33, "Q4_0_8_8", 0, 0, false),
	T(34, "TQ1_0", 256, 54, false),
	T(35, "TQ2_0", 256, 66, false),
	T(36, "IQ4_NL_4_4", 0, 0, false),
	T(37, "IQ4_NL_4_8", 0, 0, false),
	T(38, "IQ4_NL_8_8", 0, 0, false),
	T(39, "MXFP4", MP_QK_MXFP4, MP_MXFP4_BYTES, true),
	T(40, "NVFP4", 64, 36, false),
	T(41, "Q1_0", 128, 18, false),
	T(42, "Q2_0", 64, 18, false),
};
#undef T

const struct mp_quant_type *mp_ggml_type(uint32_t id)
{
	return id < MP_GGML_TYPE_COUNT ? &mp_ggml_types[id] : NULL;
}

const struct mp_quant_type *mp_quant_by_id(int id)
{
	const struct mp_quant_type *t = id >= 0 ? mp_ggml_type((uint32_t)id) : NULL;

	return t && t->pack ? t : NULL;
}

const struct mp_quant_type *mp_quant_by_name(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < MP_GGML_TYPE_COUNT; i++)
		if (mp_ggml_types[i].pack && strcmp(mp_ggml_types[i].name, name) == 0)
			return &mp_ggml_types[i];
	return NULL;
}

uint64_t mp_quant_bytes(const struct mp_quant_type *t, uint64_t weights)
{
	uint64_t bytes;

	if (!t || t->block_weights == 0 || weights % t->block_weights != 0)
		return 0;
	if (__builtin_mul_overflow(weights / t->block_weights,
				   (uint64_t)t->block_bytes, &bytes))
		return 0;
	return bytes;
}

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

/* Fill n bytes (a multiple of 8 or not) with the generator's output, as
 * little-endian words: the same bytes on every host. */
static inline void fill_random(unsigned char *p, size_t n, uint64_t *state)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		mp_put_le64(p + i, splitmix64_next(state));
	if (i < n) {
		unsigned char tail[8];

		mp_put_le64(tail, splitmix64_next(state));
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

/* An E8M0 scale byte of 118 to 125: ggml's weights are code * 2^(e - 128),
 * so at most 12 * 2^-3 = 1.5, and never below 2^-10 for a non-zero code. */
static inline unsigned char demo_e8m0(uint64_t bits)
{
	return (unsigned char)(118 + (bits & 7));
}

/* One demo block of type t at b, from its own generator state. */
static void fill_demo_block(const struct mp_quant_type *t, unsigned char *b, uint64_t state)
{
	uint64_t scale_bits;

	(void)splitmix64_next(&state);
	switch (t->id) {
	case MP_GGML_Q2_K:
		fill_random(b, MP_Q2K_D, &state);
		scale_bits = splitmix64_next(&state);
		mp_put_le16(b + MP_Q2K_D, demo_scale(scale_bits));
		mp_put_le16(b + MP_Q2K_DMIN, demo_scale(scale_bits >> 16));
		break;
	case MP_GGML_Q3_K:
		fill_random(b, MP_Q3K_D, &state);
		scale_bits = splitmix64_next(&state);
		mp_put_le16(b + MP_Q3K_D, demo_scale(scale_bits));
		break;
	default: /* MXFP4 */
		fill_random(b + MP_MXFP4_QS, MP_MXFP4_BYTES - MP_MXFP4_QS, &state);
		b[MP_MXFP4_E] = demo_e8m0(splitmix64_next(&state));
		break;
	}
}

int mp_quant_fill_demo(const struct mp_quant_type *t, uint64_t seed,
		       uint64_t stream_pos, void *buf, size_t nbytes)
{
	unsigned char *p = buf;
	uint64_t block;
	size_t bb;

	if (!t || (t->id != MP_GGML_Q2_K && t->id != MP_GGML_Q3_K && t->id != MP_GGML_MXFP4))
		return -1;
	bb = t->block_bytes;
	if (nbytes % bb != 0 || stream_pos % bb != 0)
		return -1;
	block = stream_pos / bb;
	/* Seeding per block makes any block computable on its own. */
	for (size_t off = 0; off < nbytes; off += bb, block++)
		fill_demo_block(t, p + off, seed ^ (block * 0xd1342543de82ef95ULL));
	return 0;
}

float mp_fp16_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff;

	if (exp == 0x1f) /* inf or NaN; keep the NaN payload's top bits */
		return mp_bits_float(sign | 0x7f800000u | (mant << 13));
	if (exp == 0) {
		/* zero or subnormal: mant * 2^-24, exact in float */
		float v = (float)mant * mp_bits_float(0x33800000u);

		return sign ? -v : v;
	}
	return mp_bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

