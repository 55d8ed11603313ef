/*
 * attr.h - the attributes of every node of the mounted tree.
 *
 * What stat(2) and statfs(2) say of the mount, assembled from the tree,
 * the pack and the mount's options, with no FUSE in sight: the FUSE layer
 * hands the result to the kernel as it is.
 */
#ifndef MOEPACK_ATTR_H
#define MOEPACK_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>

#include "namespace/tree.h"
#include "pack/pack.h"

/* What the attributes of every node are made of, fixed at mount. */
struct mp_attr_facts {
	uid_t uid;                     /* owner of every node */
	gid_t gid;
	mode_t umask;                  /* removed from 0555 / 0444 */
	blksize_t blksize;             /* st_blksize: the pack's alignment */
	struct timespec mtime;         /* the pack's mtime, for every node */
	size_t client_manifest_len;    /* <pack>.manifest.json's size */
	/* status.json and metrics (with the expert_reads attribute): who may
	 * read what they say of the mount's readers, before the umask */
	mode_t status_mode;
};

/* The snapshot status.json and metrics serve now: its time and sizes. */
struct mp_attr_snapshot {
	long long ns;                  /* CLOCK_REALTIME ns, 0: none yet */
	uint64_t status_len, metrics_len;
};

/*
 * st_blksize for a pack of this alignment: at least a page, at most 1 GiB
 * (fuse_attr.blksize is 32 bits).
 */
blksize_t mp_attr_blksize(uint64_t alignment);

/*
 * Fill *st for inode `ino`; false when it is no node of the tree.  Every
 * time is the pack's mtime, but the ctime of status.json and metrics is
 * the snapshot's (when above 0), so that NFS servers see them change, and
 * their sizes are the snapshot's.
 */
bool mp_attr_stat(const struct mp_attr_facts *a, const struct mp_tree *tree,
		  const struct mp_pack *pack, uint64_t ino,
		  const struct mp_attr_snapshot *snap, struct stat *st);

/*
 * Whether a reader with this uid, primary gid and supplementary groups
 * may read status.json and metrics, and the layers' expert_reads
 * attribute, which says the same: root always, else by status_mode as
 * the kernel would check it (owner, group, others).
 */
bool mp_attr_may_read_status(const struct mp_attr_facts *a, uid_t uid, gid_t gid,
			     const gid_t *groups, int ngroups);

/* True for the files whose contents are a snapshot (status.json, metrics). */
bool mp_attr_is_snapshot(const struct mp_tree *tree, uint64_t ino);

/* What statfs(2) says of the mount: read-only, sized by the pack. */
void mp_attr_statvfs(const struct mp_attr_facts *a, const struct mp_tree *tree,
		     const struct mp_pack *pack, struct statvfs *sv);

#endif
