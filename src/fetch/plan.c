/*
 * plan.c - runs of missing seal chunks (plan.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fetch/plan.h"

static enum mp_err alloc_plan(struct mp_fetch_plan *p, uint64_t n, uint64_t max_bytes,
			      struct mp_error *err)
{
	memset(p, 0, sizeof *p);
	p->chunk_count = n;
	p->max_bytes = max_bytes ? max_bytes : 1;
	p->bound = malloc((size_t)(n + 1) * sizeof *p->bound);
	p->state = calloc((size_t)n + 1, 1);
	if (!p->bound || !p->state) {
		mp_fetch_plan_free(p);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	return MP_OK;
}

enum mp_err mp_fetch_plan_init(struct mp_fetch_plan *p, const struct mp_seal_layout *l,
			       uint64_t max_bytes, struct mp_error *err)
{
	enum mp_err rc = alloc_plan(p, l->chunk_count, max_bytes, err);

	if (rc)
		return rc;
	for (uint64_t c = 0; c < l->chunk_count; c++) {
		struct mp_seal_chunk ch;

		mp_seal_chunk_get(l, c, &ch);
		p->bound[c] = ch.offset;
	}
	p->bound[l->chunk_count] = l->file_size;
	return MP_OK;
}

enum mp_err mp_fetch_plan_init_bounds(struct mp_fetch_plan *p, const uint64_t *bound,
				      uint64_t n, uint64_t max_bytes, struct mp_error *err)
{
	enum mp_err rc;

	if (n == 0 || bound[0] != 0)
		return mp_fail(err, MP_E_USAGE, "invalid usage: a plan needs chunks from byte 0");
	for (uint64_t c = 0; c < n; c++)
		if (bound[c + 1] <= bound[c])
			return mp_fail(err, MP_E_USAGE,
				       "invalid usage: chunk %llu of the plan is empty or out of order",
				       (unsigned long long)c);
	if ((rc = alloc_plan(p, n, max_bytes, err)))
		return rc;
	memcpy(p->bound, bound, (size_t)(n + 1) * sizeof *bound);
	return MP_OK;
}

void mp_fetch_plan_free(struct mp_fetch_plan *p)
{
	free(p->bound);
	free(p->state);
	p->bound = NULL;
	p->state = NULL;
}

void mp_fetch_plan_run_of(const struct mp_fetch_plan *p, uint64_t first, uint64_t count,
			  struct mp_fetch_run *run)
{
	run->first = first;
	run->count = count;
	run->offset = p->bound[first];
	run->len = p->bound[first + count] - run->offset;
}

/* The first missing chunk at or after `from`, or chunk_count. */
static uint64_t find_missing(const struct mp_fetch_plan *p, uint64_t from)
{
	while (from < p->chunk_count && p->state[from] != MP_CHUNK_MISSING)
		from++;
	return from;
}

/* Missing chunk c and those after it that fit in one run, in flight;
 * returns the chunk after the run. */
static uint64_t take_run(struct mp_fetch_plan *p, uint64_t c, struct mp_fetch_run *run)
{
	uint64_t end = c + 1;

	while (end < p->chunk_count && p->state[end] == MP_CHUNK_MISSING &&
	       p->bound[end + 1] - p->bound[c] <= p->max_bytes)
		end++;
	for (uint64_t i = c; i < end; i++)
		p->state[i] = MP_CHUNK_FLIGHT;
	mp_fetch_plan_run_of(p, c, end - c, run);
	return end;
}

bool mp_fetch_plan_next(struct mp_fetch_plan *p, struct mp_fetch_run *run)
{
	uint64_t c = find_missing(p, p->cursor);

	if (c == p->chunk_count)
		c = find_missing(p, 0);
	if (c == p->chunk_count)
		return false;
	p->cursor = take_run(p, c, run);
	return true;
}

bool mp_fetch_plan_run_from(struct mp_fetch_plan *p, uint64_t c, struct mp_fetch_run *run)
{
	if (c >= p->chunk_count || p->state[c] != MP_CHUNK_MISSING)
		return false;
	take_run(p, c, run);
	return true;
}

void mp_fetch_plan_held(struct mp_fetch_plan *p, uint64_t c)
{
	if (p->state[c] == MP_CHUNK_HELD)
		return;
	p->state[c] = MP_CHUNK_HELD;
	p->held++;
	p->held_bytes += p->bound[c + 1] - p->bound[c];
}

void mp_fetch_plan_missing(struct mp_fetch_plan *p, uint64_t c)
{
	if (p->state[c] == MP_CHUNK_HELD)
		return;
	p->state[c] = MP_CHUNK_MISSING;
	if (c < p->cursor)
		p->cursor = c;
}

void mp_fetch_plan_lost(struct mp_fetch_plan *p, uint64_t c)
{
	if (p->state[c] != MP_CHUNK_HELD)
		return;
	p->held--;
	p->held_bytes -= p->bound[c + 1] - p->bound[c];
	p->state[c] = MP_CHUNK_MISSING;
	if (c < p->cursor)
		p->cursor = c;
}
