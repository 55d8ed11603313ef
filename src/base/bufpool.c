/*
 * bufpool.c - page-aligned buffers kept for reuse (see bufpool.h).
 */
#include "config.h"

#include "base/bufpool.h"

#include <stdlib.h>

bool mp_bufpool_init(struct mp_bufpool *pool, size_t size, unsigned keep)
{
	pool->size = (size + MP_BUF_ALIGN - 1) / MP_BUF_ALIGN * MP_BUF_ALIGN;
	pool->keep = keep;
	pool->nfree = 0;
	atomic_init(&pool->live, 0);
	pool->free_list = keep ? calloc(keep, sizeof *pool->free_list) : NULL;
	if (keep && !pool->free_list)
		return false;
	if (pthread_mutex_init(&pool->lock, NULL) != 0) {
		free(pool->free_list);
		pool->free_list = NULL;
		return false;
	}
	return true;
}

void mp_bufpool_destroy(struct mp_bufpool *pool)
{
	while (pool->nfree > 0)
		free(pool->free_list[--pool->nfree]);
	free(pool->free_list);
	pool->free_list = NULL;
	pthread_mutex_destroy(&pool->lock);
}

void *mp_bufpool_get(struct mp_bufpool *pool)
{
	void *buf = NULL;

	pthread_mutex_lock(&pool->lock);
	if (pool->nfree > 0)
		buf = pool->free_list[--pool->nfree];
	pthread_mutex_unlock(&pool->lock);
	if (buf)
		return buf;
	if (posix_memalign(&buf, MP_BUF_ALIGN, pool->size) != 0)
		return NULL;
	atomic_fetch_add(&pool->live, 1);
	return buf;
}

void mp_bufpool_put(struct mp_bufpool *pool, void *buf)
{
	if (!buf)
		return;
	pthread_mutex_lock(&pool->lock);
	if (pool->nfree < pool->keep) {
		pool->free_list[pool->nfree++] = buf;
		buf = NULL;
	}
	pthread_mutex_unlock(&pool->lock);
	if (buf) {
		free(buf);
		atomic_fetch_sub(&pool->live, 1);
	}
}

size_t mp_bufpool_bytes(const struct mp_bufpool *pool)
{
	return atomic_load(&pool->live) * pool->size;
}
