/*
 * quant.h - the GGML quant types an expert pack may hold.
 *
 * Type ids and block sizes follow ggml (ggml.h / ggml-quants.c): Q2_K and
 * Q3_K hold 256 weights per super-block, Q4_0 32.
 */
#ifndef MOEPACK_QUANT_H
#define MOEPACK_QUANT_H

#include <stdint.h>
#include <stddef.h>

enum mp_ggml_type {
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
};

struct mp_quant_type {
	const char *name;       /* "Q2_K" */
	int id;                 /* GGML type id */
	unsigned block_weights; /* weights per block */
	unsigned block_bytes;   /* bytes per block */
};

/* The type with this GGML id, or NULL when it is not one we know. */
const struct mp_quant_type *mp_quant_by_id(int id);
/* The type with this name (exact, case-sensitive), or NULL. */
const struct mp_quant_type *mp_quant_by_name(const char *name);

/*
 * Bytes that `weights` weights take in type t, or 0 when weights is not a
 * whole number of blocks or the product overflows.
 */
uint64_t mp_quant_bytes(const struct mp_quant_type *t, uint64_t weights);

/*
 * Fill buf (nbytes, a whole number of blocks of type t) with well-formed
 * blocks: any quants, small finite positive fp16 scales.  Deterministic in
 * (seed, stream_pos): stream_pos is the byte position of buf inside a longer
 * stream, so a payload can be produced in pieces.  Returns 0, or -1 when
 * t is not Q2_K or Q3_K or nbytes is not whole blocks.
 */
int mp_quant_fill_demo(const struct mp_quant_type *t, uint64_t seed,
		       uint64_t stream_pos, void *buf, size_t nbytes);

/* SplitMix64's output for state x: the demo payload's seed mixer, so that
 * neighbouring entry numbers get unrelated streams. */
uint64_t mp_splitmix64(uint64_t x);

/* IEEE half <-> float, for block scales. */
float mp_fp16_to_float(uint16_t h);
uint16_t mp_float_to_fp16(float f);

#endif
