/*
 * sealcheck.c - the chunk state machine of -o verify=seal (see sealcheck.h).
 */
#include "config.h"

#include "seal/sealcheck.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "pack/digest.h"

enum mp_err mp_sealcheck_init(struct mp_sealcheck *sc, const struct mp_seal *seal,
			      const struct mp_seal_layout *layout, int fd,
			      struct mp_error *err)
{
	unsigned i;

	memset(sc, 0, sizeof *sc);
	if (seal->chunk_count != layout->chunk_count || layout->chunk_count == 0)
		return mp_fail(err, MP_E_USAGE, "seal: %llu chunks, the layout %llu",
			       (unsigned long long)seal->chunk_count,
			       (unsigned long long)layout->chunk_count);
	sc->seal = seal;
	sc->layout = layout;
	sc->fd = fd;
	/* chunk_count is bounded by MP_SEAL_MAX_CHUNKS (the seal's parser) */
	sc->state = calloc((size_t)layout->chunk_count, sizeof *sc->state);
	if (!sc->state)
		return mp_fail(err, MP_E_NOMEM, "out of memory: %llu chunk states",
			       (unsigned long long)layout->chunk_count);
	for (i = 0; i < MP_SEALCHECK_STRIPES; i++) {
		if (pthread_mutex_init(&sc->lock[i], NULL) != 0)
			break;
		if (pthread_cond_init(&sc->done[i], NULL) != 0) {
			pthread_mutex_destroy(&sc->lock[i]);
			break;
		}
	}
	if (i < MP_SEALCHECK_STRIPES) {
		while (i-- > 0) {
			pthread_cond_destroy(&sc->done[i]);
			pthread_mutex_destroy(&sc->lock[i]);
		}
		free(sc->state);
		sc->state = NULL;
		return mp_fail(err, MP_E_NOMEM, "cannot create the chunk locks");
	}
	return MP_OK;
}

void mp_sealcheck_free(struct mp_sealcheck *sc)
{
	if (!sc->state)
		return;
	mp_sealcheck_ahead_stop(sc);
	for (unsigned i = 0; i < MP_SEALCHECK_STRIPES; i++) {
		pthread_cond_destroy(&sc->done[i]);
		pthread_mutex_destroy(&sc->lock[i]);
	}
	free(sc->state);
	sc->state = NULL;
}

enum mp_chunk_state mp_sealcheck_state(struct mp_sealcheck *sc, uint64_t chunk)
{
	uint8_t s = atomic_load_explicit(&sc->state[chunk], memory_order_acquire);

	return s == MP_CHUNK_BAD_UNREPORTED ? MP_CHUNK_BAD : (enum mp_chunk_state)s;
}

/* First and last chunk of [pos, pos + len). */
static void chunk_span(const struct mp_sealcheck *sc, uint64_t pos, size_t len,
		       uint64_t *first, uint64_t *last)
{
	*first = mp_seal_chunk_at(sc->layout, pos);
	*last = mp_seal_chunk_at(sc->layout, pos + len - 1);
}

bool mp_sealcheck_all_good(struct mp_sealcheck *sc, uint64_t pos, size_t len)
{
	uint64_t c, last;

	chunk_span(sc, pos, len, &c, &last);
	for (; c <= last; c++)
		if (mp_sealcheck_state(sc, c) != MP_CHUNK_GOOD)
			return false;
	return true;
}

/* Read all len bytes at at; false with errno set (EIO for an early end). */
static bool read_fully(int fd, unsigned char *buf, size_t len, uint64_t at)
{
	int e = mp_pread_all(fd, buf, len, at, NULL);

	if (e)
		errno = e == MP_READ_EOF ? EIO : e;
	return e == 0;
}

static void publish(struct mp_sealcheck *sc, uint64_t chunk, enum mp_chunk_state s)
{
	unsigned k = (unsigned)(chunk % MP_SEALCHECK_STRIPES);

	atomic_store_explicit(&sc->state[chunk], (uint8_t)s, memory_order_release);
	/* under the lock: a waiter between its check and its wait is not missed */
	pthread_mutex_lock(&sc->lock[k]);
	pthread_cond_broadcast(&sc->done[k]);
	pthread_mutex_unlock(&sc->lock[k]);
}

static enum mp_chunk_state wait_checked(struct mp_sealcheck *sc, uint64_t chunk)
{
	unsigned k = (unsigned)(chunk % MP_SEALCHECK_STRIPES);
	enum mp_chunk_state s;

	pthread_mutex_lock(&sc->lock[k]);
	while ((s = mp_sealcheck_state(sc, chunk)) == MP_CHUNK_CHECKING)
		pthread_cond_wait(&sc->done[k], &sc->lock[k]);
	pthread_mutex_unlock(&sc->lock[k]);
	return s;
}

/*
 * Hash chunk `c` (claimed: CHECKING), reading its bytes inside
 * [pos, pos + len) into buf and the rest through *scratch.  1: good,
 * 0: bad, -1: read error.
 */
static int hash_chunk(struct mp_sealcheck *sc, uint64_t c, uint64_t pos, size_t len,
		      unsigned char *buf, unsigned char **scratch)
{
	struct mp_seal_chunk ch;
	unsigned char got[MP_SHA256_LEN];
	struct mp_sha256 *h = mp_sha256_new();
	uint64_t at, end, req_end = pos + len;

	if (!h) {
		errno = ENOMEM;
		return -1;
	}
	mp_seal_chunk_get(sc->layout, c, &ch);
	end = ch.offset + ch.len;
	for (at = ch.offset; at < end;) {
		unsigned char *dst;
		uint64_t n;

		if (at >= pos && at < req_end) {
			n = (end < req_end ? end : req_end) - at;
			dst = buf + (at - pos);
		} else {
			n = (at < pos ? (end < pos ? end : pos) : end) - at;
			if (n > MP_SEALCHECK_SCRATCH)
				n = MP_SEALCHECK_SCRATCH;
			if (!*scratch)
				*scratch = malloc(MP_SEALCHECK_SCRATCH);
			if (!*scratch) {
				mp_sha256_free(h);
				errno = ENOMEM;
				return -1;
			}
			dst = *scratch;
		}
		if (!read_fully(sc->fd, dst, (size_t)n, at)) {
			mp_sha256_free(h);
			return -1;
		}
		mp_sha256_update(h, dst, (size_t)n);
		at += n;
	}
	mp_sha256_final(h, got);
	mp_sha256_free(h);
	atomic_fetch_add_explicit(&sc->count.bytes_hashed, ch.len, memory_order_relaxed);
	atomic_fetch_add_explicit(&sc->count.checked, 1, memory_order_relaxed);
	return mp_seal_digest_ok(sc->seal, c, got);
}

/*
 * Settle chunk c for a read of [pos, pos + len) into buf: wait while another
 * thread checks it, or claim and hash it here (*hashed then says so).
 */
static enum mp_sealread settle_chunk(struct mp_sealcheck *sc, uint64_t c, uint64_t pos,
				     size_t len, unsigned char *buf, unsigned char **scratch,
				     uint64_t *bad, bool *found_now, bool *hashed)
{
	for (;;) {
		uint8_t s = atomic_load_explicit(&sc->state[c], memory_order_acquire);
		int ok;

		if (s == MP_CHUNK_GOOD)
			return MP_SEALREAD_GOOD;
		if (s == MP_CHUNK_BAD || s == MP_CHUNK_BAD_UNREPORTED) {
			/* found ahead: the first reader reports it */
			*found_now = s == MP_CHUNK_BAD_UNREPORTED &&
				     atomic_compare_exchange_strong(&sc->state[c], &s,
								    (uint8_t)MP_CHUNK_BAD);
			*bad = c;
			return MP_SEALREAD_BAD;
		}
		if (s == MP_CHUNK_CHECKING) {
			wait_checked(sc, c);
			continue;
		}
		if (!atomic_compare_exchange_strong(&sc->state[c], &s, (uint8_t)MP_CHUNK_CHECKING))
			continue;
		ok = hash_chunk(sc, c, pos, len, buf, scratch);
		if (ok < 0) {
			/* not the chunk's fault: the next read tries again */
			publish(sc, c, MP_CHUNK_UNCHECKED);
			return MP_SEALREAD_IO;
		}
		publish(sc, c, ok ? MP_CHUNK_GOOD : MP_CHUNK_BAD);
		if (!ok) {
			atomic_fetch_add_explicit(&sc->count.failed, 1, memory_order_relaxed);
			*bad = c;
			*found_now = true;
			return MP_SEALREAD_BAD;
		}
		*hashed = true;
		return MP_SEALREAD_GOOD;
	}
}

/* One bit per chunk of [first, last]: the chunks this read hashed into buf. */
static bool is_mine(const uint64_t *mine, uint64_t i)
{
	return mine[i / 64] & (1ull << (i % 64));
}

/* The parts of chunks [first, last] checked by others (or before) that the
 * read wants, from the file. */
static enum mp_sealread fill_others(struct mp_sealcheck *sc, uint64_t first, uint64_t last,
				    const uint64_t *mine, uint64_t pos, size_t len,
				    unsigned char *buf)
{
	for (uint64_t c = first; c <= last; c++) {
		struct mp_seal_chunk ch;
		uint64_t a, b;

		if (is_mine(mine, c - first))
			continue;
		mp_seal_chunk_get(sc->layout, c, &ch);
		a = ch.offset > pos ? ch.offset : pos;
		b = ch.offset + ch.len < pos + len ? ch.offset + ch.len : pos + len;
		if (!read_fully(sc->fd, buf + (a - pos), (size_t)(b - a), a))
			return MP_SEALREAD_IO;
	}
	return MP_SEALREAD_FILLED;
}

enum mp_sealread mp_sealcheck_read(struct mp_sealcheck *sc, uint64_t pos, size_t len,
				   unsigned char *buf, uint64_t *bad, bool *found_now)
{
	uint64_t first, last;
	unsigned char *scratch = NULL;
	bool any_mine = false;
	enum mp_sealread rc = MP_SEALREAD_GOOD;
	uint64_t *mine;

	*found_now = false;
	if (mp_sealcheck_all_good(sc, pos, len))
		return MP_SEALREAD_GOOD;
	chunk_span(sc, pos, len, &first, &last);
	/* a request spans a handful of chunks */
	mine = calloc((size_t)((last - first) / 64 + 1), sizeof *mine);
	if (!mine) {
		errno = ENOMEM;
		return MP_SEALREAD_IO;
	}
	for (uint64_t c = first; c <= last && rc == MP_SEALREAD_GOOD; c++) {
		bool hashed = false;

		rc = settle_chunk(sc, c, pos, len, buf, &scratch, bad, found_now, &hashed);
		if (hashed) {
			mine[(c - first) / 64] |= 1ull << ((c - first) % 64);
			any_mine = true;
		}
	}
	free(scratch);
	if (rc == MP_SEALREAD_GOOD && any_mine)
		rc = fill_others(sc, first, last, mine, pos, len, buf);
	free(mine);
	return rc;
}

/*
 * An ahead thread: take the next chunk of [from, to), claim it if nobody
 * has, hash it whole through a scratch buffer.  A hint may move the window
 * at any time; the thread picks up the new one at its next chunk.
 */
static void *ahead_main(void *arg)
{
	struct mp_sealcheck *sc = arg;
	struct mp_sealahead *a = &sc->ahead;
	unsigned char *scratch = NULL;

	pthread_mutex_lock(&a->lock);
	while (!a->stop) {
		uint8_t s = MP_CHUNK_UNCHECKED;
		uint64_t c;
		int ok;

		if (a->from >= a->to) {
			pthread_cond_wait(&a->wake, &a->lock);
			continue;
		}
		c = a->from++;
		pthread_mutex_unlock(&a->lock);
		if (atomic_compare_exchange_strong(&sc->state[c], &s,
						   (uint8_t)MP_CHUNK_CHECKING)) {
			ok = hash_chunk(sc, c, 0, 0, NULL, &scratch);
			if (ok > 0) {
				atomic_fetch_add_explicit(&sc->count.checked_ahead, 1,
							  memory_order_relaxed);
				publish(sc, c, MP_CHUNK_GOOD);
			} else if (ok == 0) {
				atomic_fetch_add_explicit(&sc->count.failed, 1,
							  memory_order_relaxed);
				publish(sc, c, MP_CHUNK_BAD_UNREPORTED);
			} else {
				/* a read error is the reader's to meet and report */
				publish(sc, c, MP_CHUNK_UNCHECKED);
			}
		}
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	free(scratch);
	return NULL;
}

static void ahead_join(struct mp_sealahead *a)
{
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_broadcast(&a->wake);
	pthread_mutex_unlock(&a->lock);
	while (a->threads > 0)
		pthread_join(a->thread[--a->threads], NULL);
	pthread_cond_destroy(&a->wake);
	pthread_mutex_destroy(&a->lock);
}

enum mp_err mp_sealcheck_ahead_start(struct mp_sealcheck *sc, unsigned window,
				     unsigned threads, struct mp_error *err)
{
	struct mp_sealahead *a = &sc->ahead;
	int rc = 0;

	if (window == 0 || atomic_load(&a->running))
		return MP_OK;
	if (threads < 1 || threads > MP_SEALCHECK_AHEAD_THREADS_MAX)
		return mp_fail(err, MP_E_USAGE, "%u seal-ahead threads (1 to %u)", threads,
			       MP_SEALCHECK_AHEAD_THREADS_MAX);
	if (pthread_mutex_init(&a->lock, NULL) != 0)
		return mp_fail(err, MP_E_NOMEM, "cannot create the seal-ahead lock");
	if (pthread_cond_init(&a->wake, NULL) != 0) {
		pthread_mutex_destroy(&a->lock);
		return mp_fail(err, MP_E_NOMEM, "cannot create the seal-ahead lock");
	}
	a->window = window;
	a->from = a->to = 0;
	a->stop = false;
	for (a->threads = 0; a->threads < threads && rc == 0; a->threads++) {
		rc = pthread_create(&a->thread[a->threads], NULL, ahead_main, sc);
		if (rc != 0)
			break;
	}
	if (rc != 0) {
		ahead_join(a);
		return mp_fail(err, MP_E_NOMEM, "cannot start the seal-ahead threads: %s",
			       strerror(rc));
	}
	atomic_store(&a->running, true);
	return MP_OK;
}

void mp_sealcheck_ahead_stop(struct mp_sealcheck *sc)
{
	struct mp_sealahead *a = &sc->ahead;

	if (!atomic_load(&a->running))
		return;
	ahead_join(a);
	atomic_store(&a->running, false);
}

void mp_sealcheck_ahead_hint(struct mp_sealcheck *sc, uint64_t pos, size_t len)
{
	struct mp_sealahead *a = &sc->ahead;
	uint64_t next, far, count = sc->layout->chunk_count;

	if (len == 0 || !atomic_load_explicit(&a->running, memory_order_acquire))
		return;
	next = mp_seal_chunk_at(sc->layout, pos + len - 1) + 1;
	if (next >= count)
		return;
	far = next + a->window - 1 < count ? next + a->window - 1 : count - 1;
	/* the usual case once the thread is ahead: both ends claimed */
	if (atomic_load_explicit(&sc->state[next], memory_order_relaxed) != MP_CHUNK_UNCHECKED &&
	    atomic_load_explicit(&sc->state[far], memory_order_relaxed) != MP_CHUNK_UNCHECKED)
		return;
	pthread_mutex_lock(&a->lock);
	if (a->from != next || a->to != far + 1) {
		a->from = next;
		a->to = far + 1;
		pthread_cond_broadcast(&a->wake);
	}
	pthread_mutex_unlock(&a->lock);
}
