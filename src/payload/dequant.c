/*
 * dequant.c - the decodable GGML types by id, and the calls through them
 * (dequant.h).
 *
 * The table is the only place that maps an id to a decoder: a type gets
 * decoded, scanned and described here by having an entry, and by nothing
 * else.
 */
#include "config.h"

#include "payload/dequant.h"

#include <string.h>

static const struct mp_codec *const codecs[MP_GGML_TYPE_COUNT] = {
	[MP_GGML_Q2_K] = &mp_codec_q2_k,
	[MP_GGML_Q3_K] = &mp_codec_q3_k,
	[MP_GGML_MXFP4] = &mp_codec_mxfp4,
};

/* Callers size their buffers by these bounds. */
_Static_assert(MP_Q2K_BYTES <= MP_CODEC_MAX_BLOCK_BYTES &&
		       MP_Q3K_BYTES <= MP_CODEC_MAX_BLOCK_BYTES &&
		       MP_MXFP4_BYTES <= MP_CODEC_MAX_BLOCK_BYTES,
	       "a block is larger than MP_CODEC_MAX_BLOCK_BYTES");
_Static_assert(MP_QK_K <= MP_CODEC_MAX_BLOCK_WEIGHTS && MP_QK_MXFP4 <= MP_CODEC_MAX_BLOCK_WEIGHTS,
	       "a block has more weights than MP_CODEC_MAX_BLOCK_WEIGHTS");

const struct mp_codec *mp_codec(const struct mp_quant_type *t)
{
	if (!t || t->id < 0 || t->id >= MP_GGML_TYPE_COUNT)
		return NULL;
	return codecs[t->id];
}

bool mp_dequant_supported(const struct mp_quant_type *t)
{
	return mp_codec(t) != NULL;
}

int mp_dequant(const struct mp_quant_type *t, const void *src, float *dst, size_t nblocks)
{
	const struct mp_codec *c = mp_codec(t);

	if (!c)
		return -1;
	c->decode(src, dst, nblocks);
	return 0;
}

void mp_block_scales(const struct mp_quant_type *t, const void *block,
		     uint16_t scales[MP_CODEC_MAX_SCALES], unsigned *nscales)
{
	const struct mp_codec *c = mp_codec(t);

	for (unsigned k = 0; k < MP_CODEC_MAX_SCALES; k++)
		scales[k] = c && k < c->nscales ? mp_codec_scale(c, block, k) : 0;
	*nscales = c ? c->nscales : 0;
}

void mp_f32_encode(unsigned char *dst, const float *src, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* the host's own layout already */
	if ((const void *)dst != (const void *)src)
		memmove(dst, src, n * sizeof *src);
#else
	for (size_t i = 0; i < n; i++) {
		uint32_t u = mp_float_bits(src[i]);

		for (int k = 0; k < 4; k++)
			dst[4 * i + k] = (unsigned char)(u >> (8 * k));
	}
#endif
}
