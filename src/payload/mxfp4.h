/*
 * mxfp4.h - GGML MXFP4 blocks (32 weights in 17 bytes) to float32.
 *
 * A block is one E8M0 scale byte e and 32 four-bit codes (base/quant.h has
 * the layout).  The results are bit-identical to ggml's reference
 * dequantize_row_mxfp4, which computes weight = code * d in float with
 *   code  the doubled E2M1 value of the nibble: 0, 1, 2, 3, 4, 6, 8, 12 for
 *         nibbles 0 to 7, and 0, -1, -2, -3, -4, -6, -8, -12 for 8 to 15;
 *   d     2^(e - 128), built on the bits: e = 0 and e = 1 are the float
 *         subnormals 2^-128 and 2^-127, e = 255 is 2^127 (not a NaN).
 * Every product is exact, or too large: no weight is ever a NaN or -0, and
 * a weight is +-Inf exactly when |code| * 2^(e - 128) >= 2^128, which
 * takes e >= MP_MXFP4_NONFINITE_E (253: codes +-8 and +-12; 254: from +-4;
 * 255: from +-2).
 *
 * For the scan, a block's scale is "zero" when e is 0 (every weight below
 * 2^-124: nothing a real checkpoint stores) and "non-finite" when e is
 * MP_MXFP4_NONFINITE_E or more.
 */
#ifndef MOEPACK_MXFP4_H
#define MOEPACK_MXFP4_H

#include <stddef.h>

#include "payload/codec.h"

/* The smallest scale byte with which some code decodes to Inf. */
#define MP_MXFP4_NONFINITE_E 253

/* nblocks consecutive blocks at src into nblocks * 32 floats at dst
 * (which must not overlap src). */
void mp_dequant_mxfp4(const void *src, float *restrict dst, size_t nblocks);

/* Its entry of the type table (dequant.h). */
extern const struct mp_codec mp_codec_mxfp4;

#endif
