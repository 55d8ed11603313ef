/*
 * mxfp4.c - MXFP4 blocks to float32, bit-identical to ggml's reference
 * dequantize_row_mxfp4, and the check of their E8M0 scales (mxfp4.h).
 *
 * ggml multiplies each code, an integer made float, by d = 2^(e - 128).
 * Both are exact floats and the product of a power of two and an integer
 * of at most 12 is exact unless it overflows (then IEEE rounding gives
 * +-Inf) - so any order of evaluation, and any vector width, gives ggml's
 * bits.  That leaves the decoder free to be fast: per block the sixteen
 * possible weights are computed once (code * d, as ggml computes them),
 * and each nibble picks its weight from that little table.
 */
#include "config.h"

#include "payload/mxfp4.h"

#include <stdint.h>
#include <stdio.h>

/* ggml's codes: twice the E2M1 value of each nibble (sign in bit 3). */
static const int8_t codes[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/*
 * 2^(e - 128) on the bits, as ggml builds it: e = 0 and 1 are the
 * subnormals 0x00200000 (2^-128) and 0x00400000 (2^-127); from e = 2 on
 * the float's exponent field is e - 1, up to 254 (2^127) for e = 255.
 */
static inline float half_scale(unsigned e)
{
	return mp_bits_float(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

void mp_dequant_mxfp4(const void *src, float *restrict dst, size_t nblocks)
{
	const unsigned char *restrict b = src;

	for (size_t i = 0; i < nblocks; i++, b += MP_MXFP4_BYTES, dst += MP_QK_MXFP4) {
		const float d = half_scale(b[MP_MXFP4_E]);
		const unsigned char *q = b + MP_MXFP4_QS;
		float w[16];

		for (int k = 0; k < 16; k++)
			w[k] = (float)codes[k] * d;
		/* weight j is the low nibble of byte j, weight j + 16 its high one */
		for (int j = 0; j < MP_QK_MXFP4 / 2; j++) {
			dst[j] = w[q[j] & 0xF];
			dst[j + MP_QK_MXFP4 / 2] = w[q[j] >> 4];
		}
	}
}

static void check_mxfp4(const unsigned char *b, size_t nblocks, struct mp_scale_tally *t)
{
	for (size_t i = 0; i < nblocks; i++, b += MP_MXFP4_BYTES, t->blocks++) {
		const unsigned e = b[MP_MXFP4_E];

		if (e != 0)
			t->all_zero = false;
		if (e >= MP_MXFP4_NONFINITE_E && t->nonfinite++ == 0) {
			t->first_block = t->blocks;
			t->first_scale = 0;
			t->first_value = (uint16_t)e;
		}
	}
}

/*
 * "0xfd, weight = code x 2^125: |code| >= 8 is Inf": the scale byte, the
 * power of two ggml multiplies the codes by, and for a non-finite one the
 * smallest code magnitude that overflows (2^(256 - e): 8, 4 or 2).
 */
static void describe_e8m0(char *buf, size_t len, uint16_t raw)
{
	const unsigned e = raw & 0xff;
	int n = snprintf(buf, len, "0x%02x, weight = code x 2^%d", e, (int)e - 128);

	if (e >= MP_MXFP4_NONFINITE_E && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ": |code| >= %u is Inf", 1u << (256 - e));
}

const struct mp_codec mp_codec_mxfp4 = {
	.type = &mp_ggml_types[MP_GGML_MXFP4],
	.decode = mp_dequant_mxfp4,
	.check_scales = check_mxfp4,
	.describe_scale = describe_e8m0,
	.nscales = 1,
	.scales = {{"e", MP_MXFP4_E, 1}},
	.zero_scales_per_role = true,
};
