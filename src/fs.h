/*
 * fs.h - the FUSE low-level operations of moepackfs.
 *
 * A thin layer: every operation decodes its inode with tree.h, finds bytes
 * with pack.h, counts with stats.h and ends in exactly one fuse_reply_*.
 * Nothing is allocated per inode or per open; status.json is rendered
 * into a buffer that lives for one read request.
 */
#ifndef MOEPACK_FS_H
#define MOEPACK_FS_H

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "pack.h"
#include "stats.h"
#include "tree.h"

/* Everything the operations need; the session's userdata. */
struct mp_fs {
	const struct mp_pack *pack;
	struct mp_tree tree;
	struct mp_stats stats;
	struct mp_status_info status;  /* the fixed facts of status.json */
	const char *client_manifest;   /* <pack>.manifest.json's bytes */
	size_t client_manifest_len;

	uid_t uid;                     /* owner of every node */
	gid_t gid;
	mode_t umask;                  /* removed from 0555 / 0444 */
	blksize_t blksize;             /* st_blksize: the pack's alignment */
	struct timespec mtime;         /* the pack's mtime, for every node */
	double timeout;                /* entry and attribute validity, s */

	unsigned max_request;          /* largest read request, bytes */
	unsigned readahead;            /* max_readahead for init, 0: leave */
	unsigned max_read;             /* -o max_read=N as given, 0: none */
	int no_opendir;                /* set by init: FUSE_CAP_NO_OPENDIR_SUPPORT */
	int no_open;                   /* set by init: FUSE_CAP_NO_OPEN_SUPPORT */
};

/* The operations table (only the operations moepackfs implements). */
extern const struct fuse_lowlevel_ops mp_fs_ops;

/* Fill *st for an inode of the tree; -1 (ENOENT) when it is not one. */
int mp_fs_stat(const struct mp_fs *fs, fuse_ino_t ino, struct stat *st);

#endif
