/*
 * dequant.h - the GGML types this library decodes to float32, by id, and
 * the calls through their entries.
 *
 * One const entry per decodable type (codec.h): Q2_K and Q3_K (kquant.h)
 * and MXFP4 (mxfp4.h).  Every decoder is bit-identical to ggml's reference
 * dequantize_row_*.  Look a role's type up once with mp_codec() and keep
 * the entry; the functions below do that look-up for one-off callers.
 * Nothing here reads files or allocates.
 */
#ifndef MOEPACK_DEQUANT_H
#define MOEPACK_DEQUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/quant.h"
#include "pack/pack.h"
#include "payload/codec.h"
#include "payload/kquant.h"
#include "payload/mxfp4.h"

/* The entry of type t, or NULL when t is NULL or a type not decoded here. */
const struct mp_codec *mp_codec(const struct mp_quant_type *t);

/* True when t is a type this library decodes (Q2_K, Q3_K, MXFP4). */
bool mp_dequant_supported(const struct mp_quant_type *t);

/* nblocks blocks of type t at src into nblocks * t->block_weights floats at
 * dst (not overlapping src); returns -1 (writing nothing) when t is not
 * supported. */
int mp_dequant(const struct mp_quant_type *t, const void *src, float *dst, size_t nblocks);

/*
 * The raw scales of one block of a supported type t, in the entry's order:
 * Q2_K d and dmin (fp16 bits; *nscales 2), Q3_K d (1), MXFP4 e (the byte;
 * 1).
 */
void mp_block_scales(const struct mp_quant_type *t, const void *block,
		     uint16_t scales[MP_CODEC_MAX_SCALES], unsigned *nscales);

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
