/*
 * local.c - step 3 of a fetch (fetch.h): OUT.lock, OUT.partial and the
 * record of passed chunks, OUT.partial.state.
 *
 * The record is a header naming the seal (its digest and the pack's
 * size) and a bit per chunk.  It is only a hint: a resumed run hashes
 * every chunk it names again before keeping it, so a bit set before its
 * bytes reached the disk (power loss) costs a re-fetch, never a bad byte.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/file.h"
#include "base/outfile.h"
#include "fetch/fetch_internal.h"

#define RECORD_HEADER 128

static enum mp_err take_lock(struct fetch *f, struct mp_error *err)
{
	struct stat st;
	enum mp_err rc = mp_open_output(f->lock, O_RDWR | O_CREAT, NULL, "lock", MP_E_PACK_IO,
					&f->lock_fd, &st, err);

	if (rc)
		return rc;
	if (flock(f->lock_fd, LOCK_EX | LOCK_NB) != 0)
		return mp_fail(err, errno == EWOULDBLOCK ? MP_E_BUILD_LOCKED : MP_E_PACK_IO,
			       "%s: %s", mp_err_summary(MP_E_BUILD_LOCKED), f->lock);
	return MP_OK;
}

static void record_header(const struct fetch *f, char out[RECORD_HEADER])
{
	char hex[MP_SHA256_HEX];

	memset(out, 0, RECORD_HEADER);
	mp_sha256_hex(f->seal->seal_digest, hex);
	snprintf(out, RECORD_HEADER, "moepack-fetch-state v1\nseal %s\nsize %" PRIu64 "\n", hex,
		 f->seal->pack_size);
}

/* The record as an earlier run left it, when it is this seal's and the
 * partial pack is there; else a new, empty one. */
static enum mp_err open_record(struct fetch *f, bool partial_there, struct mp_error *err)
{
	char want[RECORD_HEADER], have[RECORD_HEADER];
	struct stat st;
	size_t got = 0;
	enum mp_err rc = mp_open_output(f->state, O_RDWR | O_CREAT, NULL, "fetch record",
					MP_E_PACK_IO, &f->state_fd, &st, err);

	if (rc)
		return rc;
	f->record_len = (f->seal->chunk_count + 7) / 8;
	if (!(f->record = calloc((size_t)f->record_len, 1)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	record_header(f, want);
	f->resumed = partial_there && mp_pread_all(f->state_fd, have, RECORD_HEADER, 0, &got) == 0 &&
		     memcmp(have, want, RECORD_HEADER) == 0;
	if (f->resumed) {
		(void)mp_pread_all(f->state_fd, f->record, (size_t)f->record_len, RECORD_HEADER,
				   &got);
		return MP_OK;
	}
	if (ftruncate(f->state_fd, 0) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot write fetch record %s: %s", f->state,
			       strerror(errno));
	if ((rc = mp_pwrite_full(f->state_fd, want, RECORD_HEADER, 0, f->state, err)))
		return rc;
	return mp_pwrite_full(f->state_fd, f->record, (size_t)f->record_len, RECORD_HEADER,
			      f->state, err);
}

/* Free space for what the partial does not hold yet, then preallocated. */
static enum mp_err preallocate(struct fetch *f, const struct stat *st, struct mp_error *err)
{
	uint64_t size = f->seal->pack_size, have = (uint64_t)st->st_blocks * 512;
	struct statvfs vfs;
	int e;

	if (fstatvfs(f->fd, &vfs) == 0 && have < size &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < size - have)
		return mp_fail(err, MP_E_NO_SPACE, "%s: %s needs %" PRIu64 " bytes more, the file "
			       "system has %" PRIu64 " free", mp_err_summary(MP_E_NO_SPACE),
			       f->partial, size - have, (uint64_t)vfs.f_bavail * vfs.f_frsize);
	e = posix_fallocate(f->fd, 0, (off_t)size);
	if (e == EOPNOTSUPP || e == EINVAL)
		e = ftruncate(f->fd, (off_t)size) == 0 ? 0 : errno;
	if (e == ENOSPC)
		return mp_fail(err, MP_E_NO_SPACE, "%s: %s", mp_err_summary(MP_E_NO_SPACE),
			       f->partial);
	if (e)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", f->partial, strerror(e));
	return MP_OK;
}

enum mp_err mp_fetch_local_open(struct fetch *f, struct mp_error *err)
{
	struct stat st;
	bool there;
	enum mp_err rc = take_lock(f, err);

	if (rc)
		return rc;
	there = lstat(f->partial, &st) == 0;
	rc = mp_open_output(f->partial, O_RDWR | O_CREAT, NULL, "partial pack", MP_E_PACK_IO,
			    &f->fd, &st, err);
	if (rc == MP_OK)
		rc = open_record(f, there && (uint64_t)st.st_size == f->seal->pack_size, err);
	if (rc == MP_OK && !f->resumed && ftruncate(f->fd, 0) != 0)
		rc = mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", f->partial, strerror(errno));
	if (rc == MP_OK && !f->resumed)
		fstat(f->fd, &st);
	/* The partial once more, O_DIRECT, for the chunks on page boundaries
	 * (hashq.h): a buffered write of a pack costs a copy into the page
	 * cache (a fifth of the fetch's CPU time) and evicts pages for a pack
	 * nobody reads back soon.  -1 where refused: all writes buffered. */
	if (rc == MP_OK && (rc = preallocate(f, &st, err)) == MP_OK)
		f->direct_fd = mp_reopen_same(f->fd, O_WRONLY | O_DIRECT);
	return rc;
}

void mp_fetch_record_chunk(struct fetch *f, uint64_t c)
{
	uint64_t byte = c / 8;

	f->record[byte] |= (unsigned char)(1u << (c % 8));
	/* a hint only (above): a failed write costs a re-check, nothing more */
	(void)mp_pwrite_all(f->state_fd, &f->record[byte], 1, RECORD_HEADER + byte, NULL);
}

bool mp_fetch_record_has(struct fetch *f, uint64_t c)
{
	return f->resumed && (f->record[c / 8] >> (c % 8)) & 1u;
}

void mp_fetch_local_close(struct fetch *f)
{
	if (f->direct_fd >= 0)
		close(f->direct_fd);
	if (f->fd >= 0)
		close(f->fd);
	if (f->state_fd >= 0)
		close(f->state_fd);
	if (f->lock_fd >= 0)
		close(f->lock_fd);
	f->fd = f->state_fd = f->lock_fd = f->direct_fd = -1;
	free(f->record);
	f->record = NULL;
}
