/*
 * build.h - write a valid expert pack and its manifest.
 *
 * Used by `moepack mkdemo` and by the tests.  The pack holds layers 1..92,
 * `experts` experts per layer, up/gate Q2_K and down Q3_K roles of a
 * hidden x inter expert, each role's payload made of well-formed blocks
 * (mp_quant_fill_demo) so that ggml can dequantize it to finite values.
 */
#ifndef MOEPACK_BUILD_H
#define MOEPACK_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/pack.h"

/* Everything about a pack's file layout: mkdemo and build share it, and
 * the one header and entry encoder of index.c writes it. */
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

/*
 * Fill the rest of *l from its role_bytes (set by the caller) and these:
 * objects in layer-major order, each up|gate|down, the first at data_start
 * = the index's end rounded up to the alignment.  MP_E_USAGE when the sizes
 * overflow or the pack would pass 1 PiB.
 */
enum mp_err mp_layout_compute(struct mp_layout *l, uint64_t experts, uint64_t alignment,
			      uint64_t gap, struct mp_error *err);
uint64_t mp_layout_object_offset(const struct mp_layout *l, uint64_t object);
/* Index entry i (layer-major, then expert, then role), encoded. */
void mp_layout_entry(const struct mp_layout *l, uint64_t i, unsigned char raw[MP_ENTRY_SIZE]);

struct mp_build_opts {
	const char *out;          /* pack path to write (replaced atomically) */
	const char *manifest;     /* NULL: "<out>.manifest.json" */
	uint64_t experts;         /* experts per layer; 0: default 4 */
	uint64_t hidden;          /* 0: smallest that keeps roles aligned */
	uint64_t inter;           /* 0: smallest that keeps roles aligned */
	uint64_t alignment;       /* 0: 4096 */
	uint64_t gap;             /* bytes of padding after each object, rounded
	                             up to the alignment; default 0 */
	uint64_t seed;            /* payload seed */
	bool sparse;              /* leave the payload as a hole */
	bool full_sha256;         /* record expert_pack.sha256 (reads it all) */
	mp_progress_fn progress;  /* may be NULL */
	void *progress_arg;
};

/*
 * Pick the defaults documented above for every 0 field of *opts and check
 * the geometry: hidden and inter are multiples of 256 and every role's size
 * is a multiple of the alignment (MP_E_USAGE naming the option otherwise).
 */
enum mp_err mp_build_resolve(struct mp_build_opts *opts, struct mp_error *err);

/*
 * Write the pack and manifest.  The manifest's expert_pack.path is the
 * absolute path of the pack.  Returns MP_OK, MP_E_USAGE or MP_E_PACK_IO.
 */
enum mp_err mp_build_demo(const struct mp_build_opts *opts, struct mp_error *err);

/*
 * Remove the temporary files mp_build_demo() is writing, if any.  Async-
 * signal-safe (unlink(2) only): a SIGINT or SIGTERM handler calls it and then
 * re-raises the signal, so that an interrupted run leaves nothing behind.
 */
void mp_build_remove_temporaries(void);


#endif
