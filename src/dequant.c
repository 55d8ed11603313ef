/*
 * dequant.c - Q2_K and Q3_K super-blocks to float32, bit-identical to
 * ggml's reference dequantizers.
 *
 * Bit-identity rests on doing exactly ggml's float operations in its order:
 * the sub-block scale is d * (float)sc, rounded to float, before it meets
 * the quant; Q2_K's minimum is dmin * (float)m, rounded, then subtracted.
 * Nothing may fuse a multiply and an add: the library is built as ISO C11,
 * where GCC does not contract floating-point expressions (-ffp-contract=off
 * is its ISO default), and no -ffast-math.
 */
#include "config.h"

#include "dequant.h"

#include <string.h>

static inline uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

bool mp_dequant_supported(const struct mp_quant_type *t)
{
	return t && (t->id == MP_GGML_Q2_K || t->id == MP_GGML_Q3_K);
}

/* restrict: dst never overlaps the blocks, and saying so lets the compiler
 * vectorize the 16-weight loops without run-time overlap checks. */
void mp_dequant_q2_k(const void *src, float *restrict dst, size_t nblocks)
{
	const unsigned char *restrict b = src;

	for (size_t i = 0; i < nblocks; i++, b += MP_Q2K_BYTES) {
		const float d = mp_fp16_to_float(le16(b + MP_Q2K_D));
		const float min = mp_fp16_to_float(le16(b + MP_Q2K_DMIN));
		const unsigned char *sc = b + MP_Q2K_SCALES;
		const unsigned char *q = b + MP_Q2K_QS;

		/* Two halves of 128 weights, each from 32 quant bytes read four
		 * times at shifts 0, 2, 4, 6; each pass fills two sub-blocks of
		 * 16 weights with their own scale byte. */
		for (int half = 0; half < 2; half++, q += 32) {
			for (int shift = 0; shift < 8; shift += 2) {
				for (int part = 0; part < 2; part++) {
					const unsigned s = *sc++;
					const float dl = d * (float)(s & 0xF);
					const float ml = min * (float)(s >> 4);
					const unsigned char *qq = q + 16 * part;

					for (int l = 0; l < 16; l++)
						*dst++ = dl * (float)((qq[l] >> shift) & 3) - ml;
				}
			}
		}
	}
}

/* Scale k (0..15) of a Q3_K block: the low four bits come from bytes 0..7
 * (low nibbles for k < 8, high nibbles after), the top two from bytes
 * 8..11, two bits per group of four scales. */
static inline int q3k_scale(const unsigned char *s, int k)
{
	unsigned low = k < 8 ? s[k] & 0xF : s[k - 8] >> 4;
	unsigned high = (s[8 + (k & 3)] >> (2 * (k >> 2))) & 3;

	return (int)(low | high << 4) - 32;
}

void mp_dequant_q3_k(const void *src, float *restrict dst, size_t nblocks)
{
	const unsigned char *restrict b = src;

	for (size_t i = 0; i < nblocks; i++, b += MP_Q3K_BYTES) {
		const float d_all = mp_fp16_to_float(le16(b + MP_Q3K_D));
		const unsigned char *hm = b + MP_Q3K_HMASK;
		const unsigned char *q = b + MP_Q3K_QS;
		int scales[16];
		int is = 0, bit = 0;

		for (int k = 0; k < 16; k++)
			scales[k] = q3k_scale(b + MP_Q3K_SCALES, k);
		for (int half = 0; half < 2; half++, q += 32) {
			for (int shift = 0; shift < 8; shift += 2, bit++) {
				for (int part = 0; part < 2; part++) {
					const float dl = d_all * (float)scales[is++];
					const unsigned char *qq = q + 16 * part;
					const unsigned char *hh = hm + 16 * part;

					/* quant - 4 unless its hmask bit is set; written
					 * without a branch so the loop vectorizes */
					for (int l = 0; l < 16; l++) {
						int v = ((qq[l] >> shift) & 3) -
							(((~hh[l] >> bit) & 1) << 2);

						*dst++ = dl * (float)v;
					}
				}
			}
		}
	}
}

int mp_dequant(const struct mp_quant_type *t, const void *src, float *dst, size_t nblocks)
{
	if (!t)
		return -1;
	switch (t->id) {
	case MP_GGML_Q2_K:
		mp_dequant_q2_k(src, dst, nblocks);
		return 0;
	case MP_GGML_Q3_K:
		mp_dequant_q3_k(src, dst, nblocks);
		return 0;
	default:
		return -1;
	}
}

void mp_block_scales(const struct mp_quant_type *t, const void *block,
		     uint16_t scales[2], unsigned *nscales)
{
	const unsigned char *b = block;

	if (t->id == MP_GGML_Q2_K) {
		scales[0] = le16(b + MP_Q2K_D);
		scales[1] = le16(b + MP_Q2K_DMIN);
		*nscales = 2;
	} else {
		scales[0] = le16(b + MP_Q3K_D);
		scales[1] = 0;
		*nscales = 1;
	}
}
