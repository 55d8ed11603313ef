/*
 * fs.c - FUSE low-level operations over a validated pack.
 *
 * The read path.  Pack bytes (the whole-pack file, role and object files)
 * are answered with fuse_reply_data() on an fd buffer (FUSE_BUF_IS_FD |
 * FUSE_BUF_FD_SEEK at the payload's absolute offset), with
 * FUSE_CAP_SPLICE_WRITE wanted in init.  libfuse then vmsplices the reply
 * header into a per-thread pipe, splices the payload from the pack's page
 * cache into the same pipe and splices the pipe into /dev/fuse: the daemon
 * never copies or even maps payload bytes.  libfuse only takes that path
 * when it can grow its pipe to the reply size plus three pages; if it
 * cannot (a 1 MiB request needs a 2 MiB pipe, above the default
 * fs.pipe-max-size of 1 MiB) it silently falls back to read() into a
 * malloc'd buffer.  So moepackfs.c caps requests (max_write, which sets the
 * kernel's max_pages) at what fits the pipe limit: 1008 KiB by default.
 *
 * Replies under two pages (a lone page fault, a 4 KiB O_DIRECT read) are
 * never spliced by libfuse; those are pread() into a stack buffer instead
 * of libfuse's malloc'd bounce buffer.  status.json counts both kinds.
 *
 * Splice rather than replies from an mmap of the pack: the fd path never
 * touches payload pages in the daemon, so a pack that shrinks while mounted
 * can never raise SIGBUS here (splice past EOF just returns short), and the
 * daemon's RSS does not grow with the bytes it serves.  SPLICE_MOVE stays
 * off: it would steal pages from the pack's page cache.
 *
 * A pack that changes under the mount.  The kernel keeps every file's pages
 * for the whole mount, so a check in the read path alone would leave
 * cached pages of the old bytes (and, once a truncated pack grows back to
 * its size, zeros) served without an error.  So any change of the open
 * pack's size, mtime or ctime puts the mount in the pack-changed state for
 * good: each read compares fstat() with the validated values (a read
 * racing the watcher never serves changed bytes), and the watcher thread
 * notices within MP_FS_WATCH_MS without any request and drops the kernel's
 * pages of every file holding pack bytes, so cached reads and mapped pages
 * fault back here and get EIO.
 *
 * The .f32 files of -o dequant are computed: a read decodes only the
 * super-blocks that its range touches (256 floats, 1 KiB, each) from a
 * pread() of their quantized bytes into one buffer of the request's size
 * plus two blocks, freed before the reply returns.  Nothing is cached in
 * the daemon and nothing is kept per file: the kernel's page cache keeps
 * what was read, memory is bounded by the largest request times the
 * number of threads, and mmap works as for any cached file.
 *
 * Everything else (manifests, status.json, metrics) is small and answered
 * from memory with fuse_reply_buf(); status.json and metrics from one
 * snapshot that the watcher renders anew once a second.
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
#include "daemon/snapshots.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h> /* IOV_MAX */
#include <linux/limits.h> /* XATTR_SIZE_MAX */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <syslog.h>
#include <unistd.h>

#include "namespace/f32view.h"
#include "namespace/node.h"
#include "base/text.h"

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

/*
 * Clip a read of [off, off + *size) to a file of len bytes.  False when the
 * request is already answered: a negative offset, or nothing left to read.
 */
static bool clip_read(fuse_req_t req, uint64_t len, size_t *size, off_t off)
{
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return false;
	}
	if ((uint64_t)off >= len) {
		fuse_reply_buf(req, NULL, 0);
		return false;
	}
	if (*size > len - (uint64_t)off)
		*size = (size_t)(len - (uint64_t)off);
	return true;
}

/* Reply with bytes [off, off + size) of an in-memory file. */
static void reply_memory(fuse_req_t req, const char *data, size_t len, size_t size,
			 off_t off)
{
	if (clip_read(req, len, &size, off))
		fuse_reply_buf(req, data + off, size);
}

/* A read answered with an error: counted in status.json and by errno. */
static void reply_read_error(fuse_req_t req, struct mp_fs *fs, int errnum)
{
	mp_stats_count_error(&fs->stats);
	mp_metrics_count_error(&fs->metrics, errnum);
	fuse_reply_err(req, errnum);
}

/*
 * status.json and metrics: every read is served from the current snapshot,
 * which changes at most once per MP_FS_STATUS_MS, so a reader that takes it
 * in pieces (a small max_read, mmap faults) within that time gets one
 * report.
 */
static void reply_status(fuse_req_t req, struct mp_fs *fs, bool metrics, size_t size,
			 off_t off)
{
	struct mp_status_snap *snap = mp_snap_slot_get(&fs->snaps);

	if (!snap) {
		struct mp_error err = {0};

		/* before the watcher's first snapshot */
		if (!mp_fs_snap_refresh(fs, &err)) {
			/* rendering fails only for want of memory */
			fuse_reply_err(req, err.code == MP_E_NOMEM ? ENOMEM : EIO);
			return;
		}
		reply_status(req, fs, metrics, size, off);
		return;
	}
	if (metrics)
		reply_memory(req, snap->metrics, snap->metrics_len, size, off);
	else
		reply_memory(req, snap->text, snap->text_len, size, off);
	mp_snap_put(snap);
}

/* libfuse copies replies under two pages instead of splicing them. */
#define SPLICE_MIN (2 * MP_PAGE)

/*
 * A small read (one page, a page fault without read-ahead): through a
 * stack buffer, sparing libfuse's malloc'd bounce buffer.  Without
 * SPLICE_WRITE (an old kernel) larger reads come here too, in pieces.
 */
static void reply_copy(fuse_req_t req, struct mp_fs *fs, uint64_t pos, size_t size)
{
	char small[SPLICE_MIN];
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);
	ssize_t n;

	mp_stats_count_reply(&fs->stats, false);
	if (size <= sizeof small) {
		n = pread(fs->pack->fd, small, size, (off_t)pos);
		if (n < 0) {
			reply_read_error(req, fs, EIO);
			return;
		}
		fuse_reply_buf(req, small, (size_t)n);
		return;
	}
	bv.buf[0].size = size;
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = fs->pack->fd;
	bv.buf[0].pos = (off_t)pos;
	fuse_reply_data(req, &bv, FUSE_BUF_NO_SPLICE);
}

/* True while the pack's bytes are still the validated ones up to `end`. */
static bool pack_still_valid(struct mp_fs *fs, uint64_t end)
{
	struct stat st;

	if (mp_pack_state_changed(&fs->ps))
		return false;
	if (atomic_load_explicit(&fs->lease, memory_order_relaxed) == MP_LEASE_HELD)
		return true;
	return fstat(fs->pack->fd, &st) == 0 && mp_pack_state_check(&fs->ps, &st) &&
	       (uint64_t)st.st_size >= end;
}

/*
 * The per-read check, lock-free.  A reader announces itself in
 * `inflight` first and only then looks at `changed` (both sequentially
 * consistent), so a lease break that sets `changed` and then waits for
 * `inflight` to reach zero either is seen by the reader or sees it: no
 * read that began after the break serves a byte.  With the lease held
 * that load is the whole check; without one, fstat() and a comparison
 * with the validated identity under a sequence lock (no mutex) follow.
 * False: the pack changed (or is shorter than `end`), nothing to undo.
 */
static bool read_begin(struct mp_fs *fs, uint64_t end)
{
	atomic_fetch_add(&fs->inflight, 1);
	if (pack_still_valid(fs, end))
		return true;
	atomic_fetch_sub(&fs->inflight, 1);
	return false;
}

static void read_end(struct mp_fs *fs)
{
	atomic_fetch_sub(&fs->inflight, 1);
}

/* One line for a chunk found bad (once: by the read that hashed it). */
static void report_bad_chunk(struct mp_fs *fs, uint64_t chunk)
{
	char path[MP_STATUS_PATH_MAX], what[256];
	const char *p = fs->status.pack_path ? fs->status.pack_path : "";
	struct mp_seal_chunk ch;

	mp_text_escape(path, sizeof path, p, strlen(p), 0);
	mp_seal_chunk_get(fs->seal->layout, chunk, &ch);
	mp_seal_chunk_describe(fs->pack, fs->seal->layout, chunk, what, sizeof what);
	mp_fs_log(fs, "%s: chunk %" PRIu64 " (%s, bytes %" PRIu64 "-%" PRIu64 ") does not "
		 "match the seal: every read of it fails with EIO", path, chunk, what,
		 ch.offset, ch.offset + ch.len - 1);
}

/* Reply with bytes in pieces; past what writev takes at once, one copy. */
static void reply_iov(fuse_req_t req, struct mp_fs *fs, const struct iovec *iov,
		      unsigned n, size_t size)
{
	char *flat;
	size_t at = 0;

	mp_stats_count_reply(&fs->stats, false);
	if (n < IOV_MAX) {
		fuse_reply_iov(req, iov, (int)n);
		return;
	}
	flat = malloc(size);
	if (!flat) {
		reply_read_error(req, fs, ENOMEM);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		memcpy(flat + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	fuse_reply_buf(req, flat, at);
	free(flat);
}

/*
 * -o verify=seal: the chunks of [pos, pos + size) are read from storage
 * and hashed now (or taken from requests that just did), and the reply is
 * those very bytes (sealcheck.h).  Answered here, bytes or EIO.
 */
static void reply_sealed(fuse_req_t req, struct mp_fs *fs, uint64_t pos, size_t size,
			 enum mp_fill_mode mode)
{
	struct mp_sealfill f;
	uint64_t bad = 0;
	bool found;

	switch (mp_sealcheck_fill(fs->seal, pos, size, mode, &f, &bad, &found)) {
	case MP_SEALREAD_FILLED:
		reply_iov(req, fs, f.iov, f.niov, size);
		mp_sealcheck_release(fs->seal, &f);
		break;
	case MP_SEALREAD_BAD:
		if (found)
			report_bad_chunk(fs, bad);
		reply_read_error(req, fs, EIO);
		break;
	case MP_SEALREAD_IO:
		reply_read_error(req, fs, errno == ENOMEM ? ENOMEM : EIO);
		break;
	}
}

/*
 * No seal, a direct or uncached read: from storage into a buffer of ours
 * and the reply from it (storage.h), so that an O_DIRECT reader's bytes
 * pass no page cache and a buffered reader's land in FUSE's alone.
 */
static void reply_stored(fuse_req_t req, struct mp_fs *fs, uint64_t pos, size_t size,
			 enum mp_fill_mode mode)
{
	unsigned char *buf = mp_bufpool_get(fs->reqbufs);
	const unsigned char *data;

	if (!buf) {
		reply_read_error(req, fs, ENOMEM);
		return;
	}
	if (mp_storage_read(fs->storage, mode, pos, size, buf, &data) != 0) {
		reply_read_error(req, fs, EIO);
	} else {
		mp_stats_count_reply(&fs->stats, false);
		fuse_reply_buf(req, (const char *)data, size);
	}
	mp_bufpool_put(fs->reqbufs, buf);
}

/* Splice from the pack's page cache: the buffered way (see the top). */
static void reply_spliced(fuse_req_t req, struct mp_fs *fs, uint64_t pos, size_t size)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);

	if (size < SPLICE_MIN || !fs->status.splice_write) {
		reply_copy(req, fs, pos, size);
		return;
	}
	mp_stats_count_reply(&fs->stats, true);
	bv.buf[0].size = size;
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = fs->pack->fd;
	bv.buf[0].pos = (off_t)pos;
	/* Errors reading the pack come back as an error reply (EIO). */
	fuse_reply_data(req, &bv, 0);
	atomic_fetch_add_explicit(&fs->storage->bytes[MP_FILL_BUFFERED], size,
				  memory_order_relaxed);
}

/* How a read is to come from storage: O_DIRECT stays direct. */
static enum mp_fill_mode fill_mode(const struct mp_fs *fs, const struct fuse_file_info *fi)
{
	return mp_storage_mode(fs->storage, fi && (fi->flags & O_DIRECT));
}

/*
 * Reply with bytes [off, off + size) of a file that is the pack range
 * [start, start + len): checked against the seal, read into a buffer
 * (direct or uncached) or spliced, as fill_mode() and -o verify say.
 */
static void reply_pack_range(fuse_req_t req, struct mp_fs *fs, const struct mp_node *n,
			     uint64_t start, uint64_t len, size_t size, off_t off,
			     const struct fuse_file_info *fi)
{
	enum mp_fill_mode mode = fill_mode(fs, fi);
	uint64_t pos;

	if (!clip_read(req, len, &size, off))
		return;
	pos = start + (uint64_t)off;

	/* A changed pack: none of its bytes are the validated ones any more. */
	if (!read_begin(fs, pos + size)) {
		reply_read_error(req, fs, EIO);
		return;
	}
	if (n->kind == MP_NODE_PACK)
		mp_stats_count_pack(&fs->stats, size);
	else
		mp_stats_count_object(&fs->stats, n->object, size);

	if (fs->seal) {
		/* first, so the chunks after these are checked while these are */
		if (mode != MP_FILL_DIRECT)
			mp_sealcheck_ahead_hint(fs->seal, pos, size, start + len, mode);
		reply_sealed(req, fs, pos, size, mode);
	} else if (mode == MP_FILL_BUFFERED ||
		   mp_storage_span(pos, size) > fs->reqbufs->size) {
		reply_spliced(req, fs, pos, size);
	} else {
		reply_stored(req, fs, pos, size, mode);
	}
	read_end(fs);
}

/* The pieces of a fill, one after the other, into dst. */
static void copy_fill(const struct mp_sealfill *f, unsigned char *dst)
{
	for (unsigned i = 0; i < f->niov; i++) {
		memcpy(dst, f->iov[i].iov_base, f->iov[i].iov_len);
		dst += f->iov[i].iov_len;
	}
}

/*
 * The quantized bytes of window w into raw: under a seal the checked ones,
 * as for any read; else an uncached read.  False when the request is
 * answered already (EIO).
 */
static bool f32_fill(fuse_req_t req, struct mp_fs *fs, const struct mp_f32_window *w,
		     unsigned char *raw)
{
	enum mp_fill_mode mode = mp_storage_mode(fs->storage, false);
	const unsigned char *data;
	struct mp_sealfill f;
	uint64_t bad = 0;
	bool found, ok = true;

	if (fs->seal) {
		switch (mp_sealcheck_fill(fs->seal, w->pos, w->raw_len, mode, &f, &bad, &found)) {
		case MP_SEALREAD_FILLED:
			copy_fill(&f, raw);
			mp_sealcheck_release(fs->seal, &f);
			break;
		case MP_SEALREAD_BAD:
			if (found)
				report_bad_chunk(fs, bad);
			/* fall through */
		default:
			ok = false;
		}
	} else {
		ok = mp_storage_read(fs->storage, mode, w->pos, w->raw_len, raw, &data) == 0;
	}
	/* a change that raced the read: its bytes may be the new ones */
	if (!ok || !pack_still_valid(fs, w->pos + w->raw_len)) {
		reply_read_error(req, fs, EIO);
		return false;
	}
	return true;
}

/*
 * Bytes [off, off + size) of a role's float32 view: read the quantized
 * blocks that hold them, decode those blocks, reply with the slice.  The
 * buffer is the request's size plus at most two partial blocks (floats)
 * and the quantized bytes (about a tenth of that): the kernel's largest
 * read bounds it, whatever the file or the access pattern.
 */
static void reply_f32(fuse_req_t req, struct mp_fs *fs, const struct mp_node *n,
		      size_t size, off_t off)
{
	struct mp_f32_window w;
	unsigned char *mem;

	if (!clip_read(req, mp_node_f32_size(fs->pack, n->role), &size, off))
		return;
	mp_f32_window(fs->pack, n, (uint64_t)off, size, &w);
	if (!read_begin(fs, w.pos + w.raw_len)) {
		reply_read_error(req, fs, EIO);
		return;
	}
	/* floats first: malloc's alignment is theirs */
	mem = malloc(w.float_bytes + w.raw_len);
	if (!mem) {
		read_end(fs);
		reply_read_error(req, fs, ENOMEM);
		return;
	}
	if (f32_fill(req, fs, &w, mem + w.float_bytes)) {
		mp_f32_decode(&w, mem + w.float_bytes, (float *)(void *)mem);
		mp_stats_count_object(&fs->stats, n->object, w.raw_len);
		mp_stats_count_reply(&fs->stats, false);
		fuse_reply_buf(req, (const char *)mem + w.skip, size);
	}
	read_end(fs);
	free(mem);
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
		reply_memory(req, fs->pack->manifest_raw, fs->pack->manifest_len, size,
			     off);
		return;
	case MP_NODE_CLIENT_MANIFEST:
		reply_memory(req, fs->client_manifest, fs->attr.client_manifest_len, size,
			     off);
		return;
	case MP_NODE_STATUS:
	case MP_NODE_METRICS:
		reply_status(req, fs, n.kind == MP_NODE_METRICS, size, off);
		return;
	case MP_NODE_PACK:
		reply_pack_range(req, fs, &n, 0, fs->pack->file_size, size, off, fi);
		return;
	case MP_NODE_ROLE:
	case MP_NODE_OBJECT:
		mp_node_payload_range(fs->pack, &n, &start, &len);
		reply_pack_range(req, fs, &n, start, len, size, off, fi);
		return;
	case MP_NODE_F32:
		reply_f32(req, fs, &n, size, off);
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
