/*
 * quant.h - the one table of GGML tensor types, and the quant types an
 * expert pack may hold.
 *
 * Type ids and block sizes follow ggml (ggml.h / ggml-quants.c): Q2_K and
 * Q3_K hold 256 weights per super-block, Q4_0 and MXFP4 32, F32 one weight
 * of 4 bytes.  A type's weights per block are its block_weights: code that
 * handles blocks of any type asks the table, never MP_QK_K.
 */
#ifndef MOEPACK_QUANT_H
#define MOEPACK_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum mp_ggml_type {
	MP_GGML_F32 = 0,
	MP_GGML_Q4_0 = 2,
	MP_GGML_Q4_1 = 3,
	MP_GGML_Q5_0 = 6,
	MP_GGML_Q5_1 = 7,
	MP_GGML_Q8_0 = 8,
	MP_GGML_Q2_K = 10,
	MP_GGML_Q3_K = 11,
	MP_GGML_Q4_K = 12,
	MP_GGML_Q5_K = 13,
	MP_GGML_Q6_K = 14,
	MP_GGML_Q8_K = 15,
	MP_GGML_MXFP4 = 39,
};

/* Every type ggml 0.23.0 knows has an id below this (its GGML_TYPE_COUNT). */
#define MP_GGML_TYPE_COUNT 43

struct mp_quant_type {
	const char *name;       /* "Q2_K" */
	int id;                 /* GGML type id */
	unsigned block_weights; /* weights per block; 0: a type ggml removed */
	unsigned block_bytes;   /* bytes per block */
	bool pack;              /* a quant type an expert pack may hold */
};

/*
 * The table itself, indexed by GGML id, so that other tables can point at
 * its entries in their initializers (payload/dequant.c does).  Read it
 * through the functions below.
 */
extern const struct mp_quant_type mp_ggml_types[MP_GGML_TYPE_COUNT];

/*
 * Any type ggml knows, by id: block geometry as ggml_blck_size() and
 * ggml_type_size() report it (0 and 0 for the ids of removed types).  NULL
 * for an id of MP_GGML_TYPE_COUNT or more.
 */
const struct mp_quant_type *mp_ggml_type(uint32_t id);

/* The quant type (pack true) with this GGML id, or NULL. */
const struct mp_quant_type *mp_quant_by_id(int id);
/* The quant type (pack true) with this name (exact, case-sensitive), or NULL. */
const struct mp_quant_type *mp_quant_by_name(const char *name);

/* Weights per k-quant super-block (ggml's QK_K). */
#define MP_QK_K 256

/* Byte layout of the two k-quant super-blocks (ggml's block_q2_K and
 * block_q3_K). */
#define MP_Q2K_SCALES 0   /* 16 bytes: 4-bit scale | 4-bit min << 4 */
#define MP_Q2K_QS 16      /* 64 bytes of 2-bit quants */
#define MP_Q2K_D 80       /* fp16 d */
#define MP_Q2K_DMIN 82    /* fp16 dmin */
#define MP_Q2K_BYTES 84
#define MP_Q3K_HMASK 0    /* 32 bytes: the third bit of each quant */
#define MP_Q3K_QS 32      /* 64 bytes: the low two bits */
#define MP_Q3K_SCALES 96  /* 12 bytes: sixteen 6-bit scales */
#define MP_Q3K_D 108      /* fp16 d */
#define MP_Q3K_BYTES 110

/* ggml's block_mxfp4: one E8M0 scale byte (a power of two, no sign, no
 * mantissa) and 32 four-bit E2M1 codes, weight j in the low nibble of
 * qs[j] and weight j + 16 in its high nibble. */
#define MP_QK_MXFP4 32     /* weights per block */
#define MP_MXFP4_E 0       /* the scale byte */
#define MP_MXFP4_QS 1      /* 16 bytes of codes */
#define MP_MXFP4_BYTES 17

/*
 * Bytes that `weights` weights take in type t, or 0 when weights is not a
 * whole number of blocks, the product overflows or t has no blocks (a
 * type ggml removed).
 */
uint64_t mp_quant_bytes(const struct mp_quant_type *t, uint64_t weights);

/*
 * Fill buf (nbytes, a whole number of blocks of type t) with well-formed
 * blocks: any quants, small finite positive scales (fp16 for Q2_K and
 * Q3_K, E8M0 for MXFP4).  Deterministic in (seed, stream_pos): stream_pos
 * is the byte position of buf inside a longer stream, so a payload can be
 * produced in pieces.  Returns 0, or -1 when t is not Q2_K, Q3_K or MXFP4
 * or nbytes is not whole blocks.
 */
int mp_quant_fill_demo(const struct mp_quant_type *t, uint64_t seed,
		       uint64_t stream_pos, void *buf, size_t nbytes);

/* SplitMix64's output for state x: the demo payload's seed mixer, so that
 * neighbouring entry numbers get unrelated streams. */
uint64_t mp_splitmix64(uint64_t x);

/* An IEEE half as a float, for block scales. */
float mp_fp16_to_float(uint16_t h);

/* A float's IEEE bits and back, without aliasing. */
static inline uint32_t mp_float_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

static inline float mp_bits_float(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

#endif
