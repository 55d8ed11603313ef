/*
 * resume.c - a resumed fetch keeps only what passes again: every chunk the
 * record of the last run names is read back from OUT.partial and hashed
 * on the worker threads before it counts as held.
 */
#include "config.h"

#include <inttypes.h>

#include "base/file.h"
#include "fetch/fetch_internal.h"

/* The next run of recorded chunks not yet held, from *c on. */
static bool next_recorded(struct fetch *f, uint64_t *c, struct mp_fetch_run *r)
{
	uint64_t end, max = f->plan.max_bytes;

	while (*c < f->plan.chunk_count &&
	       (f->plan.state[*c] == MP_CHUNK_HELD || !mp_fetch_record_has(f, *c)))
		(*c)++;
	if (*c == f->plan.chunk_count)
		return false;
	end = *c + 1;
	while (end < f->plan.chunk_count && mp_fetch_record_has(f, end) &&
	       f->plan.state[end] != MP_CHUNK_HELD &&
	       f->plan.bound[end + 1] - f->plan.bound[*c] <= max)
		end++;
	mp_fetch_plan_run_of(&f->plan, *c, end - *c, r);
	*c = end;
	return true;
}

static void take(struct fetch *f, struct mp_fetch_job *j)
{
	for (uint64_t i = 0; i < j->count; i++)
		if (j->ok[i]) {
			mp_fetch_plan_held(&f->plan, j->first + i);
			f->res->chunks_kept++;
		}
	mp_fetch_job_free(j);
}

enum mp_err mp_fetch_resume_check(struct fetch *f, struct mp_error *err)
{
	struct mp_fetch_run r;
	struct mp_fetch_job *j;
	uint64_t c = 0;
	enum mp_err rc = MP_OK;

	while (rc == MP_OK && f->resumed && next_recorded(f, &c, &r)) {
		if (!(j = mp_fetch_job_new(r.first, r.count, r.offset, r.len, -1, false)))
			rc = mp_fail(err, MP_E_NOMEM, "out of memory");
		else if (mp_pread_all(f->fd, j->buf, (size_t)r.len, r.offset, NULL) != 0)
			mp_fetch_job_free(j); /* unreadable: fetched again */
		else
			mp_fetch_hashq_push(f->hq, j);
		while (mp_fetch_hashq_busy(f->hq) > 4 && (j = mp_fetch_hashq_pop(f->hq, true)))
			take(f, j);
		if (rc == MP_OK)
			rc = mp_cancel_check(f->o->cancel, err, "checking %s", f->partial);
	}
	while ((j = mp_fetch_hashq_pop(f->hq, true)))
		take(f, j);
	return rc;
}
