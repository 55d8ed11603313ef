/*
 * f32view.h - the float32 files of -o dequant as ranges of the pack.
 *
 * A read of [off, off + size) of a role's .f32 file needs the quantized
 * blocks that hold those floats (block_weights floats of the role's type
 * each: 1 KiB for Q2_K and Q3_K): this says which bytes of the pack those
 * are, reads them and decodes them.
 * Nothing is cached; the caller owns the buffers.
 */
#ifndef MOEPACK_F32VIEW_H
#define MOEPACK_F32VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "base/quant.h"
#include "namespace/node.h"
#include "pack/pack.h"
#include "payload/dequant.h"

/* Bytes of one decoded K-quant super-block (Q2_K, Q3_K: the Kimi roles);
 * a window itself goes by its role's type's block_weights. */
#define MP_F32_BLOCK_BYTES (MP_QK_K * sizeof(float))

struct mp_f32_window {
	const struct mp_quant_type *qt;
	uint64_t pos;          /* the quantized bytes' offset in the pack */
	size_t raw_len;        /* and their length */
	size_t nblocks;        /* blocks they hold */
	size_t float_bytes;    /* nblocks decoded: nblocks * block_weights * 4 */
	size_t skip;           /* decoded bytes before `off` */
};

/*
 * The window of a read of [off, off + size) of node n's .f32 file; the
 * range must lie inside the file (size > 0, clipped by the caller).
 */
void mp_f32_window(const struct mp_pack *pack, const struct mp_node *n, uint64_t off,
		   size_t size, struct mp_f32_window *w);

/* Decode raw into out (w->float_bytes), little-endian as `moepack dump --f32`. */
void mp_f32_decode(const struct mp_f32_window *w, const unsigned char *raw, float *out);

#endif
