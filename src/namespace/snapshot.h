/*
 * snapshot.h - the status.json and metrics snapshots of a mount.
 *
 * Both files are served from one snapshot, rendered at most once per
 * refresh period, so that a reader taking them in pieces (a small
 * max_read, mmap faults) gets one report.  A snapshot is reference
 * counted: the slot holds one reference, every reader another, and the
 * last one frees it.  Each file is as long as the report it serves
 * (node.h), held in a buffer of that size: mp_stats_max_len() and
 * mp_metrics_max_len() of the pack's layers bound them.
 */
#ifndef MOEPACK_SNAPSHOT_H
#define MOEPACK_SNAPSHOT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/errors.h"
#include "namespace/metrics.h"
#include "namespace/node.h"
#include "namespace/stats.h"
#include "seal/sealcheck.h"

struct mp_status_snap {
	atomic_uint refs;          /* the slot's reference, and each reader's */
	/* CLOCK_REALTIME just before its counters were read: every event
	 * before it is counted, so a reader that waits for a time after its
	 * own reads (the files' ctime) sees them */
	struct timespec at;
	size_t text_len;           /* status.json's length */
	char *text;
	size_t metrics_len;        /* the metrics' length */
	char *metrics;
};

/* What every snapshot is rendered from; all of it outlives the snapshots. */
struct mp_snap_source {
	const struct mp_stats *stats;
	const struct mp_metrics *metrics;
	const struct mp_status_info *status;  /* the fixed facts of status.json */
	const struct mp_metrics_scan *scan;   /* -o verify=payload's scan */
	struct mp_sealcheck *seal;            /* NULL: no -o verify=seal */
	const struct timespec *started;       /* CLOCK_MONOTONIC at mount */
};

/* What moves between snapshots, as the caller read it for this one. */
struct mp_snap_moment {
	struct mp_status_change change;       /* the pack-changed record */
	int lease;                            /* enum mp_lease (packstate.h) */
	const char *lease_reason;
	unsigned nwarnings;                   /* the daemon's own warnings */
	const char (*warnings)[MP_MSG_MAX];
	uint64_t file_writes, file_write_errors;  /* -o metrics_file */
	const struct mp_status_remote *remote;    /* NULL: a local pack */
};

/* The facts of the metrics report at this moment (uptime, RSS: now). */
void mp_snap_metrics_info(const struct mp_snap_source *src, const struct mp_snap_moment *m,
			  struct mp_metrics_info *mi);

/*
 * Render status.json, then the metrics (counters read right after
 * status.json's).  A new snapshot with one reference, or NULL with *err
 * set.
 */
struct mp_status_snap *mp_snap_render(const struct mp_snap_source *src,
				      const struct mp_snap_moment *m, struct mp_error *err);

/* Take and drop a reference (NULL is fine for put). */
void mp_snap_get(struct mp_status_snap *snap);
void mp_snap_put(struct mp_status_snap *snap);

/* The current snapshot of a mount. */
struct mp_snap_slot {
	pthread_mutex_t lock;      /* guards cur */
	struct mp_status_snap *cur;
	/* the files' ctime, in ns: the at of the newest snapshot such that
	 * no older one can be read any more (0: none yet) */
	atomic_llong ns;
};

bool mp_snap_slot_init(struct mp_snap_slot *slot);
void mp_snap_slot_destroy(struct mp_snap_slot *slot);
/*
 * Make snap (its reference) the current one; the old one is dropped.  The
 * ctime moves to it only if it is the first: the kernel may still hold
 * pages of the old one, so the caller moves it with mp_snap_slot_settle()
 * once they are gone.
 */
void mp_snap_slot_set(struct mp_snap_slot *slot, struct mp_status_snap *snap);
/* snap->at in ns. */
long long mp_snap_ns(const struct mp_status_snap *snap);
/* No snapshot older than ns (mp_snap_ns of one set) can be read any more:
 * the ctime moves to ns, unless it is past it already. */
void mp_snap_slot_settle(struct mp_snap_slot *slot, long long ns);
/* The current one with a reference for the caller, or NULL: none yet. */
struct mp_status_snap *mp_snap_slot_get(struct mp_snap_slot *slot);
/* The files' ctime (CLOCK_REALTIME ns, see ns above), 0: none yet. */
long long mp_snap_slot_ns(const struct mp_snap_slot *slot);
/* The lengths of status.json and metrics in the current snapshot (0, 0:
 * none yet). */
void mp_snap_slot_lengths(struct mp_snap_slot *slot, uint64_t *status, uint64_t *metrics);

#endif
