/*
 * sharedmaps.h - processes that map the pack shared and writable.
 *
 * Stores through a MAP_SHARED, PROT_WRITE mapping of a file change its
 * bytes without moving its size or times until the pages are written
 * back, and without breaking a lease the mapping was made before.  A
 * mount that has no read lease (-o nolease, NFS, overlayfs) relies on the
 * pack's size and times, so it refuses a pack that such a mapping holds
 * when it can see one: in /proc/PID/maps of each process whose maps it
 * may read.  Mappings it cannot see (other users' processes for a daemon
 * that is not root, other machines) slip through; moepackfs(1) says so.
 * No FUSE; the parsing is apart from the files so that it can be tested
 * on crafted lines.
 */
#ifndef MOEPACK_SHAREDMAPS_H
#define MOEPACK_SHAREDMAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * One line of /proc/PID/maps ("start-end perms offset major:minor inode
 * path"): true when it maps inode `ino` of device (major, minor) with
 * both 'w' and 's' in its permissions.
 */
bool mp_maps_line_writes(const char *line, unsigned major, unsigned minor, uint64_t ino);

/*
 * The first process under `proc` (normally "/proc") that maps inode ino
 * of device dev shared and writable, or 0 when none can be seen.  Long
 * lines are read in pieces; a process that ends or cannot be read is
 * skipped.
 */
pid_t mp_maps_find_shared_writer(const char *proc, dev_t dev, uint64_t ino);

#endif
