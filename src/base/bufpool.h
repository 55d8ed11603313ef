/*
 * bufpool.h - page-aligned buffers of one size, kept for reuse.
 *
 * The daemon reads what it serves from storage into buffers of its own:
 * one the size of the largest read request, or of a seal chunk, aligned
 * for O_DIRECT.  A fresh buffer costs a page fault for every page on its
 * first touch (and a VM whose host takes freed memory back pays that on
 * every allocation), so a buffer given back goes on a free list, up to
 * `keep` of them, and the next request takes it from there.
 *
 * Thread-safe (one mutex, held for a push or a pop).  The memory held is
 * at most size * (buffers in use + keep).
 */
#ifndef MOEPACK_BUFPOOL_H
#define MOEPACK_BUFPOOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* What every buffer is aligned to: the page, which O_DIRECT wants. */
#define MP_BUF_ALIGN 4096u

struct mp_bufpool {
	size_t size;             /* bytes of each buffer (a multiple of MP_BUF_ALIGN) */
	unsigned keep;           /* free buffers kept at most */
	pthread_mutex_t lock;
	void **free_list;        /* `keep` slots */
	unsigned nfree;
	atomic_size_t live;      /* buffers allocated and not yet freed */
};

/*
 * Buffers of `size` bytes (rounded up to MP_BUF_ALIGN), keeping up to `keep`
 * free ones.  False when out of memory.
 */
bool mp_bufpool_init(struct mp_bufpool *pool, size_t size, unsigned keep);
/* Frees the kept buffers; every buffer must have been given back. */
void mp_bufpool_destroy(struct mp_bufpool *pool);

/* A buffer of pool->size bytes, contents undefined; NULL when out of memory. */
void *mp_bufpool_get(struct mp_bufpool *pool);
/* Give a buffer of this pool back (NULL is allowed). */
void mp_bufpool_put(struct mp_bufpool *pool, void *buf);

/* Bytes held now: buffers in use and kept. */
size_t mp_bufpool_bytes(const struct mp_bufpool *pool);

#endif
