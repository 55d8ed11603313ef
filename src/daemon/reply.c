/*
 * reply.c - the replies to reads: pack bytes, the .f32 views, the files
 * held in memory.
 *
 * fs.c's read operation finds the node and counts the request; what
 * answers it, in exactly one fuse_reply_*, is here.
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
 * malloc'd buffer.  So prepare.c caps requests (max_write, which sets the
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
 */
#include "config.h"

#include "daemon/reply.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h> /* IOV_MAX */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/snapshots.h"
#include "namespace/f32view.h"
#include "namespace/node.h"
#include "base/text.h"

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
void mp_fs_reply_memory(fuse_req_t req, const char *data, size_t len, size_t size,
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
void mp_fs_reply_status(fuse_req_t req, struct mp_fs *fs, bool metrics, size_t size,
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
		mp_fs_reply_status(req, fs, metrics, size, off);
		return;
	}
	if (metrics)
		mp_fs_reply_memory(req, snap->metrics, snap->metrics_len, size, off);
	else
		mp_fs_reply_memory(req, snap->text, snap->text_len, size, off);
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
		n = pread(fs->pack->file.fd, small, size, (off_t)pos);
		if (n < 0) {
			reply_read_error(req, fs, EIO);
			return;
		}
		fuse_reply_buf(req, small, (size_t)n);
		return;
	}
	bv.buf[0].size = size;
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = fs->pack->file.fd;
	bv.buf[0].pos = (off_t)pos;
	fuse_reply_data(req, &bv, FUSE_BUF_NO_SPLICE);
}

/* True while the pack's bytes are still the validated ones up to `end`. */
static bool pack_still_valid(struct mp_fs *fs, uint64_t end)
{
	struct stat st;

	if (mp_pack_state_changed(&fs->ps))
		return false;
	if (atomic_load_explicit(&fs->lease, memory_order_relaxed) == MP_LEASE_HELD ||
	    fs->pack_filled_here)
		return true;
	return fstat(fs->pack->file.fd, &st) == 0 && mp_pack_state_check(&fs->ps, &st) &&
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
	bv.buf[0].fd = fs->pack->file.fd;
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
void mp_fs_reply_pack_range(fuse_req_t req, struct mp_fs *fs, const struct mp_node *n,
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
	/* a pack from mirrors: the rest of this expert is filled next */
	if (fs->remote && n->kind != MP_NODE_PACK) {
		uint64_t ooff, olen;

		mp_pack_object_range(fs->pack, n->object, &ooff, &olen);
		mp_remote_hint(fs->remote, ooff, olen);
	}

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
void mp_fs_reply_f32(fuse_req_t req, struct mp_fs *fs, const struct mp_node *n,
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
