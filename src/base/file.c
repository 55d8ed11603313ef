/* file.c - opening untrusted input files without blocking on FIFOs; full reads and writes. */
#include "config.h"

#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

const char *mp_file_kind(mode_t mode)
{
	static const struct {
		mode_t type;
		const char *name;
	} kinds[] = {
		{S_IFREG, "a regular file"}, {S_IFDIR, "a directory"},
		{S_IFIFO, "a FIFO"},         {S_IFSOCK, "a socket"},
		{S_IFCHR, "a character device"}, {S_IFBLK, "a block device"},
	};

	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if ((mode & S_IFMT) == kinds[i].type)
			return kinds[i].name;
	return "not a regular file";
}

/* fd is on a pseudo file system, whose "regular" files are not data. */
static bool pseudo_fs(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) != 0)
		return false;
	switch ((unsigned long)sf.f_type) {
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
		return true;
	}
	return false;
}

enum mp_err mp_open_regular(const char *path, const char *what, enum mp_err code, int *fd,
			    struct stat *st, struct mp_error *err)
{
	/* O_NONBLOCK: open() of a FIFO with no writer would otherwise wait forever. */
	int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int flags;

	*fd = -1;
	if (f < 0)
		return mp_fail(err, code, "cannot read %s %s: %s", what, path, strerror(errno));
	if (fstat(f, st) < 0) {
		int e = errno;
		close(f);
		return mp_fail(err, code, "cannot read %s %s: %s", what, path, strerror(e));
	}
	if (!S_ISREG(st->st_mode)) {
		close(f);
		if (S_ISDIR(st->st_mode))
			return mp_fail(err, code, "cannot read %s %s: is a directory", what, path);
		return mp_fail(err, code, "cannot read %s %s: not a regular file (%s)", what, path,
			       mp_file_kind(st->st_mode));
	}
	/* Files of procfs, sysfs and their kin look regular but a read may
	 * wait for ever (/proc/kmsg waits for the next kernel message): they
	 * stay non-blocking, so such a read fails with EAGAIN instead. */
	if (pseudo_fs(f)) {
		*fd = f;
		return MP_OK;
	}
	/* Regular files never block; clear the flag so later reads behave normally. */
	flags = fcntl(f, F_GETFL);
	if (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		int e = errno;
		close(f);
		return mp_fail(err, code, "cannot read %s %s: %s", what, path, strerror(e));
	}
	*fd = f;
	return MP_OK;
}

enum mp_err mp_open_output(const char *path, int flags, const struct stat *expect,
			   const char *what, enum mp_err code, int *fd, struct stat *st,
			   struct mp_error *err)
{
	int f = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
	int fl, e;
	const char *why = NULL;

	*fd = -1;
	if (f < 0) {
		e = errno;
		/* O_NOFOLLOW says ELOOP for a link at the name itself */
		if (e == ELOOP)
			return mp_fail(err, code, "cannot write %s %s: it is a symbolic link, "
				       "which is never followed for an output", what, path);
		return mp_fail(err, code, "cannot write %s %s: %s", what, path, strerror(e));
	}
	if (fstat(f, st) < 0) {
		e = errno;
		close(f);
		return mp_fail(err, code, "cannot write %s %s: %s", what, path, strerror(e));
	}
	if (!S_ISREG(st->st_mode))
		why = mp_file_kind(st->st_mode);
	else if (st->st_nlink != 1)
		why = st->st_nlink == 0 ? "it was removed while being opened"
					: "it has more than one hard link";
	else if (expect && (st->st_dev != expect->st_dev || st->st_ino != expect->st_ino))
		why = "it is not the file this build created";
	if (why) {
		close(f);
		return mp_fail(err, code, "cannot write %s %s: %s%s", what, path,
			       S_ISREG(st->st_mode) ? "" : "not a regular file: ", why);
	}
	fl = fcntl(f, F_GETFL);
	if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		e = errno;
		close(f);
		return mp_fail(err, code, "cannot write %s %s: %s", what, path, strerror(e));
	}
	*fd = f;
	return MP_OK;
}

/*
 * The one loop behind mp_pread_all() and mp_pwrite_all(): all n bytes at
 * pos, retrying EINTR and short transfers.  0, the errno of the failed
 * call, or MP_READ_EOF (which is MP_WRITE_NONE) when a call moved nothing.
 */
_Static_assert(MP_READ_EOF == MP_WRITE_NONE, "one code for a call that moved nothing");
static int transfer_all(int fd, unsigned char *p, size_t n, uint64_t pos, size_t *done,
			bool writing)
{
	size_t moved = 0;
	int rc = 0;

	while (moved < n) {
		off_t at = (off_t)(pos + moved);
		ssize_t k = writing ? pwrite(fd, p + moved, n - moved, at)
				    : pread(fd, p + moved, n - moved, at);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			rc = k < 0 ? errno : MP_READ_EOF;
			break;
		}
		moved += (size_t)k;
	}
	if (done)
		*done = moved;
	return rc;
}

int mp_pwrite_all(int fd, const void *buf, size_t n, uint64_t pos, size_t *done)
{
	/* pwrite() only reads the buffer: the cast drops a const it keeps */
	return transfer_all(fd, (unsigned char *)(uintptr_t)buf, n, pos, done, true);
}

const char *mp_write_failure(int rc)
{
	return rc == MP_WRITE_NONE ? "no space" : strerror(rc);
}

enum mp_err mp_pwrite_full(int fd, const void *buf, size_t n, uint64_t pos,
			   const char *path, struct mp_error *err)
{
	size_t done;
	int rc = mp_pwrite_all(fd, buf, n, pos, &done);

	if (rc)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s at byte %" PRIu64 ": %s", path,
			       pos + done, mp_write_failure(rc));
	return MP_OK;
}

int mp_pread_all(int fd, void *buf, size_t n, uint64_t pos, size_t *done)
{
	return transfer_all(fd, buf, n, pos, done, false);
}

enum mp_err mp_pread_full(int fd, void *buf, size_t n, uint64_t pos, const char *what,
			  const char *path, enum mp_err code, struct mp_error *err)
{
	size_t done;
	int rc = mp_pread_all(fd, buf, n, pos, &done);
	const char *sep = path ? " " : "";
	char why[64];

	if (rc == 0)
		return MP_OK;
	if (rc == MP_READ_EOF)
		snprintf(why, sizeof why, "the file is shorter (ends before byte %" PRIu64 ")",
			 pos + n);
	return mp_fail(err, code, "cannot read %s%s%s at byte %" PRIu64 ": %s", what, sep,
		       path ? path : "", pos + done, rc == MP_READ_EOF ? why : strerror(rc));
}

int mp_reopen_same(int fd, int flags)
{
	char path[64];
	struct stat a, b;
	int nfd;

	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	nfd = open(path, flags | O_CLOEXEC | O_NOCTTY);
	if (nfd < 0)
		return -1;
	if (fstat(nfd, &a) != 0 || fstat(fd, &b) != 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		close(nfd);
		errno = ESTALE;
		return -1;
	}
	return nfd;
}

uint64_t mp_file_hole_end(int fd, uint64_t start)
{
	off_t data = lseek(fd, (off_t)start, SEEK_DATA);
	struct stat st;

	if (data >= 0)
		return (uint64_t)data > start ? (uint64_t)data : start;
	/* ENXIO: no data from start to the end of the file, or start past it */
	if (errno != ENXIO || fstat(fd, &st) != 0)
		return start;
	return (uint64_t)st.st_size > start ? (uint64_t)st.st_size : start;
}
