/*
 * watchplan.h - what the mount's watcher does on each tick.
 *
 * The watcher thread (in the FUSE layer) wakes every few hundred
 * milliseconds, looks at the pack and then does some of: log a change of
 * the pack, render a new status.json snapshot, rewrite -o metrics_file,
 * drop the kernel's pages of the pack's files.  Which of them, and when,
 * is decided here, from the clock and the pack-changed record alone, so
 * that the schedule can be tested without a mount.
 */
#ifndef MOEPACK_WATCHPLAN_H
#define MOEPACK_WATCHPLAN_H

#include <stdbool.h>
#include <time.h>

#include "namespace/stats.h"

/* The actions of one tick, in the order they are to be done. */
enum {
	MP_WATCH_REPORT = 1,      /* log the change of the pack (once) */
	MP_WATCH_WRITE_FILE = 2,  /* a new snapshot, written to metrics_file */
	MP_WATCH_REFRESH = 4,     /* a new snapshot (unless WRITE_FILE made one) */
	MP_WATCH_INVALIDATE = 8,  /* drop the pages of every file with pack bytes */
};

struct mp_watch_plan {
	struct timespec next_status, next_file;  /* CLOCK_MONOTONIC */
	long status_ms, file_ms;                 /* the periods */
	bool file;                               /* -o metrics_file is set */
	bool reported;                           /* the change is handled */
};

/*
 * `now` is the watcher's start.  A snapshot is due at once; the metrics
 * file (written once before the watcher starts) a period on.
 */
void mp_watch_plan_init(struct mp_watch_plan *p, const struct timespec *now,
			long status_ms, bool file, long file_ms);

/*
 * The actions due at `now`.  `change` is the pack-changed record when the
 * pack changed and p->reported is still false, else NULL.  A change is
 * logged and followed by a snapshot and dropped pages at once, unless a
 * lease break reported it (the lease thread does all that); either way
 * the metrics file is written at once, for the alert.
 */
unsigned mp_watch_plan_step(struct mp_watch_plan *p, const struct timespec *now,
			    const struct mp_status_change *change);

/* t += ms. */
void mp_timespec_add_ms(struct timespec *t, long ms);

#endif
