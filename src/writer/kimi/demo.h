/*
 * demo.h - `moepack mkdemo`: write a valid demo expert pack, its manifest
 * and a config.
 *
 * Used by `moepack mkdemo` and by the tests.  The pack holds layers 1..92,
 * `experts` experts per layer, up/gate Q2_K and down Q3_K roles of a
 * hidden x inter expert, each role's payload made of well-formed blocks
 * (mp_quant_fill_demo) so that ggml can dequantize it to finite values.
 * Its layout is layout.h's; its manifest is written by manifestwrite.h.
 */
#ifndef MOEPACK_DEMO_H
#define MOEPACK_DEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/pack.h"

struct mp_demo_opts {
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
 * the expert's dimensions: hidden and inter are multiples of 256 and every
 * role's size is a multiple of the alignment (MP_E_USAGE naming the option
 * otherwise), and the pack's layout fits (mp_layout_compute).
 */
enum mp_err mp_demo_resolve(struct mp_demo_opts *opts, struct mp_error *err);

/*
 * Write the pack, config and manifest.  The manifest's expert_pack.path is
 * the absolute path of the pack.  Returns MP_OK, MP_E_USAGE or MP_E_PACK_IO.
 */
enum mp_err mp_demo_write(const struct mp_demo_opts *opts, struct mp_error *err);
#endif
