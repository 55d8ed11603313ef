/*
 * fsstate.h - struct mp_fs, what one mount's operations and threads share.
 *
 * The FUSE operations (fs.c), their read replies (reply.c), the
 * snapshots (snapshots.c), the watcher (watch.c), the lease (lease.c) and
 * -o metrics_file (metricsfile.c) all work on the one struct mp_fs that
 * prepare.c fills before mounting and hands to libfuse as the session's
 * userdata.  Its set-up, teardown, the daemon's warnings and the log are
 * fsstate.c's.
 */
#ifndef MOEPACK_DAEMON_FSSTATE_H
#define MOEPACK_DAEMON_FSSTATE_H

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "namespace/attr.h"
#include "namespace/metrics.h"
#include "namespace/packstate.h"
#include "namespace/snapshot.h"
#include "base/bufpool.h"
#include "fetch/remote.h"
#include "pack/pack.h"
#include "pack/storage.h"
#include "seal/sealcheck.h"
#include "namespace/stats.h"
#include "namespace/tree.h"

/* Everything the operations need; the session's userdata. */
struct mp_fs {
	const struct mp_pack *pack;
	struct mp_tree tree;
	struct mp_stats stats;
	struct mp_metrics metrics;     /* what `metrics` adds to stats */
	struct mp_status_info status;  /* the fixed facts of status.json */
	struct mp_metrics_scan scan;   /* -o verify=payload's scan */
	struct timespec started;       /* CLOCK_MONOTONIC at mount, for uptime */
	const char *metrics_file;      /* -o metrics_file, or NULL */
	unsigned metrics_interval;     /* its rewrite period, seconds */
	atomic_ullong metrics_writes, metrics_write_errors;
	dev_t metrics_written_dev;     /* the file the last write made (0: none) */
	ino_t metrics_written_ino;
	const char *client_manifest;   /* <pack>.manifest.json's bytes (attr: its size) */

	struct mp_attr_facts attr;     /* owner, mode, times of every node */
	double timeout;                /* entry and attribute validity, s */

	unsigned max_request;          /* largest read request, bytes */
	unsigned max_background;       /* requests in flight the kernel may send */
	unsigned readahead;            /* max_readahead for init, 0: leave */
	unsigned max_read;             /* -o max_read=N as given, 0: none */
	int no_opendir;                /* set by init: FUSE_CAP_NO_OPENDIR_SUPPORT */
	int no_open;                   /* set by init: FUSE_CAP_NO_OPEN_SUPPORT */
	bool foreground;               /* log to stderr, else syslog */
	/* a pack from mirrors: the daemon writes it while it is mounted, so its
	 * times move and no lease is held; every read is checked against the
	 * seal instead (daemon/remotepack.c) */
	bool pack_filled_here;
	struct mp_remote *remote;      /* the fill (NULL: a local pack) */
	const char *remote_source;     /* SOURCE as given */

	/*
	 * The pack-changed state (packstate.h): from its entry on every read
	 * of pack bytes fails with EIO.  With a lease held the per-read check
	 * is the load of its `changed` alone.
	 */
	struct mp_pack_state ps;
	atomic_uint inflight;          /* reads serving pack bytes right now */

	/*
	 * The read lease on the pack (mp_fs_lease_*).  `lease` is one of
	 * enum mp_lease (packstate.h); `lease_reason` says why there is none.
	 */
	_Atomic int lease;
	char lease_reason[MP_MSG_MAX];
	pthread_t lease_thread;
	bool lease_thread_on;
	atomic_bool lease_stop;

	/* How pack bytes are read from storage, and the buffers they land in. */
	struct mp_storage *storage;
	struct mp_bufpool *reqbufs;    /* max_request plus two pages each */
	/* -o verify=seal: every fill checked (NULL: off). */
	struct mp_sealcheck *seal;
	struct mp_snap_slot snaps;     /* the current status.json and metrics */

	/* The watcher thread (mp_fs_watch_start). */
	struct fuse_session *se;
	pthread_t watcher;
	bool watching;
	pthread_mutex_t lock;          /* guards `stop`, with `wake` */
	atomic_bool stop;
	pthread_cond_t wake;
	char warnings[MP_STATUS_DAEMON_WARNINGS][MP_MSG_MAX];
	unsigned nwarnings;
};

/*
 * Set up the pack-changed state, the snapshots and the watcher's lock:
 * `id` is what the pack looked like when validated.  False when out of
 * resources.
 */
bool mp_fs_setup(struct mp_fs *fs, const struct mp_pack_id *id);
void mp_fs_cleanup(struct mp_fs *fs);

/* Add a warning of the daemon to status.json (before the loop runs). */
void mp_fs_warn(struct mp_fs *fs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * One line for the log: stderr in the foreground, else syslog (after
 * fuse_daemonize() stderr is /dev/null).  The watcher, the lease thread
 * and the seal's replies report through it.
 */
void mp_fs_log(const struct mp_fs *fs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
