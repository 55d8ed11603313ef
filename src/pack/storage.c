/*
 * storage.c - reading the pack from storage three ways (see storage.h).
 */
#include "config.h"

#include "pack/storage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/bufpool.h"
#include "base/file.h"

/* Linux 6.14's uapi value; older headers do not name it. */
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif

#define PAGE MP_STORAGE_DIRECT_ALIGN

const char *mp_fill_mode_name(enum mp_fill_mode mode)
{
	switch (mode) {
	case MP_FILL_DIRECT:
		return "direct";
	case MP_FILL_UNCACHED:
		return "uncached";
	default:
		return "buffered";
	}
}

static uint64_t page_down(uint64_t v)
{
	return v / PAGE * PAGE;
}

static uint64_t page_up(uint64_t v)
{
	return (v + PAGE - 1) / PAGE * PAGE;
}

size_t mp_storage_span(uint64_t pos, size_t len)
{
	return (size_t)(page_up(pos + len) - page_down(pos));
}

/* pread() or preadv2() until n bytes are in, the file ends or it fails. */
static int read_loop(int fd, unsigned char *buf, size_t n, uint64_t at, int flags,
		     size_t *got)
{
	*got = 0;
	while (*got < n) {
		struct iovec v = { buf + *got, n - *got };
		ssize_t r = flags ? preadv2(fd, &v, 1, (off_t)(at + *got), flags)
				  : pread(fd, v.iov_base, v.iov_len, (off_t)(at + *got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno;
		if (r == 0)
			break;
		*got += (size_t)r;
	}
	return 0;
}

/* A direct read of whole pages: a tail past the end of the file is short. */
static int read_direct(struct mp_storage *st, uint64_t pos, size_t len,
		       unsigned char *buf, const unsigned char **data)
{
	uint64_t start = page_down(pos);
	size_t want = mp_storage_span(pos, len), got;
	int e = read_loop(st->direct_fd, buf, want, start, 0, &got);

	if (e)
		return e;
	/* O_DIRECT reads stop at the end of the file, short of the page */
	if (start + got < pos + len)
		return EIO;
	*data = buf + (pos - start);
	return 0;
}

int mp_storage_read(struct mp_storage *st, enum mp_fill_mode mode, uint64_t pos,
		    size_t len, unsigned char *buf, const unsigned char **data)
{
	size_t got;
	int e;

	if (mode == MP_FILL_DIRECT && st->direct_fd >= 0) {
		e = read_direct(st, pos, len, buf, data);
	} else {
		if (mode == MP_FILL_UNCACHED && !st->uncached)
			mode = MP_FILL_BUFFERED;
		e = read_loop(mode == MP_FILL_UNCACHED ? st->uncached_fd : st->fd, buf, len, pos,
			      mode == MP_FILL_UNCACHED ? RWF_DONTCACHE : 0, &got);
		if (!e && got < len)
			e = EIO;
		*data = buf;
	}
	if (!e)
		atomic_fetch_add_explicit(&st->bytes[mode], len, memory_order_relaxed);
	return e;
}

enum mp_fill_mode mp_storage_mode(const struct mp_storage *st, bool reader_direct)
{
	if (reader_direct && st->direct_fd >= 0)
		return MP_FILL_DIRECT;
	return st->uncached ? MP_FILL_UNCACHED : MP_FILL_BUFFERED;
}

/* The O_DIRECT descriptor, or -1 with st->direct_why said. */
static int open_direct(struct mp_storage *st, uint64_t alignment, unsigned char *page)
{
	size_t got;
	int fd, e;

	if (alignment < PAGE) {
		snprintf(st->direct_why, sizeof st->direct_why, "the pack's alignment is "
			 "%llu, below the %u bytes O_DIRECT reads need",
			 (unsigned long long)alignment, PAGE);
		return -1;
	}
	fd = mp_reopen_same(st->fd, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		snprintf(st->direct_why, sizeof st->direct_why, "cannot open the pack with "
			 "O_DIRECT: %s", strerror(errno));
		return -1;
	}
	e = read_loop(fd, page, PAGE, 0, 0, &got);
	if (e) {
		snprintf(st->direct_why, sizeof st->direct_why, "its file system refuses "
			 "O_DIRECT reads: %s", strerror(e));
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether RWF_DONTCACHE reads work, with st->uncached_why said if not. */
static bool try_uncached(struct mp_storage *st, unsigned char *page)
{
	size_t got;
	int e;

	st->uncached_fd = mp_reopen_same(st->fd, O_RDONLY);
	if (st->uncached_fd < 0) {
		snprintf(st->uncached_why, sizeof st->uncached_why, "no uncached reads: "
			 "cannot open the pack again: %s", strerror(errno));
		return false;
	}
	e = read_loop(st->uncached_fd, page, PAGE, 0, RWF_DONTCACHE, &got);
	if (!e) {
		posix_fadvise(st->uncached_fd, 0, 0, POSIX_FADV_RANDOM);
		return true;
	}
	close(st->uncached_fd);
	st->uncached_fd = -1;
	snprintf(st->uncached_why, sizeof st->uncached_why, "no uncached reads "
		 "(RWF_DONTCACHE, Linux 6.14) on this kernel or file system: %s%s",
		 strerror(e), ": the pack's pages are cached as well as FUSE's");
	return false;
}

enum mp_err mp_storage_open(struct mp_storage *st, int fd, uint64_t file_size,
			    uint64_t alignment, struct mp_error *err)
{
	unsigned char *page = NULL;

	memset(st, 0, sizeof *st);
	st->fd = fd;
	st->uncached_fd = -1;
	st->file_size = file_size;
	if (posix_memalign((void **)&page, MP_BUF_ALIGN, PAGE) != 0)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	st->direct_fd = open_direct(st, alignment, page);
	st->uncached = try_uncached(st, page);
	free(page);
	return MP_OK;
}

void mp_storage_close(struct mp_storage *st)
{
	if (st->direct_fd >= 0)
		close(st->direct_fd);
	if (st->uncached_fd >= 0)
		close(st->uncached_fd);
	st->direct_fd = st->uncached_fd = -1;
}
