/*
 * kquant.h - GGML Q2_K and Q3_K super-blocks (256 weights) to float32.
 *
 * The results are bit-identical to ggml's reference dequantize_row_q2_K and
 * dequantize_row_q3_K: the same float operations in the same order, with
 * exact fp16 scales (subnormals, infinities and NaNs included).  Their
 * scales are fp16: Q2_K's d and dmin, Q3_K's d; a scale is zero when it is
 * +-0 and non-finite when it is an Inf or a NaN.
 */
#ifndef MOEPACK_KQUANT_H
#define MOEPACK_KQUANT_H

#include <stddef.h>

#include "payload/codec.h"

/* nblocks consecutive blocks at src into nblocks * 256 floats at dst
 * (which must not overlap src). */
void mp_dequant_q2_k(const void *src, float *restrict dst, size_t nblocks);
void mp_dequant_q3_k(const void *src, float *restrict dst, size_t nblocks);

/* Their entries of the type table (dequant.h). */
extern const struct mp_codec mp_codec_q2_k;
extern const struct mp_codec mp_codec_q3_k;

#endif
