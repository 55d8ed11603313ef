/*
 * sealcheck.c - every fill of a sealed pack checked (see sealcheck.h).
 *
 * A fill takes one reference on the cache entry of every chunk its range
 * touches, without waiting (mp_chunkcache_get); the entries it created are
 * its own to load.  It loads them (with the workers, when there are two or
 * more), and only then waits for the entries others are loading.  A
 * thread never waits while it holds an entry it has not loaded, so two
 * fills never wait for each other.
 */
#include "config.h"

#include "seal/sealcheck.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pack/digest.h"

enum { NOT_BAD, BAD_UNREPORTED, BAD_REPORTED };

/* A request's loads, shared with the workers. */
struct mp_sealbatch {
	struct mp_chunk_entry **entries;
	unsigned n;
	atomic_uint next;            /* the next entry to take */
	enum mp_fill_mode mode;
	unsigned users;              /* workers inside it, under work.lock */
	bool queued;
	struct mp_sealbatch *qnext;
};

enum mp_err mp_sealcheck_init(struct mp_sealcheck *sc, const struct mp_seal *seal,
			      const struct mp_seal_layout *layout,
			      struct mp_storage *storage, size_t cache_budget,
			      struct mp_error *err)
{
	enum mp_err rc;

	memset(sc, 0, sizeof *sc);
	if (seal->chunk_count != layout->chunk_count || layout->chunk_count == 0)
		return mp_fail(err, MP_E_USAGE, "seal: %llu chunks, the layout %llu",
			       (unsigned long long)seal->chunk_count,
			       (unsigned long long)layout->chunk_count);
	sc->seal = seal;
	sc->layout = layout;
	sc->storage = storage;
	/* chunk_count is bounded: by MP_SEAL_MAX_CHUNKS (the seal's parser), or for
	 * verify=entries by the index (entryseal.h) */
	sc->bad = calloc((size_t)layout->chunk_count, sizeof *sc->bad);
	sc->served = calloc((size_t)layout->chunk_count, sizeof *sc->served);
	if (!sc->bad || !sc->served) {
		free(sc->bad);
		free(sc->served);
		sc->bad = NULL;
		sc->served = NULL;
		return mp_fail(err, MP_E_NOMEM, "out of memory: %llu chunk states",
			       (unsigned long long)layout->chunk_count);
	}
	/* a chunk read direct is rounded out to a page at each end; no buffer
	 * larger than the longest chunk (a role of verify=entries is often
	 * little more than half its power of two) */
	rc = mp_chunkcache_init(&sc->cache, (size_t)mp_seal_layout_longest(layout) +
				2 * MP_BUF_ALIGN, cache_budget, err);
	if (rc != MP_OK) {
		free(sc->bad);
		free(sc->served);
		sc->bad = NULL;
		sc->served = NULL;
	}
	return rc;
}

void mp_sealcheck_free(struct mp_sealcheck *sc)
{
	if (!sc->bad)
		return;
	mp_sealcheck_stop(sc);
	mp_chunkcache_destroy(&sc->cache);
	free(sc->bad);
	free(sc->served);
	sc->bad = NULL;
	sc->served = NULL;
}

bool mp_sealcheck_is_bad(const struct mp_sealcheck *sc, uint64_t chunk)
{
	return atomic_load_explicit(&sc->bad[chunk], memory_order_acquire) != NOT_BAD;
}

/*
 * Read entry e's chunk from storage, hash it, compare, settle the entry.
 * A chunk that does not match is marked bad, not yet reported.
 */
static void load_entry(struct mp_sealcheck *sc, struct mp_chunk_entry *e,
		       enum mp_fill_mode mode, bool ahead)
{
	struct mp_seal_chunk ch;
	unsigned char got[MP_SHA256_LEN];
	bool ok, again = sc->refetch != NULL;

	mp_seal_chunk_get(sc->layout, e->chunk, &ch);
	e->len = (size_t)ch.len;
	for (;;) {
		/* a chunk not local yet (a mount from mirrors) is fetched first */
		if ((sc->want && sc->want(sc->want_arg, e->chunk, !ahead) != 0) ||
		    mp_storage_read(sc->storage, mode, ch.offset, e->len, e->buf,
				    &e->data) != 0) {
			mp_chunkcache_settle(&sc->cache, e, MP_CE_IOERR);
			return;
		}
		mp_sha256_buf(e->data, e->len, got);
		ok = mp_seal_digest_ok(sc->seal, e->chunk, got);
		atomic_fetch_add_explicit(&sc->count.bytes_hashed, ch.len, memory_order_relaxed);
		atomic_fetch_add_explicit(&sc->count.checked, 1, memory_order_relaxed);
		if (ahead)
			atomic_fetch_add_explicit(&sc->count.checked_ahead, 1,
						  memory_order_relaxed);
		/* once: bytes that fail again are not storage's one-off loss */
		if (ok || !again || !sc->refetch(sc->want_arg, e->chunk))
			break;
		again = false;
	}
	if (!ok) {
		uint8_t none = NOT_BAD;

		atomic_fetch_add_explicit(&sc->count.failed, 1, memory_order_relaxed);
		atomic_compare_exchange_strong(&sc->bad[e->chunk], &none, BAD_UNREPORTED);
	}
	mp_chunkcache_settle(&sc->cache, e, ok ? MP_CE_READY : MP_CE_BAD);
}

/* Take loads from a batch until none is left. */
static void batch_work(struct mp_sealcheck *sc, struct mp_sealbatch *b)
{
	unsigned i;

	while ((i = atomic_fetch_add(&b->next, 1)) < b->n)
		load_entry(sc, b->entries[i], b->mode, false);
}

/* Under work.lock. */
static void batch_unqueue(struct mp_sealwork *w, struct mp_sealbatch *b)
{
	struct mp_sealbatch **p = &w->batches;

	if (!b->queued)
		return;
	while (*p != b)
		p = &(*p)->qnext;
	*p = b->qnext;
	b->queued = false;
}

/*
 * Load the n claimed entries: with workers, offer them all, take from the
 * same batch here, then wait until no worker is still inside it.
 */
static void load_claimed(struct mp_sealcheck *sc, struct mp_chunk_entry **claimed,
			 unsigned n, enum mp_fill_mode mode)
{
	struct mp_sealwork *w = &sc->work;
	struct mp_sealbatch b = { .entries = claimed, .n = n, .mode = mode };

	if (n < 2 || !atomic_load_explicit(&w->running, memory_order_acquire)) {
		batch_work(sc, &b);
		return;
	}
	pthread_mutex_lock(&w->lock);
	b.queued = true;
	b.qnext = NULL;
	{
		struct mp_sealbatch **p = &w->batches;

		while (*p)
			p = &(*p)->qnext;
		*p = &b;
	}
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
	batch_work(sc, &b);
	pthread_mutex_lock(&w->lock);
	batch_unqueue(w, &b);
	while (b.users > 0)
		pthread_cond_wait(&w->left, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

static void fill_free(struct mp_sealfill *f)
{
	if (f->iov != f->iov_inline)
		free(f->iov);
	if (f->held != f->held_inline)
		free(f->held);
	f->iov = NULL;
	f->held = NULL;
	f->niov = f->nheld = 0;
}

/* Room for n chunks: inline for the usual few, else allocated. */
static bool fill_alloc(struct mp_sealfill *f, uint64_t n)
{
	f->niov = f->nheld = 0;
	if (n <= MP_SEALFILL_INLINE) {
		f->iov = f->iov_inline;
		f->held = f->held_inline;
		return true;
	}
	f->iov = calloc((size_t)n, sizeof *f->iov);
	f->held = calloc((size_t)n, sizeof *f->held);
	if (f->iov && f->held)
		return true;
	free(f->iov);
	free(f->held);
	f->iov = NULL;
	f->held = NULL;
	return false;
}

void mp_sealcheck_release(struct mp_sealcheck *sc, struct mp_sealfill *f)
{
	for (unsigned i = 0; i < f->nheld; i++) {
		uint64_t chunk = f->held[i]->chunk;

		if (mp_chunkcache_put(&sc->cache, f->held[i],
				      i < f->niov ? f->iov[i].iov_len : 0))
			atomic_store_explicit(&sc->served[chunk], 1, memory_order_relaxed);
	}
	fill_free(f);
}

/* A bad chunk in [first, last]: the first, and whether this caller reports it. */
static bool find_bad(struct mp_sealcheck *sc, uint64_t first, uint64_t last,
		     uint64_t *bad, bool *found_now)
{
	for (uint64_t c = first; c <= last; c++) {
		uint8_t s = atomic_load_explicit(&sc->bad[c], memory_order_acquire);

		if (s == NOT_BAD)
			continue;
		*bad = c;
		*found_now = s == BAD_UNREPORTED &&
			     atomic_compare_exchange_strong(&sc->bad[c], &s, BAD_REPORTED);
		return true;
	}
	return false;
}

/*
 * Hold an entry of every chunk of [first, last], the new ones (to load)
 * listed in claimed.  False when out of memory (what was held is released).
 */
static bool hold_all(struct mp_sealcheck *sc, uint64_t first, uint64_t last,
		     struct mp_sealfill *f, struct mp_chunk_entry **claimed,
		     unsigned *nclaimed)
{
	*nclaimed = 0;
	for (uint64_t c = first; c <= last; c++) {
		struct mp_chunk_entry *e;
		enum mp_chunk_get g = mp_chunkcache_get(&sc->cache, c, true, &e);

		if (g == MP_CHUNK_NOMEM) {
			/* those claimed but not loaded must not keep anyone waiting */
			for (unsigned i = 0; i < *nclaimed; i++)
				mp_chunkcache_settle(&sc->cache, claimed[i], MP_CE_IOERR);
			mp_sealcheck_release(sc, f);
			errno = ENOMEM;
			return false;
		}
		f->held[f->nheld++] = e;
		if (g == MP_CHUNK_CLAIMED)
			claimed[(*nclaimed)++] = e;
	}
	return true;
}

/* Wait for every held entry; the worst outcome (BAD before IO) wins. */
static enum mp_sealread settle_all(struct mp_sealcheck *sc, struct mp_sealfill *f)
{
	enum mp_sealread rc = MP_SEALREAD_FILLED;

	for (unsigned i = 0; i < f->nheld; i++) {
		enum mp_chunk_entry_state s = mp_chunkcache_wait(&sc->cache, f->held[i]);

		if (s == MP_CE_BAD)
			rc = MP_SEALREAD_BAD;
		else if (s == MP_CE_IOERR && rc == MP_SEALREAD_FILLED)
			rc = MP_SEALREAD_IO;
	}
	if (rc == MP_SEALREAD_IO)
		errno = EIO;
	return rc;
}

/* The parts of the held chunks inside [pos, pos + len), in order. */
static void make_iov(struct mp_sealcheck *sc, uint64_t pos, size_t len,
		     struct mp_sealfill *f)
{
	uint64_t end = pos + len;

	for (unsigned i = 0; i < f->nheld; i++) {
		const struct mp_chunk_entry *e = f->held[i];
		struct mp_seal_chunk ch;
		uint64_t a, b;

		mp_seal_chunk_get(sc->layout, e->chunk, &ch);
		a = ch.offset > pos ? ch.offset : pos;
		b = ch.offset + ch.len < end ? ch.offset + ch.len : end;
		f->iov[i].iov_base = (void *)(e->data + (a - ch.offset));
		f->iov[i].iov_len = (size_t)(b - a);
	}
	f->niov = f->nheld;
	atomic_fetch_add_explicit(&sc->count.bytes_served, len, memory_order_relaxed);
}

enum mp_sealread mp_sealcheck_fill(struct mp_sealcheck *sc, uint64_t pos, size_t len,
				   enum mp_fill_mode mode, struct mp_sealfill *f,
				   uint64_t *bad, bool *found_now)
{
	uint64_t first = mp_seal_chunk_at(sc->layout, pos);
	uint64_t last = mp_seal_chunk_at(sc->layout, pos + len - 1);
	struct mp_chunk_entry *claimed_inline[MP_SEALFILL_INLINE], **claimed;
	unsigned nclaimed;
	enum mp_sealread rc;

	*found_now = false;
	if (find_bad(sc, first, last, bad, found_now))
		return MP_SEALREAD_BAD;
	if (!fill_alloc(f, last - first + 1)) {
		errno = ENOMEM;
		return MP_SEALREAD_IO;
	}
	claimed = f->held == f->held_inline ? claimed_inline
					    : calloc((size_t)(last - first + 1), sizeof *claimed);
	if (!claimed) {
		fill_free(f);
		errno = ENOMEM;
		return MP_SEALREAD_IO;
	}
	if (!hold_all(sc, first, last, f, claimed, &nclaimed)) {
		if (claimed != claimed_inline)
			free(claimed);
		errno = ENOMEM;
		return MP_SEALREAD_IO;
	}
	load_claimed(sc, claimed, nclaimed, mode);
	if (claimed != claimed_inline)
		free(claimed);
	rc = settle_all(sc, f);
	if (rc == MP_SEALREAD_FILLED) {
		make_iov(sc, pos, len, f);
		return rc;
	}
	mp_sealcheck_release(sc, f);
	if (rc == MP_SEALREAD_BAD && !find_bad(sc, first, last, bad, found_now))
		*bad = first; /* cannot happen: a BAD entry marks its chunk first */
	return rc;
}

/* ---- the workers ---------------------------------------------------------- */

/* Check one chunk ahead of a reader, unless it is there or on its way. */
static void check_ahead(struct mp_sealcheck *sc, uint64_t chunk, enum mp_fill_mode mode)
{
	struct mp_chunk_entry *e;

	if (mp_sealcheck_is_bad(sc, chunk))
		return;
	/* a chunk not local is only asked for: claimed here, a reader that
	 * came for it meanwhile would share a load that cannot succeed */
	if (sc->want && sc->want(sc->want_arg, chunk, false) != 0)
		return;
	switch (mp_chunkcache_get(&sc->cache, chunk, true, &e)) {
	case MP_CHUNK_CLAIMED:
		load_entry(sc, e, mode, true);
		/* fall through */
	case MP_CHUNK_HIT:
	case MP_CHUNK_PENDING:
		mp_chunkcache_put(&sc->cache, e, 0);
		break;
	case MP_CHUNK_NOMEM:
		break;
	}
}

static uint64_t ahead_now(const struct mp_sealcheck *sc);

/*
 * Whether an ahead chunk of stream s is no longer worth checking: the
 * reader has read past it (its own request loaded it, or is loading it),
 * it was handed out whole before, or more readers came since it was
 * queued and it lies beyond s's share now (it is queued again if s gets
 * that far).  Under work.lock.
 */
static bool ahead_stale(const struct mp_sealcheck *sc, struct mp_sealstream *s,
			uint64_t chunk)
{
	uint64_t at = s->next > 0 ? mp_seal_chunk_at(sc->layout, s->next - 1) : 0;

	if (at > chunk || atomic_load_explicit(&sc->served[chunk], memory_order_relaxed))
		return true;
	if (chunk <= at + ahead_now(sc))
		return false;
	if (s->queued_to > chunk)
		s->queued_to = chunk;
	return true;
}

/* One piece of work, under work.lock (dropped while it is done). */
static bool work_once(struct mp_sealcheck *sc)
{
	struct mp_sealwork *w = &sc->work;
	struct mp_sealbatch *b = w->batches;

	if (b) {
		b->users++;
		/* everything taken: the next worker need not look at it */
		if (atomic_load(&b->next) + 1 >= b->n)
			batch_unqueue(w, b);
		pthread_mutex_unlock(&w->lock);
		batch_work(sc, b);
		pthread_mutex_lock(&w->lock);
		b->users--;
		pthread_cond_broadcast(&w->left);
		return true;
	}
	if (w->ahead_len > 0) {
		unsigned i = w->ahead_head;
		uint64_t chunk = w->ahead[i];
		enum mp_fill_mode mode = w->ahead_mode[i];
		bool passed = ahead_stale(sc, &w->streams[w->ahead_stream[i]], chunk);

		w->ahead_head = (i + 1) % MP_SEALCHECK_AHEAD_QUEUE;
		w->ahead_len--;
		pthread_mutex_unlock(&w->lock);
		if (!passed)
			check_ahead(sc, chunk, mode);
		pthread_mutex_lock(&w->lock);
		return true;
	}
	return false;
}

static void *worker_main(void *arg)
{
	struct mp_sealcheck *sc = arg;
	struct mp_sealwork *w = &sc->work;

	pthread_mutex_lock(&w->lock);
	while (!w->stop)
		if (!work_once(sc))
			pthread_cond_wait(&w->wake, &w->lock);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void work_join(struct mp_sealwork *w)
{
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
	while (w->threads > 0)
		pthread_join(w->thread[--w->threads], NULL);
	pthread_cond_destroy(&w->left);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
}

enum mp_err mp_sealcheck_start(struct mp_sealcheck *sc, unsigned threads, unsigned window,
			       struct mp_error *err)
{
	struct mp_sealwork *w = &sc->work;
	int rc = 0;

	if (atomic_load(&w->running))
		return MP_OK;
	if (threads < 1 || threads > MP_SEALCHECK_THREADS_MAX)
		return mp_fail(err, MP_E_USAGE, "%u seal threads (1 to %u)", threads,
			       MP_SEALCHECK_THREADS_MAX);
	memset(w, 0, sizeof *w);
	if (pthread_mutex_init(&w->lock, NULL) != 0)
		return mp_fail(err, MP_E_NOMEM, "cannot create the seal workers' lock");
	if (pthread_cond_init(&w->wake, NULL) != 0 || pthread_cond_init(&w->left, NULL) != 0) {
		pthread_mutex_destroy(&w->lock);
		return mp_fail(err, MP_E_NOMEM, "cannot create the seal workers' lock");
	}
	w->window = window;
	for (w->threads = 0; w->threads < threads; w->threads++) {
		rc = pthread_create(&w->thread[w->threads], NULL, worker_main, sc);
		if (rc != 0)
			break;
	}
	if (rc != 0) {
		work_join(w);
		return mp_fail(err, MP_E_NOMEM, "cannot start the seal workers: %s",
			       strerror(rc));
	}
	atomic_store(&w->running, true);
	return MP_OK;
}

void mp_sealcheck_stop(struct mp_sealcheck *sc)
{
	if (!atomic_load(&sc->work.running))
		return;
	atomic_store(&sc->work.running, false);
	work_join(&sc->work);
}

/*
 * The stream a read at pos continues, or NULL (a new stream then takes the
 * least recently used slot).  Under work.lock.
 */
static struct mp_sealstream *stream_of(struct mp_sealwork *w, uint64_t pos, uint64_t next)
{
	struct mp_sealstream *s, *oldest = &w->streams[0];

	w->tick++;
	for (unsigned i = 0; i < MP_SEALCHECK_STREAMS; i++) {
		s = &w->streams[i];
		if (s->used && s->next == pos) {
			s->next = next;
			s->used = w->tick;
			return s;
		}
		if (s->used < oldest->used)
			oldest = s;
	}
	*oldest = (struct mp_sealstream){ .next = next, .used = w->tick };
	return NULL;
}

/* A stream read lately: in the last STREAM_RECENT hints; one with chunks
 * checked ahead of it and not yet read, in the last STREAM_HOLDING. */
#define STREAM_RECENT (2 * MP_SEALCHECK_STREAMS)
#define STREAM_HOLDING (16 * MP_SEALCHECK_STREAMS)

/*
 * The readers that may be checked ahead of, lately: every stream seen,
 * followed yet or not, so that of several readers starting together the
 * first does not take the whole cache; and one that waits (a loaded
 * machine) while chunks checked ahead of it are in the cache, so that the
 * others do not take its share and evict them.  Under work.lock.
 */
static unsigned active_streams(const struct mp_sealcheck *sc)
{
	const struct mp_sealwork *w = &sc->work;
	unsigned n = 0;

	for (unsigned i = 0; i < MP_SEALCHECK_STREAMS; i++) {
		const struct mp_sealstream *s = &w->streams[i];
		uint64_t age = w->tick - s->used;

		if (s->used && (age < STREAM_RECENT ||
				(age < STREAM_HOLDING && s->next > 0 &&
				 s->queued_to > mp_seal_chunk_at(sc->layout, s->next - 1) + 1)))
			n++;
	}
	return n;
}

/*
 * Chunks to check ahead of one of `active` readers: their share of what
 * the cache holds, less three (the chunk a reader's last request ended in,
 * the one before it that request may have begun in, and one its requests
 * in flight past that may be in), and at most -o seal_ahead.  A cache
 * over its budget evicts the oldest idle chunk first, which would be the
 * one checked ahead that the reader wants next.
 */
static uint64_t ahead_window(const struct mp_sealcheck *sc, unsigned active)
{
	uint64_t share = sc->cache.budget / sc->cache.pool.size / (active ? active : 1);

	share = share > 3 ? share - 3 : 0;
	return share < sc->work.window ? share : sc->work.window;
}

/* How far ahead of each reader to check now.  Under work.lock. */
static uint64_t ahead_now(const struct mp_sealcheck *sc)
{
	return ahead_window(sc, active_streams(sc));
}

/* Queue [from, to) for stream s, past what is queued already.  Under work.lock. */
static void queue_ahead(struct mp_sealwork *w, struct mp_sealstream *s, uint64_t from,
			uint64_t to, enum mp_fill_mode mode)
{
	if (s->queued_to > from)
		from = s->queued_to;
	for (; from < to && w->ahead_len < MP_SEALCHECK_AHEAD_QUEUE; from++) {
		unsigned i = (w->ahead_head + w->ahead_len++) % MP_SEALCHECK_AHEAD_QUEUE;

		w->ahead[i] = from;
		w->ahead_mode[i] = mode;
		w->ahead_stream[i] = (unsigned char)(s - w->streams);
	}
	if (from > s->queued_to)
		s->queued_to = from;
	pthread_cond_signal(&w->wake);
}

void mp_sealcheck_ahead_hint(struct mp_sealcheck *sc, uint64_t pos, size_t len,
			     uint64_t end, enum mp_fill_mode mode)
{
	struct mp_sealwork *w = &sc->work;
	struct mp_sealstream *s;
	uint64_t from, to;

	/* what is checked ahead waits in the cache: too small, no point */
	if (len == 0 || end <= pos + len || !w->window || ahead_window(sc, 1) == 0 ||
	    !atomic_load_explicit(&w->running, memory_order_acquire))
		return;
	from = mp_seal_chunk_at(sc->layout, pos + len - 1) + 1;
	to = mp_seal_chunk_at(sc->layout, end - 1) + 1;
	pthread_mutex_lock(&w->lock);
	s = stream_of(w, pos, pos + len);
	if (s) {
		uint64_t most = from + ahead_now(sc);

		queue_ahead(w, s, from, to < most ? to : most, mode);
	}
	pthread_mutex_unlock(&w->lock);
}
