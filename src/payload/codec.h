/*
 * codec.h - what the library knows of one GGML type it decodes: its block
 * geometry, its decoder and the check of its block scales.
 *
 * Each decodable type defines one const struct mp_codec (kquant.h: Q2_K
 * and Q3_K, mxfp4.h: MXFP4); dequant.h looks them up by GGML id.  A caller
 * resolves a role's entry once, when it starts on the role, and from then
 * on calls through it: no code outside the entries asks which type a role
 * is.  Nothing here reads files, allocates or prints.
 */
#ifndef MOEPACK_CODEC_H
#define MOEPACK_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/quant.h"

/* Scales per block at most (Q2_K: d and dmin). */
#define MP_CODEC_MAX_SCALES 2
/* Bytes per block at most, of every entry (Q3_K's 110). */
#define MP_CODEC_MAX_BLOCK_BYTES MP_Q3K_BYTES
/* Weights per block at most, of every entry (the k-quants' 256). */
#define MP_CODEC_MAX_BLOCK_WEIGHTS MP_QK_K

/*
 * What the scales of a run of blocks say, added up over any number of
 * check_scales calls (zero it, with all_zero true, before the first).
 */
struct mp_scale_tally {
	uint64_t blocks;      /* blocks looked at so far */
	uint64_t nonfinite;   /* scales that make some weight Inf or NaN */
	uint64_t first_block; /* the first of those: its block number, */
	unsigned first_scale; /* its index in the entry's scales[], */
	uint16_t first_value; /* its raw bits */
	bool all_zero;        /* every scale so far is a zero one */
};

/* One scale of a block: its name in messages and where it is. */
struct mp_scale_field {
	const char *name;     /* "d", "dmin", "e" */
	unsigned offset;      /* bytes into the block */
	unsigned bytes;       /* 2: a little-endian fp16; 1: a byte */
};

struct mp_codec {
	/* ggml's name, id, block_weights and block_bytes */
	const struct mp_quant_type *type;
	/* nblocks blocks at src into nblocks * block_weights floats at dst
	 * (not overlapping src), bit-identical to ggml's dequantize_row_* */
	void (*decode)(const void *src, float *restrict dst, size_t nblocks);
	/* the scales of nblocks blocks at blocks, added to *t */
	void (*check_scales)(const unsigned char *blocks, size_t nblocks,
			     struct mp_scale_tally *t);
	/* a scale's raw bits in words, e.g. "NaN, 0x7e00", for the scan's
	 * report; truncated to fit len */
	void (*describe_scale)(char *buf, size_t len, uint16_t raw);
	unsigned nscales;
	struct mp_scale_field scales[MP_CODEC_MAX_SCALES];
	/*
	 * The scan reports a role whose scales are all zero on its own, not
	 * only an expert whose three roles' scales all are (MXFP4, whose
	 * zero scale byte still means 2^-128: the role is worthless, but its
	 * bytes need not be zero).
	 */
	bool zero_scales_per_role;
};

/* The raw bits of scale k of the block at b. */
static inline uint16_t mp_codec_scale(const struct mp_codec *c, const unsigned char *b,
				      unsigned k)
{
	const struct mp_scale_field *f = &c->scales[k];

	return f->bytes == 2 ? (uint16_t)(b[f->offset] | b[f->offset + 1] << 8)
			     : b[f->offset];
}

#endif
