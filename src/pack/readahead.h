/*
 * readahead.h - read a file range front to back on a second thread.
 *
 * A reader thread pread()s the range into a small ring of buffers while
 * the calling thread hands each filled buffer, in file order, to a
 * consumer callback (SHA-256, the payload scan, both).  On two cores the
 * copy out of the page cache and the consumer's work overlap: one buffer
 * filled and then hashed on one thread costs the kernel's copy on top of
 * the hash.  Each buffer (4 MiB, a core's L2 here) is consumed while it is
 * still in cache, and four of them absorb the reader being descheduled on
 * a busy machine; 1 MiB buffers measured no better and hand over four
 * times as often (each hand-over may wait for the scheduler).
 *
 * The engine knows nothing of what the bytes are: mp_ring_run() takes the
 * filling side as a callback too, so a writer can overlap producing bytes
 * with hashing them (a pack builder with --full-sha256: its fill callback
 * generates or copies the next piece and writes it out, the consume
 * callback hashes it).  mp_readahead() is that engine with pread() as the
 * filling side.
 *
 * Memory: nbufs * buf_size, allocated once per call, whatever the range.
 */
#ifndef MOEPACK_READAHEAD_H
#define MOEPACK_READAHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "base/cancel.h"
#include "base/errors.h"
#include "base/progress_fn.h"

#define MP_READAHEAD_BUF (4u << 20)
#define MP_READAHEAD_NBUFS 4u

/*
 * Called on the caller's thread with bytes [pos, pos + len) of the file,
 * in order, each exactly once; len > 0.  Return MP_OK to go on; anything
 * else (with *err filled) stops the read, and mp_readahead returns it.
 */
typedef enum mp_err (*mp_readahead_fn)(const unsigned char *buf, size_t len,
				       uint64_t pos, void *arg,
				       struct mp_error *err);

/*
 * The filling side of mp_ring_run(): put bytes [pos, pos + len) into buf
 * (len > 0, at most the buffer size), in order.  Runs on the second
 * thread (or the caller's, when no thread can be started), never at the
 * same time as itself.  Anything but MP_OK ends the run after the pieces
 * before it have been consumed, and mp_ring_run returns it.
 */
typedef enum mp_err (*mp_ring_fill_fn)(unsigned char *buf, size_t len, uint64_t pos,
				       void *arg, struct mp_error *err);

struct mp_readahead_opts {
	size_t buf_size;          /* 0: MP_READAHEAD_BUF */
	unsigned nbufs;           /* 0: MP_READAHEAD_NBUFS; at least 2 */
	mp_progress_fn progress;  /* may be NULL: bytes done of end - start */
	void *progress_arg;
	/* looked at before each piece is consumed: a stop asked ends the run
	 * with MP_E_INTERRUPTED (mp_cancel_check()); may be NULL */
	const struct mp_cancel *cancel;
};

/*
 * Feed bytes [start, end) of fd to fn.  A read error, or a file that ends
 * before `end`, gives MP_E_PACK_IO with a message naming `what` (a path,
 * or "pack PATH") and the byte; bytes before it have been consumed.  Out
 * of memory is MP_E_NOMEM.  When no thread can be started the same work
 * is done on the calling thread, without the overlap.  A stop asked through
 * opts->cancel gives MP_E_INTERRUPTED naming `what`.  opts may be NULL.
 */
enum mp_err mp_readahead(int fd, uint64_t start, uint64_t end, const char *what,
			 const struct mp_readahead_opts *opts,
			 mp_readahead_fn fn, void *arg, struct mp_error *err);

/*
 * The general engine: bytes [start, end) made by fill on the second thread
 * and handed to consume on the caller's, in order, through the ring.
 * Returns the first failure of either side, MP_E_INTERRUPTED (a stop
 * asked through opts->cancel), MP_E_NOMEM, or MP_OK.
 */
enum mp_err mp_ring_run(uint64_t start, uint64_t end,
			const struct mp_readahead_opts *opts,
			mp_ring_fill_fn fill, void *fill_arg,
			mp_readahead_fn consume, void *consume_arg,
			struct mp_error *err);

#endif
