/*
 * lease.h - the read lease on the pack (lease.c).
 *
 * While it is held a writer cannot open the pack without the daemon
 * knowing first, and the per-read check is one atomic load (reply.c);
 * fs->lease says which of enum mp_lease (packstate.h) the mount has.
 */
#ifndef MOEPACK_DAEMON_LEASE_H
#define MOEPACK_DAEMON_LEASE_H

#include <stdbool.h>

#include "daemon/fsstate.h"

/* The signal a lease break sends (F_SETSIG). */
#define MP_FS_LEASE_SIGNAL (SIGRTMIN + 1)

/*
 * Take a read lease on the pack open as fd, first thing after opening it
 * (before its identity is taken and before validation reads it):
 * MP_LEASE_HELD; or -1 with errno EAGAIN when the pack is open for writing
 * (the mount is refused); or MP_LEASE_FALLBACK with fs->lease_reason
 * filled, also where the file system's leases do not see every writer
 * (mp_lease_fs_sees_writers).  `off`: leases are disabled (-o nolease).
 * The lease signal must be blocked in every thread (mp_fs_block_signals,
 * first thing in main).
 */
int mp_fs_lease_take(struct mp_fs *fs, int fd, bool off);
/*
 * Whether a lease taken by mp_fs_lease_take is still unbroken: false once
 * a writer asked for the pack (the break waits for the lease's holder).
 * True when there is no lease to keep.
 */
bool mp_fs_lease_intact(const struct mp_fs *fs, int fd);
/* Give the lease back (a mount that is refused after taking it). */
void mp_fs_lease_release(struct mp_fs *fs, int fd);
void mp_fs_block_signals(void);
/*
 * After daemonizing (the lease belongs to the process that set it): make
 * this process its owner and start the thread that answers a lease break.
 * A writer that came in between is handled at once.  0 or an errno.
 */
int mp_fs_lease_start(struct mp_fs *fs);
void mp_fs_lease_stop(struct mp_fs *fs);

#endif
