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

/* The operations table (only the operations moepackfs implements). */
extern const struct fuse_lowlevel_ops mp_fs_ops;

#endif
