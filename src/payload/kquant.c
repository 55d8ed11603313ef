/*
 * kquant.c - Q2_K and Q3_K super-blocks to float32, bit-identical to
 * ggml's reference dequantizers, and the check of their fp16 scales.
 *
 * Bit-identity rests on doing exactly ggml's float operations in its order:
 * the sub-block scale is d * (float)sc, rounded to float, before it meets
 * the quant; Q2_K's minimum is dmin * (float)m, rounded, then subtracted.
 * Nothing may fuse a multiply and an add: the library is built as ISO C11,
 * where GCC does not contract floating-point expressions (-ffp-contract=off
 * is its ISO default), and no -ffast-math.
 *
 * NaNs are another matter: C leaves a NaN's sign and payload open, and
 * compilers use that freedom (clang turns x*d - m*dmin into x*d + m*-dmin
 * and so flips the sign of a NaN dmin).  ggml's values are those of its
 * x86 build, so a sub-block whose scale or minimum is not finite (the only
 * way an output can be a NaN) is computed apart, with x86's NaN rules
 * spelled out on the bits: the first NaN operand, quieted, else for an
 * invalid operation (inf * 0, inf - inf) the default NaN 0xffc00000.
 * Finite sub-blocks, all of them in a real checkpoint, take the plain loop.
 */
#include "config.h"

#include "payload/kquant.h"

#include "base/le.h"

#include <stdio.h>

/* ---- x86's NaN rules, on the bits ------------------------------------------ */

#define X86_DEFAULT_NAN 0xffc00000u
#define QUIET_BIT 0x00400000u

static inline bool is_nan(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }
static inline bool is_inf(uint32_t u) { return (u & 0x7fffffffu) == 0x7f800000u; }
static inline bool is_zero(uint32_t u) { return (u & 0x7fffffffu) == 0; }
static inline bool finite_f(float f) { return (mp_float_bits(f) & 0x7f800000u) != 0x7f800000u; }

/* x86 returns the first NaN operand, quieted: true with it in *out when
 * a or b is a NaN. */
static bool x86_nan_operand(uint32_t a, uint32_t b, float *out)
{
	if (!is_nan(a) && !is_nan(b))
		return false;
	*out = mp_bits_float((is_nan(a) ? a : b) | QUIET_BIT);
	return true;
}

static float x86_mul(float x, float y)
{
	uint32_t a = mp_float_bits(x), b = mp_float_bits(y);
	float nan;

	if (x86_nan_operand(a, b, &nan))
		return nan;
	if ((is_inf(a) && is_zero(b)) || (is_zero(a) && is_inf(b)))
		return mp_bits_float(X86_DEFAULT_NAN);
	return x * y; /* not a NaN: IEEE fixes every bit */
}

static float x86_sub(float x, float y)
{
	uint32_t a = mp_float_bits(x), b = mp_float_bits(y);
	float nan;

	if (x86_nan_operand(a, b, &nan))
		return nan;
	if (is_inf(a) && is_inf(b) && (a == b))
		return mp_bits_float(X86_DEFAULT_NAN);
	return x - y;
}

/* restrict: dst never overlaps the blocks, and saying so lets the compiler
 * vectorize the 16-weight loops without run-time overlap checks. */
void mp_dequant_q2_k(const void *src, float *restrict dst, size_t nblocks)
{
	const unsigned char *restrict b = src;

	for (size_t i = 0; i < nblocks; i++, b += MP_Q2K_BYTES) {
		const float d = mp_fp16_to_float(mp_le16(b + MP_Q2K_D));
		const float min = mp_fp16_to_float(mp_le16(b + MP_Q2K_DMIN));
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

					if (!finite_f(d) || !finite_f(min)) {
						const float xdl = x86_mul(d, (float)(s & 0xF));
						const float xml = x86_mul(min, (float)(s >> 4));

						for (int l = 0; l < 16; l++)
							*dst++ = x86_sub(x86_mul(xdl, (float)((qq[l] >> shift) & 3)),
									 xml);
						continue;
					}
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
		const float d_all = mp_fp16_to_float(mp_le16(b + MP_Q3K_D));
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

					if (!finite_f(d_all)) {
						const float xdl = x86_mul(d_all, (float)scales[is - 1]);

						for (int l = 0; l < 16; l++) {
							int v = ((qq[l] >> shift) & 3) -
								(((~hh[l] >> bit) & 1) << 2);

							*dst++ = x86_mul(xdl, (float)v);
						}
						continue;
					}

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

/* ---- the fp16 scales ---------------------------------------------------------- */

/* Scale k of the current block, half h: zero unless +-0; non-finite when
 * its exponent is all ones (Inf or NaN: every weight it scales is then
 * Inf or NaN, or NaN for a zero quant). */
static inline void tally_fp16(struct mp_scale_tally *t, uint16_t h, unsigned k)
{
	if ((h & 0x7fff) != 0)
		t->all_zero = false;
	if ((h & 0x7c00) == 0x7c00 && t->nonfinite++ == 0) {
		t->first_block = t->blocks;
		t->first_scale = k;
		t->first_value = h;
	}
}

static void check_q2_k(const unsigned char *b, size_t nblocks, struct mp_scale_tally *t)
{
	for (size_t i = 0; i < nblocks; i++, b += MP_Q2K_BYTES, t->blocks++) {
		tally_fp16(t, mp_le16(b + MP_Q2K_D), 0);
		tally_fp16(t, mp_le16(b + MP_Q2K_DMIN), 1);
	}
}

static void check_q3_k(const unsigned char *b, size_t nblocks, struct mp_scale_tally *t)
{
	for (size_t i = 0; i < nblocks; i++, b += MP_Q3K_BYTES, t->blocks++)
		tally_fp16(t, mp_le16(b + MP_Q3K_D), 0);
}

/* "NaN, 0x7e00": what a half is, then its bits. */
static void describe_fp16(char *buf, size_t len, uint16_t h)
{
	const char *kind = "finite";

	if ((h & 0x7c00) == 0x7c00)
		kind = (h & 0x3ff) ? "NaN" : (h & 0x8000) ? "-Inf" : "+Inf";
	snprintf(buf, len, "%s, 0x%04x", kind, h);
}

const struct mp_codec mp_codec_q2_k = {
	.type = &mp_ggml_types[MP_GGML_Q2_K],
	.decode = mp_dequant_q2_k,
	.check_scales = check_q2_k,
	.describe_scale = describe_fp16,
	.nscales = 2,
	.scales = {{"d", MP_Q2K_D, 2}, {"dmin", MP_Q2K_DMIN, 2}},
};

const struct mp_codec mp_codec_q3_k = {
	.type = &mp_ggml_types[MP_GGML_Q3_K],
	.decode = mp_dequant_q3_k,
	.check_scales = check_q3_k,
	.describe_scale = describe_fp16,
	.nscales = 1,
	.scales = {{"d", MP_Q3K_D, 2}},
};
