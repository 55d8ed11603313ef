/* f32view.c - the float32 files of -o dequant as ranges of the pack (f32view.h). */
#include "config.h"

#include "namespace/f32view.h"


void mp_f32_window(const struct mp_pack *pack, const struct mp_node *n, uint64_t off,
		   size_t size, struct mp_f32_window *w)
{
	const struct mp_role_info *ri = &pack->m.roles[n->role];
	uint64_t start, qbytes, first, nblocks, block_f32;

	w->qt = mp_quant_by_id(ri->dtype_id);
	block_f32 = w->qt->block_weights * sizeof(float); /* one decoded block */
	first = off / block_f32;
	nblocks = (off + size - 1) / block_f32 - first + 1;
	mp_pack_role_range(pack, n->object, n->role, &start, &qbytes);
	w->pos = start + first * w->qt->block_bytes;
	w->raw_len = (size_t)nblocks * w->qt->block_bytes;
	w->nblocks = (size_t)nblocks;
	w->float_bytes = (size_t)(nblocks * block_f32);
	w->skip = (size_t)(off - first * block_f32);
}

void mp_f32_decode(const struct mp_f32_window *w, const unsigned char *raw, float *out)
{
	mp_dequant(w->qt, raw, out, w->nblocks);
	/* the files are little-endian, as `moepack dump --f32` writes them */
	mp_f32_encode((unsigned char *)out, out, w->nblocks * w->qt->block_weights);
}
