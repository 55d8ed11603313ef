/*
 * sealcheck.h - check each chunk of a sealed pack on its first read.
 *
 * The state of every chunk of the seal's layout is one atomic byte:
 * unchecked, checking, good or bad.  A read of a byte range looks at the
 * chunks it touches.  All good: the caller serves the range from the file
 * as it would without a seal (nothing copied, nothing hashed).  Otherwise
 * each unchecked chunk is claimed with a compare-and-swap by exactly one
 * reader, which reads the WHOLE chunk, hashes it and compares the digest
 * with the seal's; its bytes inside the requested range are read straight
 * into the caller's buffer and hashed from there, so the bytes a first read
 * serves are the bytes that were hashed, never a second read of the file.
 * Readers that find a chunk being checked wait for it (a condition
 * variable from a small striped table, keyed by chunk number), so
 * concurrent first reads of one chunk hash it once.  A bad chunk stays bad:
 * every later read touching it is refused.  Chunks are visited in
 * ascending order, so two readers never wait for each other.
 *
 * Checking ahead (optional, mp_sealcheck_ahead_start): a few threads hash
 * the chunks that follow the last read, up to a window, through the same
 * state machine, so a sequential first read finds them good and is served
 * from the file while the next ones are hashed on the other cores.  One
 * thread is not enough: it claims the next chunk before the reader gets
 * there, the reader then waits for it, and only one core hashes.  It only
 * follows hints (mp_sealcheck_ahead_hint after each read): a mount nobody
 * reads hashes nothing.  A bad chunk it finds is kept as "bad, not yet
 * reported", so the first read that meets it still gets *found_now.
 *
 * Memory: the caller's buffer (the request's size) and, for the parts of
 * a chunk outside the request, one scratch buffer of at most
 * MP_SEALCHECK_SCRATCH bytes, freed before returning: bounded by the
 * request, whatever the chunk size.  Nothing here knows about FUSE.
 */
#ifndef MOEPACK_SEALCHECK_H
#define MOEPACK_SEALCHECK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "seal/seal.h"

enum mp_chunk_state {
	MP_CHUNK_UNCHECKED,
	MP_CHUNK_CHECKING,
	MP_CHUNK_GOOD,
	MP_CHUNK_BAD,
	MP_CHUNK_BAD_UNREPORTED,  /* bad, found by the ahead thread, not yet read */
};

#define MP_SEALCHECK_STRIPES 64
#define MP_SEALCHECK_SCRATCH (1u << 20)
/* -o seal_ahead's default and ceiling, in chunks (2 MiB each for K3) */
#define MP_SEALCHECK_AHEAD_DEFAULT 16
#define MP_SEALCHECK_AHEAD_MAX 4096
#define MP_SEALCHECK_AHEAD_THREADS_MAX 8

/* Counters, relaxed atomics (status.json, metrics). */
struct mp_sealcheck_counters {
	_Atomic uint64_t checked;       /* chunks hashed (good or bad) */
	_Atomic uint64_t failed;        /* chunks found bad */
	_Atomic uint64_t bytes_hashed;
	_Atomic uint64_t checked_ahead; /* of `checked`, by the ahead thread */
};

/* The ahead thread's wish list: chunks [from, to), under lock. */
struct mp_sealahead {
	pthread_t thread[MP_SEALCHECK_AHEAD_THREADS_MAX];
	unsigned threads;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	uint64_t from, to;
	unsigned window;
	bool stop;
	_Atomic bool running;
};

struct mp_sealcheck {
	const struct mp_seal *seal;
	const struct mp_seal_layout *layout;
	int fd;
	_Atomic uint8_t *state;          /* layout->chunk_count entries */
	pthread_mutex_t lock[MP_SEALCHECK_STRIPES];
	pthread_cond_t done[MP_SEALCHECK_STRIPES];
	struct mp_sealcheck_counters count;
	struct mp_sealahead ahead;
};

/* Everything unchecked, nothing ahead.  MP_E_NOMEM (or MP_E_USAGE: the
 * seal and layout disagree). */
enum mp_err mp_sealcheck_init(struct mp_sealcheck *sc, const struct mp_seal *seal,
			      const struct mp_seal_layout *layout, int fd,
			      struct mp_error *err);
/* Stops the ahead thread (if any) first. */
void mp_sealcheck_free(struct mp_sealcheck *sc);

/*
 * Start `threads` ahead threads (1 to MP_SEALCHECK_AHEAD_THREADS_MAX),
 * which check up to `window` chunks past each hinted read; window 0 starts
 * none.  Start them after any fork (fuse_daemonize): threads do not
 * survive one.  MP_E_NOMEM when a thread cannot start (none is left).
 */
enum mp_err mp_sealcheck_ahead_start(struct mp_sealcheck *sc, unsigned window,
				     unsigned threads, struct mp_error *err);

/* Stop and join the ahead threads; nothing when none runs. */
void mp_sealcheck_ahead_stop(struct mp_sealcheck *sc);

/*
 * [pos, pos + len) was just read: the ahead thread moves on to the chunks
 * after it, unless they are checked or being checked already.  One or two
 * atomic loads when there is nothing to do; nothing without the thread.
 */
void mp_sealcheck_ahead_hint(struct mp_sealcheck *sc, uint64_t pos, size_t len);

enum mp_sealread {
	MP_SEALREAD_GOOD,    /* every chunk good before the call: serve from the file */
	MP_SEALREAD_FILLED,  /* buf holds the range: the bytes to serve */
	MP_SEALREAD_BAD,     /* a chunk of the range failed its check (now or before) */
	MP_SEALREAD_IO,      /* the file could not be read (short read, errno) */
};

/*
 * Check the chunks of [pos, pos + len) (len > 0, within the layout's file
 * size).  buf must hold len bytes; it is written only for
 * MP_SEALREAD_FILLED.  For MP_SEALREAD_BAD, *bad is the first bad chunk
 * and *found_now true when this call found it (the caller logs it once).
 */
enum mp_sealread mp_sealcheck_read(struct mp_sealcheck *sc, uint64_t pos, size_t len,
				   unsigned char *buf, uint64_t *bad, bool *found_now);

/* True when every chunk of [pos, pos + len) is already good (one load each). */
bool mp_sealcheck_all_good(struct mp_sealcheck *sc, uint64_t pos, size_t len);

/* MP_CHUNK_BAD_UNREPORTED shows as MP_CHUNK_BAD. */
enum mp_chunk_state mp_sealcheck_state(struct mp_sealcheck *sc, uint64_t chunk);

#endif
