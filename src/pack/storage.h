/*
 * storage.h - how the daemon reads the pack's bytes from storage.
 *
 * What a mount serves it reads into its own page-aligned buffers, in one
 * of three ways, each chosen per read:
 *
 *   direct    O_DIRECT, on a second descriptor of the same open file:
 *             from the device into the buffer, the page cache untouched.
 *             For readers that opened their file with O_DIRECT, so that
 *             through the mount it stays direct.
 *   uncached  a buffered read with RWF_DONTCACHE (Linux 6.14): pages
 *             already cached are used, pages read in are dropped once
 *             copied.  For every other reader: what they read is then
 *             cached once, in FUSE's page cache, not twice.  It has a
 *             descriptor of its own with read-ahead off
 *             (POSIX_FADV_RANDOM): pages read ahead and never copied
 *             would stay cached, and the requests come in read-ahead
 *             windows of FUSE's anyway.
 *   buffered  a plain pread(), when neither of the others is possible;
 *             the pack's pages stay cached beside FUSE's.
 *
 * mp_storage_open() finds out which are possible, and says why not in one
 * line each (status.json and the log report it): direct needs a pack
 * aligned to at least MP_STORAGE_DIRECT_ALIGN and a file system that takes
 * O_DIRECT; uncached a kernel and file system that know RWF_DONTCACHE.
 * A direct read asks for whole pages (the range is rounded out to them, the
 * bytes around it are read and not used), so a buffer must hold
 * mp_storage_span() bytes.  Nothing here knows about FUSE.
 */
#ifndef MOEPACK_STORAGE_H
#define MOEPACK_STORAGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"

#define MP_STORAGE_DIRECT_ALIGN 4096u

enum mp_fill_mode {
	MP_FILL_DIRECT,
	MP_FILL_UNCACHED,
	MP_FILL_BUFFERED,
	MP_FILL_MODES,
};

/* "direct", "uncached", "buffered": status.json's and the metrics' words. */
const char *mp_fill_mode_name(enum mp_fill_mode mode);

struct mp_storage {
	int fd;                  /* the pack (borrowed), buffered */
	int direct_fd;           /* the same open file with O_DIRECT; -1: none */
	int uncached_fd;         /* the same, for uncached reads, no read-ahead;
	                            -1: none (then fd) */
	uint64_t file_size;
	bool uncached;           /* RWF_DONTCACHE works on fd */
	char direct_why[MP_MSG_MAX];   /* why there is no direct_fd ("" if there is) */
	char uncached_why[MP_MSG_MAX]; /* why not uncached ("" if it works) */
	_Atomic uint64_t bytes[MP_FILL_MODES]; /* read from storage, by mode */
};

/*
 * Set up reads of the pack open as fd (size file_size, its manifest's
 * alignment): opens the O_DIRECT descriptor through /proc/self/fd (so it
 * is the very file fd is, whatever its name now) and tries one read each
 * way.  A way that cannot be used is not an error: only MP_E_NOMEM is.
 */
enum mp_err mp_storage_open(struct mp_storage *st, int fd, uint64_t file_size,
			    uint64_t alignment, struct mp_error *err);
void mp_storage_close(struct mp_storage *st);

/* The way to read for a reader that opened its file with O_DIRECT or not. */
enum mp_fill_mode mp_storage_mode(const struct mp_storage *st, bool reader_direct);

/* Bytes a buffer needs to read [pos, pos + len) in any mode. */
size_t mp_storage_span(uint64_t pos, size_t len);

/*
 * Read [pos, pos + len) of the pack (within its size) in `mode` into buf, a
 * page-aligned buffer of at least mp_storage_span(pos, len) bytes; *data
 * then points at byte pos.  0, or an errno (EIO when the file ends first).
 */
int mp_storage_read(struct mp_storage *st, enum mp_fill_mode mode, uint64_t pos,
		    size_t len, unsigned char *buf, const unsigned char **data);

#endif
