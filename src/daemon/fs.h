/*
 * fs.h - the FUSE low-level operations of moepackfs.
 *
 * A thin layer: every operation decodes its inode with tree.h, takes its
 * attributes from attr.h, finds bytes with pack.h (and f32view.h), counts
 * with stats.h and ends in exactly one fuse_reply_*.  Nothing is allocated
 * per inode or per open.  The state they share is fsstate.h's.
 */
#ifndef MOEPACK_FS_H
#define MOEPACK_FS_H

#include <stdbool.h>

#include "daemon/fsstate.h"

/*
 * Render a new snapshot and write its metrics to fs->metrics_file (-o
 * metrics_file) atomically.  False with *err set when it cannot be written.
 */
bool mp_fs_metrics_write(struct mp_fs *fs, struct mp_error *err);
/*
 * On a clean unmount: remove fs->metrics_file if it is still the file the
 * last write made, so that no report of a mount that is gone stays behind
 * to look like a daemon that stopped writing.  Call once the watcher has
 * stopped.
 */
void mp_fs_metrics_remove(struct mp_fs *fs);

/*
 * -o metrics_file from the watcher: write it, settle the snapshot, and log
 * one line when writing starts to fail (*failing) and one when it works
 * again.
 */
void mp_fs_metrics_write_logged(struct mp_fs *fs, bool *failing);

/* The operations table (only the operations moepackfs implements). */
extern const struct fuse_lowlevel_ops mp_fs_ops;

#endif
