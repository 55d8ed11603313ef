/*
 * snapshots.h - the status.json and metrics snapshots (snapshots.c).
 */
#ifndef MOEPACK_DAEMON_SNAPSHOTS_H
#define MOEPACK_DAEMON_SNAPSHOTS_H

#include <stdbool.h>

#include "daemon/fsstate.h"

/*
 * The status.json and metrics snapshots.  mp_fs_snap_refresh renders a
 * new one and makes it current (false with *err when it cannot be
 * rendered); mp_fs_snap_settle drops the kernel's pages of the old one and
 * only then moves the files' ctime to the current one; mp_fs_snap_publish
 * is both.  Settling needs the session (fs->se: the watcher runs).
 */
bool mp_fs_snap_refresh(struct mp_fs *fs, struct mp_error *err);
void mp_fs_snap_settle(struct mp_fs *fs);
void mp_fs_snap_publish(struct mp_fs *fs);

#endif
