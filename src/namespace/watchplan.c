/* watchplan.c - what the mount's watcher does on each tick (watchplan.h). */
#include "config.h"

#include "namespace/watchplan.h"

void mp_timespec_add_ms(struct timespec *t, long ms)
{
	t->tv_nsec += ms * 1000000L;
	t->tv_sec += t->tv_nsec / 1000000000L;
	t->tv_nsec %= 1000000000L;
}

static bool before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static struct timespec after_ms(const struct timespec *now, long ms)
{
	struct timespec t = *now;

	mp_timespec_add_ms(&t, ms);
	return t;
}

void mp_watch_plan_init(struct mp_watch_plan *p, const struct timespec *now,
			long status_ms, bool file, long file_ms)
{
	p->next_status = *now;
	p->next_file = after_ms(now, file_ms);
	p->status_ms = status_ms;
	p->file_ms = file_ms;
	p->file = file;
	p->reported = false;
}

unsigned mp_watch_plan_step(struct mp_watch_plan *p, const struct timespec *now,
			    const struct mp_status_change *change)
{
	unsigned act = 0;

	if (!before(now, &p->next_status))
		act |= MP_WATCH_REFRESH;
	if (change && !p->reported) {
		p->reported = true;
		/* status.json first: it says why the reads fail */
		if (!change->lease_break)
			act |= MP_WATCH_REPORT | MP_WATCH_REFRESH | MP_WATCH_INVALIDATE;
		p->next_file = *now;
	}
	if (p->file && !before(now, &p->next_file)) {
		act |= MP_WATCH_WRITE_FILE;
		p->next_file = after_ms(now, p->file_ms);
	}
	if (act & (MP_WATCH_REFRESH | MP_WATCH_WRITE_FILE))
		p->next_status = after_ms(now, p->status_ms);
	/* the file's snapshot is the refresh */
	if (act & MP_WATCH_WRITE_FILE)
		act &= ~(unsigned)MP_WATCH_REFRESH;
	return act;
}
