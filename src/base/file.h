/*
 * file.h - opening files named by untrusted input; whole reads and writes.
 *
 * A pack, manifest, config or GGUF path may name a FIFO, a device or a
 * directory.  A plain open() of a FIFO blocks until a writer appears, so every
 * input file is opened here: without blocking, without becoming a controlling
 * terminal, and refused unless it is a regular file.  Files of procfs, sysfs
 * and the like (debugfs, tracefs, securityfs, cgroup) look regular, but a
 * read may wait for ever (/proc/kmsg): their descriptors stay non-blocking,
 * so that such a read fails at once with EAGAIN.
 *
 * Every whole read and write of the lower layers goes through
 * mp_pread_all() / mp_pwrite_all() here: one loop each, one wording of
 * their failures.
 */
#ifndef MOEPACK_FILE_H
#define MOEPACK_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/errors.h"

/*
 * Open path read-only as a regular file.  On success *fd is a blocking
 * descriptor (non-blocking on procfs, sysfs and the like), O_CLOEXEC, and
 * *st its fstat().  On failure nothing stays open,
 * *fd is -1, and err gets code with "cannot read WHAT PATH: REASON" (e.g.
 * what = "manifest", code = MP_E_MANIFEST_IO); a FIFO, socket or device is
 * refused with "not a regular file (a FIFO)" and the like.
 */
enum mp_err mp_open_regular(const char *path, const char *what, enum mp_err code, int *fd,
			    struct stat *st, struct mp_error *err);

/*
 * Open an output file without ever writing through a name that is not the
 * build's own regular file.  The name is opened with O_NOFOLLOW (a symbolic
 * link at it is refused, never followed, so a dangling one creates nothing),
 * without blocking (a FIFO fails instead of waiting), and kept only if
 * fstat() shows a regular file with one link (a hard link would write into
 * another name's file).  flags are the access mode plus O_CREAT, O_EXCL or
 * O_TRUNC as wanted.  When expect is not NULL the file must be that one
 * (st_dev and st_ino: the one this program created earlier, as a resumed
 * build's PACK.partial).  On success *fd is blocking and *st its fstat();
 * on failure nothing stays open, *fd is -1 and err gets code with "cannot
 * write WHAT PATH: REASON".
 */
enum mp_err mp_open_output(const char *path, int flags, const struct stat *expect,
			   const char *what, enum mp_err code, int *fd, struct stat *st,
			   struct mp_error *err);

/*
 * Write all n bytes of buf at byte pos of fd, retrying short writes and
 * EINTR; the one write loop of the lower layers.  Returns 0, the errno of
 * a failed pwrite(), or MP_WRITE_NONE when the file system takes no more
 * (a pwrite() of nothing).  *done (may be NULL) gets the bytes written.
 */
#define MP_WRITE_NONE (-1)
int mp_pwrite_all(int fd, const void *buf, size_t n, uint64_t pos, size_t *done);

/* The reason of a failed mp_pwrite_all(), for messages ("no space"). */
const char *mp_write_failure(int rc);

/*
 * mp_pwrite_all() with its message: MP_E_PACK_IO "cannot write PATH at byte
 * N: REASON", N where the write stopped.
 */
enum mp_err mp_pwrite_full(int fd, const void *buf, size_t n, uint64_t pos,
			   const char *path, struct mp_error *err);

/*
 * Read all n bytes at byte pos of fd, retrying short reads and EINTR; the
 * one read loop of the tree.  Returns 0 when all n bytes were read, the
 * errno of a failed pread(), or MP_READ_EOF when the file ends first.
 * *done (may be NULL) gets the number of bytes read.
 */
#define MP_READ_EOF (-1)
int mp_pread_all(int fd, void *buf, size_t n, uint64_t pos, size_t *done);

/*
 * mp_pread_all() with the one wording of its failures: err gets code with
 * "cannot read WHAT PATH at byte N: REASON", N being where the read stopped
 * and REASON strerror() or, when the file ends first, "the file is shorter
 * (ends before byte M)" with M = pos + n.
 * path may be NULL when what names the file already ("pack /x.pack").
 */
enum mp_err mp_pread_full(int fd, void *buf, size_t n, uint64_t pos, const char *what,
			  const char *path, enum mp_err code, struct mp_error *err);

/*
 * A second open file of what fd holds (not a dup: its own flags and
 * read-ahead), opened through /proc/self/fd with `flags` (O_CLOEXEC and
 * O_NOCTTY added), so no path is followed again; -1 with errno set when
 * it cannot be, ESTALE when what opened is not fd's inode.
 */
int mp_reopen_same(int fd, int flags);

/* "a FIFO", "a directory", "a socket", ...: for messages. */
const char *mp_file_kind(mode_t mode);

/*
 * Where the hole of fd at byte `start` ends: the next data at or after
 * start (SEEK_DATA), or the file's size when no data follows; `start` when
 * there is data at start, start is at or past the end, or the file system
 * cannot say.  [start, end) with end <= the result reads as zeros without
 * anything stored: its digest is that of zeros, known without reading it.
 */
uint64_t mp_file_hole_end(int fd, uint64_t start);

#endif
