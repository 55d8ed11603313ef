/* f32view.c - the float32 files of -o dequant as ranges of the pack (f32view.h). */
#include "config.h"

#include "namespace/f32view.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>


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
	while (done < w->raw_len) {
		ssize_t got = pread(fd, raw + done, w->raw_len - done, (off_t)(w->pos + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		done += (size_t)got;
	}
	return done;
}

void mp_f32_decode(const struct mp_f32_window *w, const unsigned char *raw, float *out)
{
	mp_dequant(w->qt, raw, out, w->nblocks);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	/* the files are little-endian, as `moepack dump --f32` writes them */
	for (size_t i = 0; i < w->nblocks * MP_QK_K; i++) {
		uint32_t u;

		memcpy(&u, &out[i], sizeof u);
		u = __builtin_bswap32(u);
		memcpy(&out[i], &u, sizeof u);
	}
#endif
}
