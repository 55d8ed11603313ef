/*
 * chunkcache.c - the bounded cache of checked chunks (see chunkcache.h).
 */
#include "config.h"

#include "seal/chunkcache.h"

#include <stdlib.h>
#include <string.h>

#define BUCKETS 4096u
/*
 * Free buffers kept for reuse: as many as the budget holds, for the
 * claims of requests in flight (the loader's hot path ran 10-15% slower,
 * and hashed more, keeping only a few: a fresh buffer costs a page fault
 * a page), plus a few spare, never more than SPARE_BYTES of them, so that
 * large chunks (a verify=entries role) are not kept by the handful when
 * the budget is small.  Idle memory is then at most twice the budget plus
 * SPARE_BYTES: idle entries up to the budget, free buffers up to as much
 * again and the spare.
 */
#define SPARE_BUFFERS 8u
#define SPARE_BYTES (16u << 20)

static unsigned kept_buffers(size_t buf_bytes, size_t budget)
{
	size_t spare = SPARE_BYTES / buf_bytes;

	return (unsigned)(budget / buf_bytes) + (spare < SPARE_BUFFERS ? (unsigned)spare
								      : SPARE_BUFFERS);
}

enum mp_err mp_chunkcache_init(struct mp_chunkcache *cc, size_t buf_bytes, size_t budget,
			       struct mp_error *err)
{
	memset(cc, 0, sizeof *cc);
	cc->budget = budget;
	cc->nbuckets = BUCKETS;
	cc->buckets = calloc(BUCKETS, sizeof *cc->buckets);
	if (!cc->buckets)
		return mp_fail(err, MP_E_NOMEM, "out of memory for the chunk cache");
	if (!mp_bufpool_init(&cc->pool, buf_bytes, kept_buffers(buf_bytes, budget))) {
		free(cc->buckets);
		cc->buckets = NULL;
		return mp_fail(err, MP_E_NOMEM, "out of memory for the chunk cache");
	}
	if (pthread_mutex_init(&cc->lock, NULL) != 0 ||
	    pthread_cond_init(&cc->settled, NULL) != 0) {
		mp_bufpool_destroy(&cc->pool);
		free(cc->buckets);
		cc->buckets = NULL;
		return mp_fail(err, MP_E_NOMEM, "cannot create the chunk cache's lock");
	}
	return MP_OK;
}

static void entry_free(struct mp_chunkcache *cc, struct mp_chunk_entry *e)
{
	mp_bufpool_put(&cc->pool, e->buf);
	free(e);
}

void mp_chunkcache_destroy(struct mp_chunkcache *cc)
{
	if (!cc->buckets)
		return;
	for (size_t b = 0; b < cc->nbuckets; b++)
		while (cc->buckets[b]) {
			struct mp_chunk_entry *e = cc->buckets[b];

			cc->buckets[b] = e->hnext;
			entry_free(cc, e);
		}
	free(cc->buckets);
	cc->buckets = NULL;
	mp_bufpool_destroy(&cc->pool);
	pthread_cond_destroy(&cc->settled);
	pthread_mutex_destroy(&cc->lock);
}

static struct mp_chunk_entry **bucket_of(struct mp_chunkcache *cc, uint64_t chunk)
{
	return &cc->buckets[(chunk * 0x9e3779b97f4a7c15ull) >> 52 & (cc->nbuckets - 1)];
}

static struct mp_chunk_entry *find(struct mp_chunkcache *cc, uint64_t chunk)
{
	struct mp_chunk_entry *e = *bucket_of(cc, chunk);

	while (e && e->chunk != chunk)
		e = e->hnext;
	return e;
}

static void unhash(struct mp_chunkcache *cc, struct mp_chunk_entry *e)
{
	struct mp_chunk_entry **p = bucket_of(cc, e->chunk);

	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	e->hashed = false;
}

static void idle_remove(struct mp_chunkcache *cc, struct mp_chunk_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		cc->idle_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		cc->idle_tail = e->prev;
	e->prev = e->next = NULL;
}

/* Idle entries out, first first, while more than `room` bytes would be held. */
static struct mp_chunk_entry *evict_to(struct mp_chunkcache *cc, size_t want)
{
	struct mp_chunk_entry *gone = NULL;

	while (cc->idle_head && cc->bytes + want > cc->budget) {
		struct mp_chunk_entry *e = cc->idle_head;

		idle_remove(cc, e);
		unhash(cc, e);
		cc->bytes -= cc->pool.size;
		e->hnext = gone;
		gone = e;
	}
	return gone;
}

static void free_list(struct mp_chunkcache *cc, struct mp_chunk_entry *e)
{
	while (e) {
		struct mp_chunk_entry *next = e->hnext;

		entry_free(cc, e);
		e = next;
	}
}

/* A held entry found in the table: HIT or PENDING.  Under lock. */
static enum mp_chunk_get take(struct mp_chunkcache *cc, struct mp_chunk_entry *e)
{
	if (e->refs++ == 0 && e->state == MP_CE_READY)
		idle_remove(cc, e);
	if (e->state == MP_CE_READY) {
		cc->hits++;
		return MP_CHUNK_HIT;
	}
	return MP_CHUNK_PENDING;
}

enum mp_chunk_get mp_chunkcache_get(struct mp_chunkcache *cc, uint64_t chunk, bool claim,
				    struct mp_chunk_entry **out)
{
	struct mp_chunk_entry *e, *mine, *gone;
	enum mp_chunk_get got;

	pthread_mutex_lock(&cc->lock);
	e = find(cc, chunk);
	got = e ? take(cc, e) : MP_CHUNK_NOMEM;
	pthread_mutex_unlock(&cc->lock);
	if (e || !claim) {
		*out = e;
		return got;
	}
	/* allocate outside the lock, then look again: another may have come */
	mine = calloc(1, sizeof *mine);
	if (mine)
		mine->buf = mp_bufpool_get(&cc->pool);
	if (!mine || !mine->buf) {
		free(mine);
		*out = NULL;
		return MP_CHUNK_NOMEM;
	}
	pthread_mutex_lock(&cc->lock);
	e = find(cc, chunk);
	if (e) {
		got = take(cc, e);
		gone = mine;
		mine->hnext = NULL;
	} else {
		gone = evict_to(cc, cc->pool.size);
		*mine = (struct mp_chunk_entry){ .chunk = chunk, .state = MP_CE_LOADING,
						 .refs = 1, .buf = mine->buf, .hashed = true };
		mine->hnext = *bucket_of(cc, chunk);
		*bucket_of(cc, chunk) = mine;
		cc->bytes += cc->pool.size;
		cc->misses++;
		e = mine;
		got = MP_CHUNK_CLAIMED;
	}
	pthread_mutex_unlock(&cc->lock);
	free_list(cc, gone);
	*out = e;
	return got;
}

enum mp_chunk_entry_state mp_chunkcache_wait(struct mp_chunkcache *cc,
					     struct mp_chunk_entry *e)
{
	enum mp_chunk_entry_state s;

	pthread_mutex_lock(&cc->lock);
	while (e->state == MP_CE_LOADING)
		pthread_cond_wait(&cc->settled, &cc->lock);
	s = e->state;
	pthread_mutex_unlock(&cc->lock);
	return s;
}

void mp_chunkcache_settle(struct mp_chunkcache *cc, struct mp_chunk_entry *e,
			  enum mp_chunk_entry_state state)
{
	pthread_mutex_lock(&cc->lock);
	e->state = state;
	if (state != MP_CE_READY)
		unhash(cc, e);
	pthread_cond_broadcast(&cc->settled);
	pthread_mutex_unlock(&cc->lock);
}

/* A released READY entry joins the idle list: served-out ones go first. */
static void make_idle(struct mp_chunkcache *cc, struct mp_chunk_entry *e)
{
	if (e->served >= e->len && cc->idle_head) {
		e->next = cc->idle_head;
		cc->idle_head->prev = e;
		cc->idle_head = e;
		return;
	}
	e->prev = cc->idle_tail;
	if (cc->idle_tail)
		cc->idle_tail->next = e;
	else
		cc->idle_head = e;
	cc->idle_tail = e;
}

bool mp_chunkcache_put(struct mp_chunkcache *cc, struct mp_chunk_entry *e,
		       uint64_t served)
{
	struct mp_chunk_entry *gone = NULL;
	bool whole;

	pthread_mutex_lock(&cc->lock);
	e->served += served;
	whole = e->served >= e->len && e->state == MP_CE_READY;
	if (--e->refs == 0) {
		if (e->hashed && e->state == MP_CE_READY) {
			make_idle(cc, e);
			gone = evict_to(cc, 0);
		} else {
			if (e->hashed)
				unhash(cc, e);
			cc->bytes -= cc->pool.size;
			e->hnext = NULL;
			gone = e;
		}
	}
	pthread_mutex_unlock(&cc->lock);
	free_list(cc, gone);
	return whole;
}

void mp_chunkcache_stats(struct mp_chunkcache *cc, size_t *bytes, uint64_t *hits,
			 uint64_t *misses)
{
	pthread_mutex_lock(&cc->lock);
	*bytes = cc->bytes;
	*hits = cc->hits;
	*misses = cc->misses;
	pthread_mutex_unlock(&cc->lock);
}
