/*
 * plan.h - which byte ranges of the pack to ask mirrors for.
 *
 * The seal cuts the pack into chunks that tile it in file order (seal.h);
 * a fetch asks for runs of whole chunks, so that every reply can be
 * checked chunk by chunk against the seal.  A run is consecutive chunks
 * still missing, as many as fit in max_bytes (at least one chunk, even a
 * longer one), never across a chunk already held.  Runs of 8-16 MiB are
 * what parallel S3 clients use; the caller picks max_bytes.
 *
 * The plan holds the chunks' boundaries (chunk_count + 1 offsets, the
 * last the file size) and a byte per chunk: missing, in flight or held.
 * It is the main loop's alone: no locking.
 */
#ifndef MOEPACK_FETCH_PLAN_H
#define MOEPACK_FETCH_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "seal/seal.h"

enum mp_fetch_chunk_state { MP_CHUNK_MISSING, MP_CHUNK_FLIGHT, MP_CHUNK_HELD };

struct mp_fetch_plan {
	uint64_t chunk_count;
	uint64_t *bound;        /* chunk_count + 1 offsets, ascending */
	unsigned char *state;   /* enum mp_fetch_chunk_state by chunk */
	uint64_t max_bytes;     /* the longest run asked for */
	uint64_t cursor;        /* where the next search starts */
	uint64_t held;          /* chunks held */
	uint64_t held_bytes;
};

/* One run: chunks [first, first + count), bytes [offset, offset + len). */
struct mp_fetch_run {
	uint64_t first, count;
	uint64_t offset, len;
};

/* From a seal layout: every chunk missing.  MP_E_NOMEM. */
enum mp_err mp_fetch_plan_init(struct mp_fetch_plan *p, const struct mp_seal_layout *l,
			       uint64_t max_bytes, struct mp_error *err);
/* From boundaries the caller gives (copied): bound[0] == 0, ascending,
 * bound[n] the file size.  MP_E_USAGE when they are not; MP_E_NOMEM. */
enum mp_err mp_fetch_plan_init_bounds(struct mp_fetch_plan *p, const uint64_t *bound,
				      uint64_t n, uint64_t max_bytes, struct mp_error *err);
void mp_fetch_plan_free(struct mp_fetch_plan *p);

/* The next run of missing chunks, marked in flight; false when no chunk
 * is missing (some may still be in flight). */
bool mp_fetch_plan_next(struct mp_fetch_plan *p, struct mp_fetch_run *run);
/* The run of missing chunks that starts at chunk c, marked in flight (the
 * next search's place unmoved); false when c is not missing. */
bool mp_fetch_plan_run_from(struct mp_fetch_plan *p, uint64_t c, struct mp_fetch_run *run);

/* A run's bytes for chunks [first, first + count). */
void mp_fetch_plan_run_of(const struct mp_fetch_plan *p, uint64_t first, uint64_t count,
			  struct mp_fetch_run *run);

/* Chunk `c` passed (held) or must be asked for again (missing). */
void mp_fetch_plan_held(struct mp_fetch_plan *p, uint64_t c);
void mp_fetch_plan_missing(struct mp_fetch_plan *p, uint64_t c);
/* Held chunk `c` whose stored bytes turned out bad: missing again. */
void mp_fetch_plan_lost(struct mp_fetch_plan *p, uint64_t c);

static inline bool mp_fetch_plan_done(const struct mp_fetch_plan *p)
{
	return p->held == p->chunk_count;
}

#endif
