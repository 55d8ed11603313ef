/*
 * metricsfile.c - -o metrics_file: the metrics written out for
 * node_exporter's textfile collector.
 *
 * Once right after mounting (moepackfs.c, where a failure can still be
 * told and refuse the mount), then from the watcher every
 * fs->metrics_interval seconds (watch.c), each time a fresh snapshot
 * written through a temporary and a rename (base/outfile.h); at a clean
 * unmount the file is removed if it is still the one the last write made.
 */
#include "config.h"

#include "daemon/metricsfile.h"

#include <unistd.h>

#include "daemon/snapshots.h"
#include "base/outfile.h"

bool mp_fs_metrics_write(struct mp_fs *fs, struct mp_error *err)
{
	struct mp_status_snap *snap;
	struct stat st;
	enum mp_err rc;

	if (!mp_fs_snap_refresh(fs, err)) {
		mp_fail(err, MP_E_NOMEM, "out of memory: rendering the metrics");
		atomic_fetch_add(&fs->metrics_write_errors, 1);
		return false;
	}
	snap = mp_snap_slot_get(&fs->snaps);
	rc = mp_output_write_atomic_as(fs->metrics_file, MP_TMP_PRIVATE, MP_E_PACK_IO,
				       snap->metrics, snap->metrics_len, &st, err);
	mp_snap_put(snap);
	if (rc == MP_OK) {
		fs->metrics_written_dev = st.st_dev;
		fs->metrics_written_ino = st.st_ino;
	}
	atomic_fetch_add(rc == MP_OK ? &fs->metrics_writes : &fs->metrics_write_errors, 1);
	return rc == MP_OK;
}

void mp_fs_metrics_remove(struct mp_fs *fs)
{
	struct stat st;

	/* ours only: the file the last write made, not one put there since */
	if (fs->metrics_file && fs->metrics_written_ino && lstat(fs->metrics_file, &st) == 0 &&
	    st.st_dev == fs->metrics_written_dev && st.st_ino == fs->metrics_written_ino)
		unlink(fs->metrics_file);
}

/*
 * -o metrics_file, from the watcher: one log line when writing starts to
 * fail, one when it works again, never one per period.
 */
void mp_fs_metrics_write_logged(struct mp_fs *fs, bool *failing)
{
	struct mp_error err = {0};
	bool ok = mp_fs_metrics_write(fs, &err);

	if (fs->se)
		mp_fs_snap_settle(fs);
	if (!ok && !*failing)
		mp_fs_log(fs, "-o metrics_file: %s (retrying every %u s)", err.msg,
			 fs->metrics_interval);
	else if (ok && *failing)
		mp_fs_log(fs, "-o metrics_file: writing works again");
	*failing = !ok;
}
