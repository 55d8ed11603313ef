/*
 * sealcheck.h - every read of a sealed pack from storage, checked.
 *
 * -o verify=seal's guarantee: no byte of the pack reaches a reader unless
 * it was hashed against the seal after it last came from storage.  So a
 * read is never served from the file as it stands: the chunks it touches
 * are read from storage into buffers of the daemon's, each is hashed
 * whole and compared with its sealed digest, and the reply is made of
 * those very buffers (mp_sealcheck_fill() hands out their addresses).
 * What the kernel keeps of a reply in FUSE's page cache is served from
 * there without asking again; a page it evicts comes back through a new
 * fill, and so a new check.  That is fs-verity's rule (every fill is
 * checked), not dm-verity's check_at_most_once.
 *
 * Chunks that several requests want at once (the pieces the kernel cuts an
 * O_DIRECT read into, read-ahead windows) are read and hashed once, by the
 * first request, and shared through a bounded cache of checked chunks
 * (chunkcache.h).  A request that needs two or more chunks read gives all
 * but one to worker threads and reads and hashes the rest itself, so its
 * latency is not that of hashing them one after the other.
 *
 * Checking ahead: for a reader that goes through a file sequentially
 * (buffered reads, each starting where one ended), the workers read and
 * hash up to `window` chunks past it, never past the end of its file, into
 * the cache.  No more than the cache holds: the readers seen lately share
 * its chunks, less three each (the chunks its requests in flight may be
 * in), so that what is checked ahead is not evicted before it is read and
 * hashed again; a chunk queued before more readers came and beyond the
 * share they leave is not checked.  A chunk the reader has passed by
 * the time a worker comes to it is left alone, and so is one handed out
 * whole before: its pages are in the kernel's cache of the mount, where a
 * buffered reader finds them without asking (one it evicts comes back
 * through a fill of its own, checked then).  O_DIRECT readers and
 * random reads get nothing ahead, so nothing is hashed that is not read.
 *
 * A chunk that does not match (and that `refetch` could not make local
 * again, below) is bad for the mount's life: every later
 * read touching it fails, and the first read to meet it is told
 * (*found_now) so that it is logged once.  A read error is not the chunk's
 * fault: the next read tries again.  Nothing here knows about FUSE.
 */
#ifndef MOEPACK_SEALCHECK_H
#define MOEPACK_SEALCHECK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/errors.h"
#include "pack/storage.h"
#include "seal/chunkcache.h"
#include "seal/seal.h"

/* -o seal_ahead's default and ceiling, in chunks */
#define MP_SEALCHECK_AHEAD_DEFAULT 16
#define MP_SEALCHECK_AHEAD_MAX 4096
#define MP_SEALCHECK_THREADS_MAX 8
/* -o seal_cache_mb's default: what idle checked chunks may hold */
#define MP_SEALCHECK_CACHE_DEFAULT (64u << 20)
/* sequential streams told apart for checking ahead */
#define MP_SEALCHECK_STREAMS 16
#define MP_SEALCHECK_AHEAD_QUEUE 512

/* Counters, relaxed atomics (status.json, metrics). */
struct mp_sealcheck_counters {
	_Atomic uint64_t checked;       /* chunk fills hashed (good or bad) */
	_Atomic uint64_t failed;        /* of those, not the sealed bytes */
	_Atomic uint64_t bytes_hashed;
	_Atomic uint64_t checked_ahead; /* of `checked`, by checking ahead */
	_Atomic uint64_t bytes_served;  /* pack bytes handed to readers */
};

/* A sequential reader, as checking ahead follows it. */
struct mp_sealstream {
	uint64_t next;                  /* where its next read should start */
	uint64_t queued_to;             /* chunks before this one are queued */
	uint64_t used;                  /* when last seen (a tick) */
};

struct mp_sealbatch;

/* The worker threads: loads of requests first, then checking ahead. */
struct mp_sealwork {
	pthread_t thread[MP_SEALCHECK_THREADS_MAX];
	unsigned threads;
	pthread_mutex_t lock;
	pthread_cond_t wake, left;      /* work to do; a worker left a batch */
	struct mp_sealbatch *batches;   /* requests' loads, oldest first */
	uint64_t ahead[MP_SEALCHECK_AHEAD_QUEUE];
	enum mp_fill_mode ahead_mode[MP_SEALCHECK_AHEAD_QUEUE];
	unsigned char ahead_stream[MP_SEALCHECK_AHEAD_QUEUE]; /* for which stream */
	unsigned ahead_head, ahead_len;
	struct mp_sealstream streams[MP_SEALCHECK_STREAMS];
	uint64_t tick;
	unsigned window;
	bool stop;
	_Atomic bool running;
};

/*
 * Called before a chunk is read from storage, from the thread that reads
 * it: make chunk c's bytes local (a mount from mirrors fetches it, checked,
 * into the pack file).  0, or an errno: the load fails as a read error
 * does (the next read tries again).  wait is false when checking ahead,
 * before the chunk is claimed: a chunk not local is only asked for
 * (EAGAIN) and not checked ahead, so that no reader waits behind a load
 * nobody asked for yet.  The seal's check of the read is
 * the same either way.
 */
typedef int (*mp_sealcheck_want_fn)(void *arg, uint64_t chunk, bool wait);
/*
 * Called, with want_arg, when chunk's bytes came from storage and did not
 * match the seal, from the thread that read them: true when the chunk has
 * been made local again (a mount from mirrors fetches it anew, checked,
 * over the bytes that failed), and then it is read and checked once more
 * before it is called bad.  NULL: a chunk that fails is bad at once.
 */
typedef bool (*mp_sealcheck_refetch_fn)(void *arg, uint64_t chunk);

struct mp_sealcheck {
	const struct mp_seal *seal;
	mp_sealcheck_want_fn want;       /* NULL: every chunk is local */
	mp_sealcheck_refetch_fn refetch; /* NULL: storage is the only copy */
	void *want_arg;
	const struct mp_seal_layout *layout;
	struct mp_storage *storage;
	_Atomic uint8_t *bad;            /* per chunk: 0, or bad (reported or not) */
	_Atomic uint8_t *served;         /* per chunk: handed out whole once */
	struct mp_chunkcache cache;
	struct mp_sealcheck_counters count;
	struct mp_sealwork work;
};

/*
 * Nothing checked yet, no threads.  cache_budget: bytes of idle checked
 * chunks kept (0: none).  MP_E_NOMEM, or MP_E_USAGE when the seal and
 * layout disagree.
 */
enum mp_err mp_sealcheck_init(struct mp_sealcheck *sc, const struct mp_seal *seal,
			      const struct mp_seal_layout *layout,
			      struct mp_storage *storage, size_t cache_budget,
			      struct mp_error *err);
/* Stops the workers (if any) first. */
void mp_sealcheck_free(struct mp_sealcheck *sc);

/*
 * Start `threads` workers (1 to MP_SEALCHECK_THREADS_MAX), which check
 * ahead up to `window` chunks (0: never ahead).  Start them after any fork
 * (fuse_daemonize): threads do not survive one.  MP_E_NOMEM when one
 * cannot start (none is left running).  Without workers every load is
 * done by the request that needs it.
 */
enum mp_err mp_sealcheck_start(struct mp_sealcheck *sc, unsigned threads, unsigned window,
			       struct mp_error *err);
void mp_sealcheck_stop(struct mp_sealcheck *sc);

/*
 * A buffered read of [pos, pos + len) inside a file that ends at byte
 * `end` of the pack: when it starts where an earlier one ended, the
 * workers check the next chunks of that file ahead of it.  Cheap when
 * there is nothing to do; nothing without workers or a window.
 */
void mp_sealcheck_ahead_hint(struct mp_sealcheck *sc, uint64_t pos, size_t len,
			     uint64_t end, enum mp_fill_mode mode);

/* What a fill holds until mp_sealcheck_release(). */
#define MP_SEALFILL_INLINE 16
struct mp_sealfill {
	struct iovec *iov;               /* the bytes, in order */
	unsigned niov;
	struct mp_chunk_entry **held;
	unsigned nheld;
	struct iovec iov_inline[MP_SEALFILL_INLINE];
	struct mp_chunk_entry *held_inline[MP_SEALFILL_INLINE];
};

enum mp_sealread {
	MP_SEALREAD_FILLED,  /* f->iov holds the range: the bytes to serve */
	MP_SEALREAD_BAD,     /* a chunk of the range does not match the seal */
	MP_SEALREAD_IO,      /* the pack could not be read, or out of memory (errno) */
};

/*
 * Read and check [pos, pos + len) (len > 0, within the layout's file size)
 * with reads of kind `mode`.  FILLED: serve f->iov, then release it.  BAD:
 * *bad is the first bad chunk and *found_now true for the one call that is
 * to log it.  IO: errno says why.  Nothing is held but after FILLED.
 */
enum mp_sealread mp_sealcheck_fill(struct mp_sealcheck *sc, uint64_t pos, size_t len,
				   enum mp_fill_mode mode, struct mp_sealfill *f,
				   uint64_t *bad, bool *found_now);
void mp_sealcheck_release(struct mp_sealcheck *sc, struct mp_sealfill *f);

/* Whether a chunk was found bad (by a read or ahead of one). */
bool mp_sealcheck_is_bad(const struct mp_sealcheck *sc, uint64_t chunk);

#endif
