/*
 * chunkcache.h - a bounded cache of seal chunks checked since they last
 * came from storage.
 *
 * Under -o verify=seal every byte served was hashed after it was read
 * from storage, and a read request seldom covers whole chunks: the kernel
 * cuts an O_DIRECT read into requests of its own size, read-ahead comes in
 * windows, and the loader splits an object into page-aligned pieces.  So
 * a chunk's bytes are wanted by two or more requests, usually at the same
 * moment.  This cache lets the first one read and hash the whole chunk and
 * the others take their bytes from it, so that each chunk is read and
 * hashed once per fill, not once per request.
 *
 * An entry is one chunk: LOADING (claimed by one thread, which reads and
 * hashes it), then READY (its bytes are the sealed ones) or gone (it did
 * not match, or could not be read: the waiters are told which).  Entries
 * in use are held by reference; READY entries nobody holds stay, least
 * recently used first out, while the cache holds more than `budget` bytes;
 * an entry whose every byte has been served goes out before the others.
 * With budget 0 nothing is kept: only requests in flight share chunks.
 * Memory: the budget, plus the entries requests hold (at most the chunks
 * their ranges touch), plus free buffers kept for the next claims: as many
 * as the budget holds and at most 16 MiB more (none of buffers larger than
 * that).  One mutex and one condition variable; nothing here
 * reads, hashes or knows about FUSE.
 */
#ifndef MOEPACK_CHUNKCACHE_H
#define MOEPACK_CHUNKCACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bufpool.h"
#include "base/errors.h"

enum mp_chunk_entry_state {
	MP_CE_LOADING,
	MP_CE_READY,
	MP_CE_BAD,     /* hashed, and not the sealed bytes */
	MP_CE_IOERR,   /* could not be read: not the chunk's fault */
};

struct mp_chunk_entry {
	uint64_t chunk;
	enum mp_chunk_entry_state state;
	unsigned refs;
	uint64_t served;             /* bytes handed to readers so far */
	unsigned char *buf;          /* a buffer of the cache's pool */
	const unsigned char *data;   /* the chunk's first byte, inside buf */
	size_t len;
	struct mp_chunk_entry *hnext;       /* hash chain */
	struct mp_chunk_entry *prev, *next; /* idle list (READY, refs 0) */
	bool hashed;                 /* still in the hash table */
};

struct mp_chunkcache {
	pthread_mutex_t lock;
	pthread_cond_t settled;      /* an entry left LOADING */
	struct mp_chunk_entry **buckets;
	size_t nbuckets;             /* a power of two */
	struct mp_chunk_entry *idle_head, *idle_tail; /* head: first out */
	size_t bytes;                /* of every entry's buffer */
	size_t budget;               /* bytes of idle entries kept at most */
	struct mp_bufpool pool;      /* chunk-sized buffers */
	uint64_t hits, misses;       /* under lock */
};

/*
 * A cache of chunks of at most chunk_bytes bytes each, read with some
 * slack (buf_bytes >= chunk_bytes, for page rounding), keeping idle
 * entries up to budget bytes.  MP_E_NOMEM.
 */
enum mp_err mp_chunkcache_init(struct mp_chunkcache *cc, size_t buf_bytes, size_t budget,
			       struct mp_error *err);
/* Every entry must have been released. */
void mp_chunkcache_destroy(struct mp_chunkcache *cc);

enum mp_chunk_get {
	MP_CHUNK_HIT,      /* READY: take the bytes */
	MP_CHUNK_CLAIMED,  /* new, LOADING, with a buffer: the caller loads it and
	                      calls mp_chunkcache_settle() */
	MP_CHUNK_PENDING,  /* LOADING by another thread: mp_chunkcache_wait() */
	MP_CHUNK_NOMEM,    /* no buffer for a new entry; nothing held */
};

/*
 * The entry of `chunk`, held (one reference) in every case but NOMEM.
 * Never waits.  With `claim` false, an absent chunk is not created and
 * MP_CHUNK_NOMEM is returned for it (a prefetch that finds it gone).
 */
enum mp_chunk_get mp_chunkcache_get(struct mp_chunkcache *cc, uint64_t chunk, bool claim,
				    struct mp_chunk_entry **out);

/*
 * Wait until a held entry is no longer LOADING; returns its state.  An
 * entry that ended BAD or IOERR is out of the table already: a later get
 * starts afresh.
 */
enum mp_chunk_entry_state mp_chunkcache_wait(struct mp_chunkcache *cc,
					     struct mp_chunk_entry *e);

/* The claimer's verdict on its entry: READY, BAD or IOERR; wakes waiters. */
void mp_chunkcache_settle(struct mp_chunkcache *cc, struct mp_chunk_entry *e,
			  enum mp_chunk_entry_state state);

/* Drop a reference, after `served` of its bytes were handed to a reader;
 * true when, with those, every byte of the entry has been handed out. */
bool mp_chunkcache_put(struct mp_chunkcache *cc, struct mp_chunk_entry *e,
		       uint64_t served);

/* Bytes held and the hit/miss counts, for status.json. */
void mp_chunkcache_stats(struct mp_chunkcache *cc, size_t *bytes, uint64_t *hits,
			 uint64_t *misses);

#endif
