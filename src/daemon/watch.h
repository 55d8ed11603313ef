/*
 * watch.h - the watcher thread (watch.c).
 */
#ifndef MOEPACK_DAEMON_WATCH_H
#define MOEPACK_DAEMON_WATCH_H

#include "daemon/fsstate.h"

/* How often the watcher looks at the pack, and refreshes status.json. */
#define MP_FS_WATCH_MS 200
#define MP_FS_STATUS_MS 1000

/*
 * The watcher: every MP_FS_WATCH_MS it fstat()s the pack; on a change it
 * logs one line and drops the kernel's cached pages of every file that
 * holds pack bytes.  Every MP_FS_STATUS_MS it renders a new snapshot of
 * status.json and metrics, and every fs->metrics_interval seconds writes
 * fs->metrics_file (a failure is logged once, until a write works again).
 * Start after daemonizing; stop before unmounting.
 */
int mp_fs_watch_start(struct mp_fs *fs, struct fuse_session *se);
void mp_fs_watch_stop(struct mp_fs *fs);

/*
 * Drop the kernel's pages of every file that may hold pack bytes (the
 * pack changed): the watcher's and the lease break's.
 */
void mp_fs_invalidate_pack_files(struct mp_fs *fs);

#endif
