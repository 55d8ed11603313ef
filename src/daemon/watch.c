/*
 * watch.c - the watcher thread: a pack that changes under the mount, and
 * the snapshots' rhythm.
 *
 * Every MP_FS_WATCH_MS it fstat()s the pack (packstate.h says what is a
 * change; with a lease held a change comes by the lease's break too,
 * lease.c); on one it logs one line and drops the kernel's pages of every
 * file that holds pack bytes, so cached reads and mapped pages fault back
 * and get EIO.  What else is due when (a new status.json snapshot, the
 * -o metrics_file write) is namespace/watchplan.h's schedule.  moepackfs.c
 * starts it after daemonizing and stops it before unmounting.
 */
#include "config.h"

#include "daemon/watch.h"

#include "daemon/metricsfile.h"
#include "daemon/snapshots.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "namespace/watchplan.h"
#include "base/text.h"

static void report_change(const struct mp_fs *fs, const struct mp_status_change *c)
{
	char path[MP_STATUS_PATH_MAX], om[40], nm[40], oc[40], nc[40];
	const char *p = fs->status.pack_path ? fs->status.pack_path : "";

	mp_text_escape(path, sizeof path, p, strlen(p), 0);
	mp_iso8601_utc_ns(&c->old_mtime, om, sizeof om);
	mp_iso8601_utc_ns(&c->new_mtime, nm, sizeof nm);
	mp_iso8601_utc_ns(&c->old_ctime, oc, sizeof oc);
	mp_iso8601_utc_ns(&c->new_ctime, nc, sizeof nc);
	mp_fs_log(fs, "%s: the pack changed while mounted (size %" PRIu64 " -> %"
		 PRIu64 ", mtime %s -> %s, ctime %s -> %s): every read of pack "
		 "bytes now fails with EIO; remount to serve it again",
		 path, c->old_size, c->new_size, om, nm, oc, nc);
}

/*
 * Drop the kernel's pages of every file that may hold pack bytes: the
 * whole-pack file, then every role and object file and every .f32 file
 * decoded from them (their inode numbers are one range, to the end).  -ENOENT (an inode the kernel does not know) is the
 * common answer and fine.  Bounded by the tree; given up on at unmount.
 */
void mp_fs_invalidate_pack_files(struct mp_fs *fs)
{
	fuse_lowlevel_notify_inval_inode(fs->se, MP_INO_PACK, 0, 0);
	for (uint64_t ino = fs->tree.first_file_ino; ino < mp_tree_pack_files_end(&fs->tree);
	     ino++) {
		if ((ino & 1023) == 0 && atomic_load(&fs->stop))
			return;
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
	}
}

/* Wait for the next tick; false when told to stop.  Called and returns with fs->lock. */
static bool wait_tick(struct mp_fs *fs)
{
	struct timespec tick;

	clock_gettime(CLOCK_MONOTONIC, &tick);
	mp_timespec_add_ms(&tick, MP_FS_WATCH_MS);
	while (!fs->stop && pthread_cond_timedwait(&fs->wake, &fs->lock, &tick) == 0)
		;
	return !fs->stop;
}

/* One tick: look at the pack, then do what the plan says is due. */
static void watch_tick(struct mp_fs *fs, struct mp_watch_plan *plan, bool *file_failing)
{
	struct mp_status_change c, *fresh = NULL;
	struct timespec now;
	struct stat st;
	unsigned act;

	if (!fs->pack_filled_here && !mp_pack_state_changed(&fs->ps) &&
	    fstat(fs->pack->file.fd, &st) == 0)
		mp_pack_state_check(&fs->ps, &st);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (mp_pack_state_changed(&fs->ps) && !plan->reported) {
		mp_pack_state_record(&fs->ps, &c);
		fresh = &c;
	}
	act = mp_watch_plan_step(plan, &now, fresh);
	if (act & MP_WATCH_REPORT)
		report_change(fs, &c);
	/* a new snapshot, written out */
	if (act & MP_WATCH_WRITE_FILE)
		mp_fs_metrics_write_logged(fs, file_failing);
	if (act & MP_WATCH_REFRESH)
		mp_fs_snap_publish(fs);
	if (act & MP_WATCH_INVALIDATE)
		mp_fs_invalidate_pack_files(fs);
}

static void *watch(void *arg)
{
	struct mp_fs *fs = arg;
	struct mp_watch_plan plan;
	struct timespec now;
	bool file_failing = false;

	clock_gettime(CLOCK_MONOTONIC, &now);
	/* written once before daemonizing (metricsfile.c): the next is a period on */
	mp_watch_plan_init(&plan, &now, MP_FS_STATUS_MS, fs->metrics_file != NULL,
			   (long)fs->metrics_interval * 1000L);
	pthread_mutex_lock(&fs->lock);
	while (wait_tick(fs)) {
		pthread_mutex_unlock(&fs->lock);
		watch_tick(fs, &plan, &file_failing);
		pthread_mutex_lock(&fs->lock);
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

int mp_fs_watch_start(struct mp_fs *fs, struct fuse_session *se)
{
	int rc;

	fs->se = se;
	rc = pthread_create(&fs->watcher, NULL, watch, fs);
	fs->watching = rc == 0;
	return rc;
}

void mp_fs_watch_stop(struct mp_fs *fs)
{
	if (!fs->watching)
		return;
	pthread_mutex_lock(&fs->lock);
	fs->stop = true;
	pthread_cond_signal(&fs->wake);
	pthread_mutex_unlock(&fs->lock);
	pthread_join(fs->watcher, NULL);
	fs->watching = false;
}
