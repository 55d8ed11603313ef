/*
 * dequant.h - GGML Q2_K and Q3_K super-blocks to float32.
 *
 * The results are bit-identical to ggml's reference dequantize_row_q2_K and
 * dequantize_row_q3_K: the same float operations in the same order, with
 * exact fp16 scales (subnormals, infinities and NaNs included).  Nothing
 * here reads files or allocates.
 */
#ifndef MOEPACK_DEQUANT_H
#define MOEPACK_DEQUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pack/pack.h"
#include "base/quant.h"

/* True when t is a type this file decodes (Q2_K, Q3_K). */
bool mp_dequant_supported(const struct mp_quant_type *t);

/* nblocks consecutive blocks at src into nblocks * 256 floats at dst
 * (which must not overlap src). */
void mp_dequant_q2_k(const void *src, float *restrict dst, size_t nblocks);
void mp_dequant_q3_k(const void *src, float *restrict dst, size_t nblocks);

/* The same for type t; returns -1 (writing nothing) when t is not supported. */
int mp_dequant(const struct mp_quant_type *t, const void *src, float *dst, size_t nblocks);

/*
 * The fp16 super-block scales of one block of type t: d and, for Q2_K,
 * dmin (the raw halves; *nscales gets 2 for Q2_K, 1 for Q3_K).
 */
void mp_block_scales(const struct mp_quant_type *t, const void *block,
		     uint16_t scales[2], unsigned *nscales);

/*
 * n floats as the .f32 files hold them: IEEE binary32, little-endian, 4
 * bytes each, whatever the host's byte order.  dst may be src itself.
 */
void mp_f32_encode(unsigned char *dst, const float *src, size_t n);

/* A role's rows: the logical shape's first number is the row length (GGUF
 * ne[] order) and every other dimension multiplies the row count. */
static inline void mp_role_rows(const struct mp_role_info *ri, uint64_t *row_len,
				uint64_t *rows)
{
	*row_len = ri->shape[0];
	*rows = 1;
	for (unsigned i = 1; i < ri->shape_len; i++)
		*rows *= ri->shape[i];
}

#endif
