/* f32view.c - the float32 files of -o dequant as ranges of the pack (f32view.h). */
#include "config.h"

#include "namespace/f32view.h"

#include "base/file.h"

void mp_f32_window(const struct mp_pack *pack, const struct mp_node *n, uint64_t off,
		   size_t size, struct mp_f32_window *w)
{
	const struct mp_role_info *ri = &pack->m.roles[n->role];
	uint64_t start, qbytes, first, nblocks;

	w->qt = mp_quant_by_id(ri->dtype_id);
	first = off / MP_F32_BLOCK_BYTES;
	nblocks = (off + size - 1) / MP_F32_BLOCK_BYTES - first + 1;
	mp_pack_role_range(pack, n->object, n->role, &start, &qbytes);
	w->pos = start + first * w->qt->block_bytes;
	w->raw_len = (size_t)nblocks * w->qt->block_bytes;
	w->nblocks = (size_t)nblocks;
	w->float_bytes = (size_t)nblocks * MP_F32_BLOCK_BYTES;
	w->skip = (size_t)(off - first * MP_F32_BLOCK_BYTES);
}

size_t mp_f32_read_raw(int fd, const struct mp_f32_window *w, unsigned char *raw,
		       size_t done)
{
	size_t more = 0;

	if (done < w->raw_len)
		mp_pread_all(fd, raw + done, w->raw_len - done, w->pos + done, &more);
	return done + more;
}

void mp_f32_decode(const struct mp_f32_window *w, const unsigned char *raw, float *out)
{
	mp_dequant(w->qt, raw, out, w->nblocks);
	/* the files are little-endian, as `moepack dump --f32` writes them */
	mp_f32_encode((unsigned char *)out, out, w->nblocks * MP_QK_K);
}
