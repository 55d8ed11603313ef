/* attr.c - the attributes of every node of the mounted tree (attr.h). */
#include "config.h"

#include "namespace/attr.h"

#include <string.h>

#include "namespace/node.h"

/* st_blksize tells readers how much to ask for at once: the alignment,
 * but not more than 1 GiB, which no reader's buffer should be. */
#define BLKSIZE_MAX (1u << 30)

blksize_t mp_attr_blksize(uint64_t alignment)
{
	if (alignment < MP_PAGE)
		return MP_PAGE;
	if (alignment > BLKSIZE_MAX)
		return BLKSIZE_MAX;
	return (blksize_t)alignment;
}

bool mp_attr_is_snapshot(const struct mp_tree *tree, uint64_t ino)
{
	return ino == MP_INO_STATUS || ino == tree->metrics_ino;
}

/*
 * status.json: mtime is the pack's (what moepackfs(1) promises), ctime
 * the time of the snapshot served, so that NFS servers, whose change
 * attribute follows ctime, see it move.  The kernel's pages of it are
 * dropped by the watcher on each new snapshot, not by mtime.
 */
static void snapshot_ctime(struct stat *st, long long ns)
{
	if (ns > 0) {
		st->st_ctim.tv_sec = (time_t)(ns / 1000000000LL);
		st->st_ctim.tv_nsec = (long)(ns % 1000000000LL);
	}
}

bool mp_attr_stat(const struct mp_attr_facts *a, const struct mp_tree *tree,
		  const struct mp_pack *pack, uint64_t ino,
		  const struct mp_attr_snapshot *snap, struct stat *st)
{
	struct mp_node_sizes sizes = {
		.client_manifest = a->client_manifest_len,
		.status = snap->status_len,
		.metrics = snap->metrics_len,
	};
	struct mp_node n;
	uint64_t size;

	if (!mp_tree_node(tree, ino, &n))
		return false;
	memset(st, 0, sizeof *st);
	st->st_ino = ino;
	if (mp_node_is_dir(n.kind))
		st->st_mode = S_IFDIR | (0555 & ~a->umask);
	else if (n.kind == MP_NODE_STATUS || n.kind == MP_NODE_METRICS)
		st->st_mode = S_IFREG | (a->status_mode & 0444 & ~a->umask);
	else
		st->st_mode = S_IFREG | (0444 & ~a->umask);
	st->st_nlink = mp_tree_nlink(tree, ino);
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	size = mp_node_size(pack, &n, &sizes);
	st->st_size = (off_t)size;
	st->st_blksize = a->blksize;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
	st->st_atim = a->mtime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->mtime;
	if (n.kind == MP_NODE_STATUS || n.kind == MP_NODE_METRICS)
		snapshot_ctime(st, snap->ns);
	return true;
}

bool mp_attr_may_read_status(const struct mp_attr_facts *a, uid_t uid, gid_t gid,
			     const gid_t *groups, int ngroups)
{
	mode_t m = a->status_mode & ~a->umask;
	bool in_group = gid == a->gid;

	if (uid == 0)
		return true;
	if (uid == a->uid)
		return (m & 0400) != 0;
	for (int i = 0; !in_group && i < ngroups; i++)
		in_group = groups[i] == a->gid;
	if (in_group)
		return (m & 0040) != 0;
	return (m & 0004) != 0;
}

void mp_attr_statvfs(const struct mp_attr_facts *a, const struct mp_tree *tree,
		     const struct mp_pack *pack, struct statvfs *sv)
{
	memset(sv, 0, sizeof *sv);
	sv->f_bsize = (unsigned long)a->blksize;
	sv->f_frsize = (unsigned long)a->blksize;
	sv->f_blocks = (pack->file.size + (uint64_t)a->blksize - 1) / (uint64_t)a->blksize;
	/* without dequant, the .f32 files' numbers are unused */
	sv->f_files = tree->end_ino - 1 -
		      (tree->dequant ? 0 : tree->metrics_ino - tree->first_f32_ino);
	sv->f_namemax = MP_TREE_NAME_MAX - 1;
	sv->f_flag = ST_RDONLY;
}
