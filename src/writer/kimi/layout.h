/*
 * layout.h - where everything of an expert pack lies: header, index,
 * padding and the expert objects, from the role sizes and expert count.
 *
 * `moepack mkdemo` (demo.h) and `moepack build` (build.h) lay packs out
 * with it, the builder's seal (buildseal.h) cuts its chunks along it, and
 * index.c's one header and entry encoder writes what it says.
 */
#ifndef MOEPACK_LAYOUT_H
#define MOEPACK_LAYOUT_H

#include <stdint.h>

#include "pack/kimi/format.h"
#include "base/errors.h"
#include "pack/pack.h"

struct mp_layout {
	uint64_t experts;         /* per layer, layers 1..92 */
	uint64_t alignment;
	uint64_t role_bytes[MP_ROLE_COUNT]; /* one expert's payload per role */
	uint64_t role_shape[MP_ROLE_COUNT][2]; /* logical_shape, GGUF ne[] order */
	uint64_t object_bytes;
	uint64_t gap;             /* after each object, rounded up to the alignment */
	uint64_t objects;
	uint64_t index_count;
	uint64_t index_end;       /* header + index */
	uint64_t data_start;
	uint64_t size;
};

/* The largest pack a layout may describe: 1 PiB. */
#define MP_LAYOUT_MAX_SIZE (1ULL << 50)

/*
 * role_shape[] of an expert of hidden x inter weights, in GGUF ne[] order
 * (the GGML row length first): up and gate rows read the hidden state,
 * down rows the expert's.
 */
void mp_layout_set_shapes(struct mp_layout *l, uint64_t hidden, uint64_t inter);

/*
 * Fill the rest of *l from its role_bytes (set by the caller) and these:
 * objects in layer-major order, each up|gate|down, the first at data_start
 * = the index's end rounded up to the alignment (a power of two).
 * MP_E_USAGE when the sizes overflow or the pack would pass
 * MP_LAYOUT_MAX_SIZE.
 */
enum mp_err mp_layout_compute(struct mp_layout *l, uint64_t experts, uint64_t alignment,
			      uint64_t gap, struct mp_error *err);
uint64_t mp_layout_object_offset(const struct mp_layout *l, uint64_t object);
/* Index entry i (layer-major, then expert, then role), encoded. */
void mp_layout_entry(const struct mp_layout *l, uint64_t i, unsigned char raw[MP_ENTRY_SIZE]);

#endif
