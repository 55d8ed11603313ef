/*
 * fsstate.c - set up and tear down a mount's struct mp_fs, and what every
 * part of the daemon reports through: status.json's warnings of the
 * daemon and the one log line.
 *
 * prepare.c calls mp_fs_setup before mounting, daemon.c mp_fs_cleanup after;
 * the threads that fsstate.h's struct holds are watch.c's and lease.c's.
 */
#include "config.h"

#include "daemon/fsstate.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

/* A condition variable on the monotonic clock: a jump of the wall clock
 * must not stall the watcher. */
static bool init_wake(pthread_cond_t *wake)
{
	pthread_condattr_t attr;
	bool ok;

	if (pthread_condattr_init(&attr) != 0)
		return false;
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	ok = pthread_cond_init(wake, &attr) == 0;
	pthread_condattr_destroy(&attr);
	return ok;
}

bool mp_fs_setup(struct mp_fs *fs, const struct mp_pack_id *id)
{
	/* fs->lease is the pack's open's (mp_fs_lease_take), before this */
	atomic_init(&fs->inflight, 0);
	atomic_init(&fs->lease_stop, false);
	fs->lease_thread_on = false;
	atomic_init(&fs->stop, false);
	fs->watching = false;
	if (!mp_pack_state_init(&fs->ps, id))
		return false;
	if (!mp_snap_slot_init(&fs->snaps))
		goto out_ps;
	if (pthread_mutex_init(&fs->lock, NULL) != 0)
		goto out_snaps;
	if (init_wake(&fs->wake))
		return true;
	pthread_mutex_destroy(&fs->lock);
out_snaps:
	mp_snap_slot_destroy(&fs->snaps);
out_ps:
	mp_pack_state_destroy(&fs->ps);
	return false;
}

void mp_fs_cleanup(struct mp_fs *fs)
{
	mp_snap_slot_destroy(&fs->snaps);
	pthread_cond_destroy(&fs->wake);
	pthread_mutex_destroy(&fs->lock);
	mp_pack_state_destroy(&fs->ps);
}

void mp_fs_warn(struct mp_fs *fs, const char *fmt, ...)
{
	va_list ap;

	if (fs->nwarnings >= MP_STATUS_DAEMON_WARNINGS)
		return;
	va_start(ap, fmt);
	vsnprintf(fs->warnings[fs->nwarnings++], MP_MSG_MAX, fmt, ap);
	va_end(ap);
}

void mp_fs_log(const struct mp_fs *fs, const char *fmt, ...)
{
	char line[MP_MSG_MAX + 2 * MP_STATUS_PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	/* after fuse_daemonize() stderr is /dev/null */
	if (fs->foreground)
		fprintf(stderr, "moepackfs: %s\n", line);
	else
		syslog(LOG_ERR, "%s", line);
}
