/*
 * f32view.h - the float32 files of -o dequant as ranges of the pack.
 *
 * A read of [off, off + size) of a role's .f32 file needs the quantized
 * super-blocks that hold those floats (256 floats, 1 KiB, each): this
 * says which bytes of the pack those are, reads them and decodes them.
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

/* Bytes of one decoded super-block. */
#define MP_F32_BLOCK_BYTES (MP_QK_K * sizeof(float))

struct mp_f32_window {
	const struct mp_quant_type *qt;
	uint64_t pos;          /* the quantized bytes' offset in the pack */
	size_t raw_len;        /* and their length */
	size_t nblocks;        /* super-blocks they hold */
	size_t float_bytes;    /* nblocks decoded: nblocks * MP_F32_BLOCK_BYTES */
	size_t skip;           /* decoded bytes before `off` */
};

/*
 * The window of a read of [off, off + size) of node n's .f32 file; the
 * range must lie inside the file (size > 0, clipped by the caller).
 */
void mp_f32_window(const struct mp_pack *pack, const struct mp_node *n, uint64_t off,
		   size_t size, struct mp_f32_window *w);

/*
 * pread the window's quantized bytes into raw from `done` on (EINTR is
 * retried); the count read in all, short at the end of the file or on an
 * error.
 */
size_t mp_f32_read_raw(int fd, const struct mp_f32_window *w, unsigned char *raw,
		       size_t done);

/* Decode raw into out (w->float_bytes), little-endian as `moepack dump --f32`. */
void mp_f32_decode(const struct mp_f32_window *w, const unsigned char *raw, float *out);

#endif
