/*
 * buildcopy.c - the copy of the Kimi builder (build_internal.h's
 * mp_build_write_partial()): header, index and every payload written into
 * PACK.partial from its GGUF slice through one buffer, which also feeds the
 * seal's chunk digests and the whole-file digest; durable checkpoints for
 * --resume, and on a resume the chunks already there checked against
 * their digests (a chunk that differs is copied again).
 */

#define _GNU_SOURCE /* sync_file_range */
#include "config.h"

#include "writer/kimi/build.h"
#include "writer/kimi/build_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "base/outfile.h"
#include "base/text.h"
#include "pack/digest.h"
#include "writer/kimi/buildseal.h"

#define CHECKPOINT_BYTES (1ULL << 30)    /* durable every GiB */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the full-file digest ------------------------------------------------ */

/*
 * Everything the build hashes goes through here, in file order, so that the
 * digest can move to a shared hashing engine without touching the copy.
 */
struct pack_hash {
	struct mp_sha256 *sha; /* NULL: not wanted */
};

static void pack_hash_update(struct pack_hash *h, const void *data, size_t n)
{
	if (h->sha)
		mp_sha256_update(h->sha, data, n);
}

/* ---- the copy ------------------------------------------------------------ */

/*
 * Every payload byte goes through b->buf: read from the shard, written to
 * PACK.partial, and hashed into its seal chunk (and the whole-file digest)
 * from that same buffer, so that the digests vouch for the bytes written.
 * That is why copy_file_range() is not used: the kernel's copy would leave
 * nothing to hash but a second read.
 */
static enum mp_err copy_slice(struct build *b, const struct mp_shard *s, uint64_t src,
			      int dst_fd, uint64_t dst, uint64_t n, struct pack_hash *h,
			      struct mp_error *err)
{
	while (n) {
		size_t k = n < CHUNK ? (size_t)n : CHUNK;
		enum mp_err rc = mp_pread_full(s->fd, b->buf, k, src, "GGUF file", s->path,
					       MP_E_GGUF_IO, err);

		if (!rc)
			rc = mp_pwrite_full(dst_fd, b->buf, k, dst, b->partial, err);
		if (rc)
			return rc;
		pack_hash_update(h, b->buf, k);
		mp_build_seal_feed(&b->seal, b->buf, k);
		src += k;
		dst += k;
		n -= k;
	}
	return MP_OK;
}

/* The pack bytes, then the digests of their chunks, then the state that
 * vouches for both: each durable before the next is written. */
static enum mp_err checkpoint(struct build *b, int fd, uint64_t objects, struct mp_error *err)
{
	enum mp_err rc;

	if (fdatasync(fd) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", b->partial,
			       strerror(errno));
	rc = mp_build_seal_save(&b->seal, b->digests_path,
				mp_build_seal_chunks_before(&b->seal, objects), err);
	return rc ? rc : mp_build_save_state(b, objects, err);
}

/* The chunks of a resumed PACK.partial that failed their check. */
struct bad_chunks {
	uint64_t *list;
	size_t n, cap;
	bool nomem;
};

static void note_bad_chunk(uint64_t chunk, void *arg)
{
	struct bad_chunks *bc = arg;

	if (bc->n == bc->cap) {
		size_t cap = bc->cap ? 2 * bc->cap : 64;
		uint64_t *grown = realloc(bc->list, cap * sizeof *grown);

		if (!grown) {
			bc->nomem = true;
			return;
		}
		bc->list = grown;
		bc->cap = cap;
	}
	bc->list[bc->n++] = chunk;
}

/* Copy chunk c again from its GGUF slice, hashing what is written. */
static enum mp_err recopy_chunk(struct build *b, int fd, uint64_t c, struct mp_error *err)
{
	struct mp_seal_chunk ch;
	const struct mp_shard *s;
	uint64_t src, n, dst;
	struct mp_sha256 *h;
	enum mp_err rc = MP_OK;

	mp_seal_chunk_get(&b->seal.l, c, &ch);
	if (ch.part != MP_SEAL_ROLE)
		return MP_OK; /* the header and index are written anew anyway;
				 the builder leaves no gaps */
	mp_build_entry_source(b, ch.object * 3 + (uint64_t)ch.role, &s, &src, &n, &dst);
	src += ch.offset - dst;
	h = mp_sha256_new();
	if (!h)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (uint64_t done = 0; !rc && done < ch.len;) {
		size_t k = ch.len - done < CHUNK ? (size_t)(ch.len - done) : CHUNK;

		rc = mp_cancel_check(b->o->cancel, err, "copying chunk %" PRIu64 " again", c);
		if (!rc)
			rc = mp_pread_full(s->fd, b->buf, k, src + done, "GGUF file", s->path,
					   MP_E_GGUF_IO, err);
		if (!rc)
			rc = mp_pwrite_full(fd, b->buf, k, ch.offset + done, b->partial, err);
		if (!rc)
			mp_sha256_update(h, b->buf, k);
		done += k;
	}
	if (!rc)
		mp_sha256_final(h, b->seal.digests[c]);
	mp_sha256_free(h);
	return rc;
}

/*
 * Before a resumed build goes on: every chunk of the done part of
 * PACK.partial against the digest recorded when it was written, on all
 * cores; the ones that differ are copied again (and counted).
 */
static enum mp_err check_resumed(struct build *b, int fd, const struct stat *pst,
				 uint64_t start, struct mp_error *err)
{
	struct bad_chunks bc = {0};
	struct stat rst;
	enum mp_err rc;
	int rfd;

	rc = mp_build_seal_load(&b->seal, b->digests_path,
				mp_build_seal_chunks_before(&b->seal, start), err);
	if (rc)
		return rc;
	rc = mp_open_output(b->partial, O_RDONLY, pst, "partial pack", MP_E_PACK_IO, &rfd, &rst,
			    err);
	if (rc)
		return rc;
	b->res->chunks_checked = mp_build_seal_chunks_before(&b->seal, start);
	rc = mp_build_seal_check(&b->seal, rfd, b->partial, start, note_bad_chunk, &bc,
				 b->o->cancel, err);
	close(rfd);
	if (rc == MP_E_SEAL_CHUNK)
		rc = MP_OK; /* the bad ones are in bc */
	if (!rc && bc.nomem)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
	for (size_t i = 0; !rc && i < bc.n; i++) {
		rc = recopy_chunk(b, fd, bc.list[i], err);
		mp_build_seal_unsave(&b->seal, bc.list[i]);
	}
	b->res->chunks_recopied = bc.n;
	free(bc.list);
	return rc;
}

/*
 * PACK.partial opened for writing: created now, or the one the interrupted
 * build created (a resumed build writes only into the files it created
 * before), with the record of its chunk digests; a resumed one's done part
 * checked against them.  *fd is -1 when the pack could not be opened.
 */
static enum mp_err open_partial(struct build *b, uint64_t start, const struct resume_point *rp,
				int *fd, struct stat *pst, struct mp_error *err)
{
	enum mp_err rc;

	rc = mp_open_output(b->partial, start ? O_WRONLY : O_WRONLY | O_CREAT | O_EXCL,
			    start ? &rp->partial : NULL, "partial pack", MP_E_PACK_IO, fd, pst,
			    err);
	if (rc) {
		*fd = -1;
		return rc;
	}
	b->partial_st = *pst;
	rc = mp_build_seal_open_record(&b->seal, b->digests_path, start ? &rp->digests : NULL,
				       &b->digests_st, err);
	if (!rc && start)
		rc = check_resumed(b, *fd, pst, start, err);
	return rc;
}

/* The header, index and padding: written anew (it is cheap), and hashed. */
static enum mp_err write_prefix(struct build *b, int fd, struct pack_hash *h,
				struct mp_error *err)
{
	enum mp_err rc = MP_OK;

	mp_build_seal_seek(&b->seal, 0);
	for (uint64_t pos = 0; !rc && pos < b->l.data_start;) {
		size_t n = b->l.data_start - pos < CHUNK ? (size_t)(b->l.data_start - pos) : CHUNK;

		mp_build_prefix_bytes(&b->l, pos, b->buf, n);
		rc = mp_pwrite_full(fd, b->buf, n, pos, b->partial, err);
		pack_hash_update(h, b->buf, n);
		mp_build_seal_feed(&b->seal, b->buf, n);
		pos += n;
	}
	return rc;
}

/*
 * What an earlier run wrote: durable (the state says so), checked against
 * its digests already, cut to the objects done, and hashed for the whole-
 * file digest by reading it back.
 */
static enum mp_err take_done_part(struct build *b, int fd, const struct stat *pst,
				  uint64_t start, struct pack_hash *h, struct mp_error *err)
{
	uint64_t end = mp_layout_object_offset(&b->l, start);
	enum mp_err rc = MP_OK;
	int rfd = -1;
	struct stat rst;

	if (ftruncate(fd, (off_t)end) != 0)
		rc = mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", b->partial,
			     strerror(errno));
	if (!rc && h->sha)
		rc = mp_open_output(b->partial, O_RDONLY, pst, "partial pack", MP_E_PACK_IO, &rfd,
				    &rst, err);
	for (uint64_t pos = b->l.data_start; !rc && h->sha && pos < end;) {
		size_t n = end - pos < CHUNK ? (size_t)(end - pos) : CHUNK;

		rc = mp_cancel_check(b->o->cancel, err, "reading %s back", b->partial);
		if (!rc)
			rc = mp_pread_full(rfd, b->buf, n, pos, "pack", b->partial, MP_E_PACK_IO,
					   err);
		pack_hash_update(h, b->buf, n);
		pos += n;
	}
	if (rfd >= 0)
		close(rfd);
	mp_build_seal_seek(&b->seal, end);
	return rc;
}

/* A signal asked the build to stop before `object`: what is done is made
 * durable for --resume. */
static enum mp_err stop_copy(struct build *b, int fd, uint64_t object, struct mp_error *err)
{
	enum mp_err rc = checkpoint(b, fd, object, err);

	if (rc)
		return rc;
	return mp_fail(err, MP_E_INTERRUPTED, "%s by signal %d after %" PRIu64 " of %" PRIu64
		       " objects: %s is kept, run again with --resume to continue it",
		       mp_err_summary(MP_E_INTERRUPTED), mp_cancel_sig(b->o->cancel), object,
		       b->l.objects, b->partial);
}

/* The three slices of one object; *since counts the bytes since the last
 * checkpoint. */
static enum mp_err copy_object(struct build *b, int fd, uint64_t object, struct pack_hash *h,
			       uint64_t *since, struct mp_error *err)
{
	enum mp_err rc = MP_OK;

	for (uint64_t i = object * 3; !rc && i < object * 3 + 3; i++) {
		const struct mp_shard *s;
		uint64_t src, n, dst;

		mp_build_entry_source(b, i, &s, &src, &n, &dst);
		rc = copy_slice(b, s, src, fd, dst, n, h, err);
		*since += n;
		if (!rc)
			b->res->bytes_copied += n;
	}
	if (rc)
		return rc;
	/* start writing the object back now, so that the disk works while
	 * the next objects are copied and a checkpoint's sync has little
	 * left to wait for */
	(void)sync_file_range(fd, (off64_t)mp_layout_object_offset(&b->l, object),
			      (off64_t)b->l.object_bytes, SYNC_FILE_RANGE_WRITE);
	b->res->objects_copied++;
	if (b->o->progress)
		b->o->progress(mp_layout_object_offset(&b->l, object + 1), b->l.size,
			       b->o->progress_arg);
	return MP_OK;
}

/* Objects start.. to the end, durable at each checkpoint. */
static enum mp_err copy_objects(struct build *b, int fd, uint64_t start, struct pack_hash *h,
				struct mp_error *err)
{
	long delay = mp_build_test_delay_ms();
	uint64_t since = 0;
	enum mp_err rc = MP_OK;

	for (uint64_t object = start; !rc && object < b->l.objects; object++) {
		if (mp_cancel_sig(b->o->cancel))
			return stop_copy(b, fd, object, err);
		rc = copy_object(b, fd, object, h, &since, err);
		if (rc)
			break;
		if (since >= CHECKPOINT_BYTES) {
			rc = checkpoint(b, fd, object + 1, err);
			since = 0;
		}
		mp_cancel_sleep_ms(b->o->cancel, delay);
	}
	return rc;
}

/* The whole copy durable, and of the size the layout says. */
static enum mp_err sync_partial(struct build *b, int fd, struct mp_error *err)
{
	struct stat st;

	if (fsync(fd) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", b->partial,
			       strerror(errno));
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != b->l.size)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: it is %lld bytes after "
			       "the copy, the layout says %" PRIu64, b->partial,
			       (long long)st.st_size, b->l.size);
	return MP_OK;
}

enum mp_err mp_build_write_partial(struct build *b, uint64_t start,
				   const struct resume_point *rp, struct mp_error *err)
{
	struct pack_hash h = {NULL};
	double t0 = now();
	struct stat pst;
	int fd;
	enum mp_err rc = open_partial(b, start, rp, &fd, &pst, err);

	if (fd < 0)
		return rc;
	if (!rc && b->o->full_sha256 && !(h.sha = mp_sha256_new()))
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
	if (!rc)
		rc = write_prefix(b, fd, &h, err);
	if (!rc && start)
		rc = take_done_part(b, fd, &pst, start, &h, err);
	if (!rc)
		rc = checkpoint(b, fd, start, err);
	if (!rc)
		rc = copy_objects(b, fd, start, &h, err);
	if (!rc)
		rc = sync_partial(b, fd, err);
	/* the state vouches for every object: a pack that has to go back to
	 * PACK.partial after the rename (settle_pack) resumes with no copy */
	if (!rc)
		rc = checkpoint(b, fd, b->l.objects, err);
	/* asked after the last object: still kept, not renamed */
	if (!rc)
		mp_build_test_pause(b->o->cancel, "copied");
	if (!rc && mp_cancel_sig(b->o->cancel))
		rc = stop_copy(b, fd, b->l.objects, err);
	if (close(fd) != 0 && !rc)
		rc = mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", b->partial,
			     strerror(errno));
	if (!rc && h.sha) {
		mp_sha256_final(h.sha, b->pack_sha256);
		mp_sha256_hex(b->pack_sha256, b->res->sha256);
	}
	if (h.sha)
		mp_sha256_free(h.sha);
	b->res->seconds = now() - t0;
	return rc;
}
