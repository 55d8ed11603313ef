/*
 * mountpoint.h - the mount point's checks and the mount (mountpoint.c).
 */
#ifndef MOEPACK_DAEMON_MOUNTPOINT_H
#define MOEPACK_DAEMON_MOUNTPOINT_H

#include "daemon/daemon.h"

/*
 * The mount point as given, before libfuse sees it and before a long
 * validation: a directory, not already a moepackfs mount, not a dead FUSE
 * mount.  0, or EXIT_USAGE with the message printed.
 */
int daemon_check_mountpoint(struct daemon *d);

/*
 * Mount se at d->cmd.mountpoint, checking again under an flock on the
 * mount point that no other moepackfs mounted there meanwhile, and
 * warning when it is not empty.  0 or an exit status, the message printed.
 */
int daemon_mount_locked(struct daemon *d, struct fuse_session *se);

/*
 * Once mounted: set the mount's read-ahead window to -o readahead_kb (or
 * the largest request) and read back the one the kernel uses for
 * status.json.  A failure is a warning, on stderr and in status.json.
 */
void daemon_setup_readahead(struct daemon *d);

#endif
