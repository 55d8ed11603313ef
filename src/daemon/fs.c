/*
 * fs.c - FUSE low-level operations over a validated pack.
 *
 * Each operation decodes its inode (namespace/tree.h) and answers from
 * what the layers below say of the node; a read is counted here and
 * answered by reply.c, which says how pack bytes reach the reader.
 *
 * Counting.  fs_read counts each request once, before answering it, by
 * kind of file, role and O_DIRECT (the reader's open flags, which the
 * kernel sends with every read: no OPEN is needed) into metrics.h's sharded
 * relaxed atomics; errors by errno where they are answered.  No lock.
 *
 * Files are never opened in the daemon (FUSE_CAP_NO_OPEN_SUPPORT, see
 * fs_init), so no state is kept per open.
 * No operation allocates per inode; forget is a no-op.  Every path ends in
 * exactly one fuse_reply_*.
 */
#include "config.h"

#include "daemon/fs.h"
#include "daemon/reply.h"
#include "daemon/snapshots.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/limits.h> /* XATTR_SIZE_MAX */
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "namespace/node.h"

static struct mp_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/*
 * The node behind ino, or false with ENOENT replied: every operation on an
 * inode starts here (a stale NFS handle is such an inode).
 */
static bool node_or_reply(fuse_req_t req, struct mp_fs *fs, fuse_ino_t ino, struct mp_node *n)
{
	if (mp_tree_node(&fs->tree, ino, n))
		return true;
	fuse_reply_err(req, ENOENT);
	return false;
}

/* The current snapshot's time and sizes; one is rendered if there is none. */
static void snapshot_view(struct mp_fs *fs, struct mp_attr_snapshot *v)
{
	struct mp_error err = {0};

	mp_snap_slot_lengths(&fs->snaps, &v->status_len, &v->metrics_len);
	if (v->status_len == 0 && mp_fs_snap_refresh(fs, &err))
		mp_snap_slot_lengths(&fs->snaps, &v->status_len, &v->metrics_len);
	v->ns = mp_snap_slot_ns(&fs->snaps);
}

/* The attributes of an inode; false when it is none of the tree's. */
static bool stat_of(struct mp_fs *fs, fuse_ino_t ino, struct stat *st)
{
	struct mp_attr_snapshot v = {0};

	if (mp_attr_is_snapshot(&fs->tree, ino))
		snapshot_view(fs, &v);
	return mp_attr_stat(&fs->attr, &fs->tree, fs->pack, ino, &v, st);
}

/* Everything is immutable but the snapshots, whose attributes say when they changed. */
static double attr_timeout(const struct mp_fs *fs, fuse_ino_t ino)
{
	return mp_attr_is_snapshot(&fs->tree, ino) ? 0.0 : fs->timeout;
}

static void fill_entry(struct mp_fs *fs, fuse_ino_t ino,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof *e);
	e->ino = ino;
	/* the kernel wants 0 for the root (and warns otherwise) */
	e->generation = ino == MP_INO_ROOT ? 0 : fs->tree.inode_generation;
	e->attr_timeout = attr_timeout(fs, ino);
	e->entry_timeout = fs->timeout;
	stat_of(fs, ino, &e->attr);
}

/* ---- init -------------------------------------------------------------- */

static void want(struct fuse_conn_info *conn, unsigned cap)
{
	if (conn->capable & cap)
		conn->want |= cap;
}

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct mp_fs *fs = userdata;

	/* NFS: the kernel may come back with any nodeid (LOOKUP ino ".") */
	want(conn, FUSE_CAP_EXPORT_SUPPORT);
	want(conn, FUSE_CAP_SPLICE_WRITE);
	conn->want &= ~(unsigned)FUSE_CAP_SPLICE_MOVE;
	/*
	 * Without opendir the kernel neither sends OPENDIR/RELEASEDIR (two
	 * requests less per directory for `find`) and caches listings itself.
	 */
	want(conn, FUSE_CAP_NO_OPENDIR_SUPPORT);
	/*
	 * Likewise for files: an ENOSYS reply to OPEN makes the kernel stop
	 * sending OPEN and RELEASE and keep every file's page cache
	 * (FOPEN_KEEP_CACHE is its default then), which is what an immutable
	 * pack wants: a re-read of a cached role file costs no request at all.
	 */
	want(conn, FUSE_CAP_NO_OPEN_SUPPORT);
	/* Always READDIRPLUS: listing a directory also answers its lookups. */
	want(conn, FUSE_CAP_READDIRPLUS);
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
	/*
	 * Nothing relies on this any more (status.json's pages are dropped by
	 * the watcher, its mtime stays the pack's); kept so that a kernel
	 * seeing an mtime move for any reason drops stale pages.  Pack files
	 * have long attribute timeouts, so it costs them nothing.
	 */
	want(conn, FUSE_CAP_AUTO_INVAL_DATA);

	fs->status.export_support = !!(conn->want & FUSE_CAP_EXPORT_SUPPORT);
	fs->status.splice_write = !!(conn->want & FUSE_CAP_SPLICE_WRITE);
	fs->no_opendir = !!(conn->want & FUSE_CAP_NO_OPENDIR_SUPPORT);
	fs->no_open = !!(conn->want & FUSE_CAP_NO_OPEN_SUPPORT);

	if (fs->max_request)
		conn->max_write = fs->max_request;
	/* libfuse 3.14 fails init (EPROTO) unless this repeats -o max_read */
	conn->max_read = fs->max_read;
	if (fs->readahead)
		conn->max_readahead = fs->readahead;
	conn->time_gran = 1;
	/*
	 * The pieces of an O_DIRECT read and read-ahead are background
	 * requests, of which the kernel keeps 12 in flight by default: as
	 * many as the threads that serve them, so none waits in the kernel
	 * while a thread is free.
	 */
	if (fs->max_background > conn->max_background) {
		conn->max_background = fs->max_background;
		conn->congestion_threshold = fs->max_background * 3 / 4;
	}
}

/* ---- names ------------------------------------------------------------- */

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mp_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct mp_node dir;
	uint64_t ino;

	if (!node_or_reply(req, fs, parent, &dir))
		return;
	/* An NFS handle of any inode, file or not, comes back as (ino, ".") */
	if (strcmp(name, ".") == 0) {
		fill_entry(fs, parent, &e);
		fuse_reply_entry(req, &e);
		return;
	}
	if (!mp_node_is_dir(dir.kind)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	ino = mp_tree_lookup(&fs->tree, parent, name);
	if (ino == 0) {
		/* The tree never changes: let the kernel cache the miss too. */
		memset(&e, 0, sizeof e);
		e.entry_timeout = fs->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	fill_entry(fs, ino, &e);
	fuse_reply_entry(req, &e);
}

static void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	/* Inodes are arithmetic: there is nothing to release. */
	fuse_reply_none(req);
}

static void fs_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	fuse_reply_none(req);
}

static void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mp_fs *fs = fs_of(req);
	struct mp_node n;
	struct stat st;

	if (!node_or_reply(req, fs, ino, &n))
		return;
	stat_of(fs, ino, &st);
	fuse_reply_attr(req, &st, attr_timeout(fs, ino));
}

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct mp_fs *fs = fs_of(req);
	struct statvfs sv;

	mp_attr_statvfs(&fs->attr, &fs->tree, fs->pack, &sv);
	fuse_reply_statfs(req, &sv);
}

/* ---- directories ------------------------------------------------------- */

/*
 * Entry i of directory `dir` into buf[room]; its size, which is over room
 * when it did not fit.  An entry's offset is the index of the one after it.
 */
static size_t add_dirent(fuse_req_t req, struct mp_fs *fs, const struct mp_node *dir,
			 uint64_t i, uint64_t child, const char *name, char *buf,
			 size_t room, bool plus)
{
	struct fuse_entry_param e;
	struct stat st;

	if (!plus) {
		stat_of(fs, child, &st);
		return fuse_add_direntry(req, buf, room, name, &st, (off_t)(i + 1));
	}
	fill_entry(fs, child, &e);
	/*
	 * Files of an expert directory go without an entry (nodeid 0: the
	 * kernel links nothing): `find` only needs their names and types, and
	 * building four inodes per expert was most of its kernel time.
	 * Directories keep theirs, so that walking into them costs no LOOKUP.
	 */
	if (dir->kind == MP_NODE_EXPERT && i >= 2)
		e.ino = 0;
	return fuse_add_direntry_plus(req, buf, room, name, &e, (off_t)(i + 1));
}

static void list_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     bool plus)
{
	struct mp_fs *fs = fs_of(req);
	char name[MP_TREE_NAME_MAX];
	struct mp_node dir;
	size_t used = 0;
	uint64_t child;
	char *buf;

	if (!node_or_reply(req, fs, ino, &dir))
		return;
	if (!mp_node_is_dir(dir.kind)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (uint64_t i = (uint64_t)off;
	     mp_tree_dirent(&fs->tree, ino, i, &child, name, sizeof name); i++) {
		size_t len = add_dirent(req, fs, &dir, i, child, name, buf + used,
					size - used, plus);

		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mp_fs *fs = fs_of(req);

	/* libfuse answers a missing opendir with success, not ENOSYS */
	if (fs->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	fuse_reply_open(req, fi);
}

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	list_dir(req, ino, size, off, false);
}

static void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	list_dir(req, ino, size, off, true);
}

/* ---- files ------------------------------------------------------------- */

static void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mp_fs *fs = fs_of(req);
	struct mp_node n;

	if (!node_or_reply(req, fs, ino, &n))
		return;
	if (mp_node_is_dir(n.kind)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	/* See fs_init: no more OPEN or RELEASE requests after this one. */
	if (fs->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	/* A kernel without no-open support: the same caching, stated per open. */
	if (n.kind == MP_NODE_STATUS || n.kind == MP_NODE_METRICS)
		fi->direct_io = 1;
	else
		fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* What the metrics count a file as: the label file="..." */
static enum mp_metrics_file metrics_kind(enum mp_node_kind kind)
{
	switch (kind) {
	case MP_NODE_ROLE:
		return MP_MF_ROLE;
	case MP_NODE_OBJECT:
		return MP_MF_OBJECT;
	case MP_NODE_PACK:
		return MP_MF_PACK;
	case MP_NODE_F32:
		return MP_MF_F32;
	case MP_NODE_MANIFEST:
		return MP_MF_MANIFEST;
	case MP_NODE_CLIENT_MANIFEST:
		return MP_MF_CLIENT_MANIFEST;
	case MP_NODE_STATUS:
		return MP_MF_STATUS;
	case MP_NODE_METRICS:
		return MP_MF_METRICS;
	default:
		return MP_MF_COUNT;
	}
}

/*
 * One read request in the metrics: the bytes it asks for inside the file.
 * O_DIRECT comes from the reader's open flags, which the kernel puts in
 * every READ (fuse_read_in.flags), so no OPEN is needed to know it.
 */
static void count_read(struct mp_fs *fs, const struct mp_node *n, size_t size, off_t off,
		       const struct fuse_file_info *fi)
{
	enum mp_metrics_file kind = metrics_kind(n->kind);
	struct mp_node_sizes sizes = {.client_manifest = fs->attr.client_manifest_len};
	uint64_t len, bytes = 0;

	if (kind == MP_MF_COUNT || off < 0)
		return;
	mp_snap_slot_lengths(&fs->snaps, &sizes.status, &sizes.metrics);
	len = mp_node_size(fs->pack, n, &sizes);
	if ((uint64_t)off < len)
		bytes = size < len - (uint64_t)off ? size : len - (uint64_t)off;
	mp_metrics_count_read(&fs->metrics, kind, n->role,
			      fi && (fi->flags & O_DIRECT), bytes);
}

static void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct mp_fs *fs = fs_of(req);
	uint64_t start, len;
	struct mp_node n;

	if (!node_or_reply(req, fs, ino, &n))
		return;
	count_read(fs, &n, size, off, fi);
	switch (n.kind) {
	case MP_NODE_MANIFEST:
		mp_fs_reply_memory(req, fs->pack->file.manifest_raw, fs->pack->file.manifest_len, size,
			     off);
		return;
	case MP_NODE_CLIENT_MANIFEST:
		mp_fs_reply_memory(req, fs->client_manifest, fs->attr.client_manifest_len, size,
			     off);
		return;
	case MP_NODE_STATUS:
	case MP_NODE_METRICS:
		mp_fs_reply_status(req, fs, n.kind == MP_NODE_METRICS, size, off);
		return;
	case MP_NODE_PACK:
		mp_fs_reply_pack_range(req, fs, &n, 0, fs->pack->file.size, size, off, fi);
		return;
	case MP_NODE_ROLE:
	case MP_NODE_OBJECT:
		mp_node_payload_range(fs->pack, &n, &start, &len);
		mp_fs_reply_pack_range(req, fs, &n, start, len, size, off, fi);
		return;
	case MP_NODE_F32:
		mp_fs_reply_f32(req, fs, &n, size, off);
		return;
	default:
		fuse_reply_err(req, EISDIR);
		return;
	}
}

/* ---- extended attributes ------------------------------------------------ */

static void reply_xattr_bytes(fuse_req_t req, const char *value, size_t len,
			      size_t size)
{
	int fit = mp_xattr_fit(size, len);

	if (fit == 0)
		fuse_reply_xattr(req, len);
	else if (fit > 0)
		fuse_reply_err(req, fit);
	else
		fuse_reply_buf(req, value, len);
}

/*
 * user.moepack.expert_reads of a layer directory: computed per call from
 * the counters (no snapshot; nothing kept).  At most XATTR_SIZE_MAX bytes:
 * a layer with more experts than that holds answers E2BIG.
 */
/* Whether the requester may read what status.json says (attr.h). */
static bool may_read_status(fuse_req_t req, const struct mp_fs *fs)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[64];
	int n = fuse_req_getgroups(req, 64, groups);

	return mp_attr_may_read_status(&fs->attr, ctx->uid, ctx->gid, groups,
				       n < 0 ? 0 : n > 64 ? 64 : n);
}

static void reply_expert_reads(fuse_req_t req, struct mp_fs *fs, const struct mp_node *n,
			       size_t size)
{
	size_t cap = (size_t)fs->stats.num_experts * 21 + 1, len;
	char *buf;

	/* the per-expert counts of status.json: the same readers only */
	if (!may_read_status(req, fs)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if (cap > XATTR_SIZE_MAX + 1)
		cap = XATTR_SIZE_MAX + 1;
	buf = malloc(cap);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	len = mp_metrics_expert_reads(&fs->stats, n->layer_index, buf, cap);
	if (len == 0 && fs->stats.num_experts > 0)
		fuse_reply_err(req, E2BIG);
	else
		reply_xattr_bytes(req, buf, len, size);
	free(buf);
}

static void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct mp_fs *fs = fs_of(req);
	char value[MP_XATTR_VALUE_MAX];
	struct mp_node n;
	enum mp_xattr id;

	if (!node_or_reply(req, fs, ino, &n))
		return;
	id = mp_xattr_find(fs->pack, n.kind, name);
	if (id == MP_XA_COUNT)
		fuse_reply_err(req, ENODATA);
	else if (id == MP_XA_EXPERT_READS)
		reply_expert_reads(req, fs, &n, size);
	else
		reply_xattr_bytes(req, value,
				  mp_xattr_value(fs->pack, &n, id, value, sizeof value), size);
}

static void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct mp_fs *fs = fs_of(req);
	char names[MP_XATTR_LIST_MAX];
	struct mp_node n;

	if (node_or_reply(req, fs, ino, &n))
		reply_xattr_bytes(req, names, mp_xattr_list(fs->pack, n.kind, names), size);
}

/* ---- everything that would write ---------------------------------------- */

/*
 * Not reached while the mount is read-only (moepackfs.c always adds "ro",
 * and the kernel answers EROFS itself), and kept on purpose: a mount made
 * writable behind our back (root's `mount -o remount,rw`, which FUSE
 * allows) would otherwise get ENOSYS from libfuse for these instead of
 * the EROFS that says what the file system is.
 */

static void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	fuse_reply_err(req, EROFS);
}

static void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fuse_reply_err(req, EROFS);
}

static void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	fuse_reply_err(req, EROFS);
}

static void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	fuse_reply_err(req, EROFS);
}

static void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	fuse_reply_err(req, EROFS);
}

static void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
			 off_t length, struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

/*
 * Not here on purpose: releasedir (nothing to release), flush and fsync
 * (ENOSYS once, then the kernel stops asking), access
 * (default_permissions makes the kernel check modes itself).
 */
const struct fuse_lowlevel_ops mp_fs_ops = {
	.init = fs_init,
	.lookup = fs_lookup,
	.forget = fs_forget,
	.forget_multi = fs_forget_multi,
	.getattr = fs_getattr,
	.statfs = fs_statfs,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.readdirplus = fs_readdirplus,
	.open = fs_open,
	.read = fs_read,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.setattr = fs_setattr,
	.mknod = fs_mknod,
	.mkdir = fs_mkdir,
	.unlink = fs_unlink,
	.rmdir = fs_unlink,
	.symlink = fs_symlink,
	.rename = fs_rename,
	.link = fs_link,
	.write = fs_write,
	.setxattr = fs_setxattr,
	.removexattr = fs_removexattr,
	.create = fs_create,
	.fallocate = fs_fallocate,
};
