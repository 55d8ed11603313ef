/*
 * sealhash.c - hashing and checking a pack's chunks on threads (seal.h's
 * mp_seal_hash_file(), mp_seal_check_file() and their kin): without the
 * whole-file digest each thread reads its own runs of chunks; with it, one
 * reader fills a ring of windows that a digest thread and the workers
 * share.  The layout it walks is seal.c's.
 */
#include "config.h"

#include "seal/seal.h"
#include "seal/seal_internal.h"

#include "base/file.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes a hashing thread reads at once: a core's L2 here, as readahead.h. */
#define SEAL_WINDOW (4u << 20)
#define SEAL_MAX_JOBS 64u

/* ---- hashing a file on many threads ---- */

static unsigned pick_jobs(unsigned jobs)
{
	if (jobs == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		jobs = n > 0 ? (unsigned)n : 1;
	}
	return jobs > SEAL_MAX_JOBS ? SEAL_MAX_JOBS : jobs;
}

/*
 * Without the whole-file digest every thread reads and hashes its own
 * chunks: threads claim runs of whole chunks (up to SEAL_WINDOW bytes, or
 * one larger chunk read in SEAL_WINDOW pieces) from a shared counter.
 */
/* The first failure of a job shared by threads, and the flag that stops
 * the others. */
struct first_fail {
	bool stop;
	enum mp_err rc;
	struct mp_error err; /* when rc is not MP_OK */
};

/* Keep e if it is the first failure, and stop every thread of the job. */
static void fail_first(struct first_fail *f, pthread_mutex_t *lock, pthread_cond_t *cond,
		       const struct mp_error *e)
{
	pthread_mutex_lock(lock);
	if (f->rc == MP_OK) {
		f->rc = e->code;
		f->err = *e;
	}
	f->stop = true;
	pthread_cond_broadcast(cond);
	pthread_mutex_unlock(lock);
}

struct par {
	int fd;
	const char *what;
	const struct mp_seal_layout *l;
	const struct mp_seal *s;            /* checking, or NULL */
	unsigned char (*digests)[MP_SHA256_LEN]; /* hashing, or NULL */
	mp_seal_bad_fn bad;
	void *bad_arg;
	const struct mp_cancel *cancel; /* a stop asked ends the claims */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t next;       /* next chunk to claim */
	uint64_t done_bytes;
	uint64_t bad_count, first_bad;
	unsigned running;    /* workers not yet finished */
	bool io_failed;      /* a chunk could not be read */
	bool roles_only;     /* checking the roles' chunks alone */
	struct first_fail f;
};

static void par_fail(struct par *p, const struct mp_error *e)
{
	fail_first(&p->f, &p->lock, &p->cond, e);
}

static void par_bad(struct par *p, uint64_t chunk, bool io)
{
	pthread_mutex_lock(&p->lock);
	if (p->bad_count == 0 || chunk < p->first_bad)
		p->first_bad = chunk;
	p->bad_count++;
	if (io)
		p->io_failed = true;
	if (p->bad)
		p->bad(chunk, p->bad_arg);
	pthread_mutex_unlock(&p->lock);
}

/* Hash one chunk by pieces into d, reading through buf. */
static enum mp_err hash_chunk_pieces(const struct par *p, struct mp_sha256 *h, unsigned char *buf,
				     const struct mp_seal_chunk *ch, unsigned char d[MP_SHA256_LEN],
				     struct mp_error *e)
{
	for (uint64_t off = 0; off < ch->len;) {
		size_t n = ch->len - off < SEAL_WINDOW ? (size_t)(ch->len - off) : SEAL_WINDOW;
		enum mp_err rc = mp_pread_full(p->fd, buf, n, ch->offset + off, "pack", p->what,
					       MP_E_PACK_IO, e);

		if (rc != MP_OK) {
			mp_sha256_final(h, d); /* resets h for the next chunk */
			return rc;
		}
		mp_sha256_update(h, buf, n);
		off += n;
	}
	mp_sha256_final(h, d);
	return MP_OK;
}

/* A run of whole chunks [first, last) over the bytes [start, end). */
struct par_run {
	uint64_t first, last, start, end;
};

/*
 * What one thread knows of the file's holes: [from, to) has no data
 * (from == to when none is known), and the digests of zeros it made.  The
 * claims go up the file, so one lseek serves every run in a hole: a sparse
 * pack (a full geometry made to test with, its payload a hole) seals in
 * the time of its data.
 */
struct holes {
	uint64_t from, to;
	struct mp_seal_zeros zeros;
};

/* Whether [start, end) of the file lies in a hole. */
static bool in_hole(const struct par *p, struct holes *z, uint64_t start, uint64_t end)
{
	if (start < z->from || end > z->to) {
		z->from = start;
		z->to = mp_file_hole_end(p->fd, start);
	}
	return end <= z->to;
}

/* A stop asked: the job's failure, every thread stopped.  Called with
 * p->lock held. */
static void par_stop_asked(struct par *p)
{
	struct mp_error e;

	if (p->f.stop || !mp_cancel_check(p->cancel, &e, "checking %s against its seal",
					  p->what))
		return;
	p->f.rc = e.code;
	p->f.err = e;
	p->f.stop = true;
	pthread_cond_broadcast(&p->cond);
}

/* From chunk *k on, the first chunk of a role (or chunk_count). */
static void skip_to_role(const struct mp_seal_layout *l, uint64_t *k)
{
	struct mp_seal_chunk ch;

	if (*k < l->head_chunks)
		*k = l->head_chunks;
	for (; *k < l->chunk_count; ++*k) {
		mp_seal_chunk_get(l, *k, &ch);
		if (ch.part == MP_SEAL_ROLE)
			return;
	}
}

/* Claim the next run of chunks totalling at most SEAL_WINDOW bytes (or one
 * larger chunk); false when none is left or the work stopped. */
static bool par_claim(struct par *p, struct par_run *r)
{
	const struct mp_seal_layout *l = p->l;
	struct mp_seal_chunk ch;

	pthread_mutex_lock(&p->lock);
	par_stop_asked(p);
	if (p->roles_only)
		skip_to_role(l, &p->next);
	if (p->f.stop || p->next >= l->chunk_count) {
		pthread_mutex_unlock(&p->lock);
		return false;
	}
	r->first = p->next;
	mp_seal_chunk_get(l, r->first, &ch);
	r->start = ch.offset;
	r->end = ch.offset + ch.len;
	r->last = r->first + 1;
	while (r->last < l->chunk_count && ch.len <= SEAL_WINDOW) {
		struct mp_seal_chunk nx;
		mp_seal_chunk_get(l, r->last, &nx);
		if (nx.offset + nx.len - r->start > SEAL_WINDOW ||
		    (p->roles_only && nx.part != MP_SEAL_ROLE))
			break;
		r->end = nx.offset + nx.len;
		r->last++;
	}
	p->next = r->last;
	pthread_mutex_unlock(&p->lock);
	return true;
}

/* Record chunk c's digest d: kept when sealing, compared when checking. */
static void par_digest(struct par *p, uint64_t c, const unsigned char d[MP_SHA256_LEN])
{
	if (!p->s)
		memcpy(p->digests[c], d, MP_SHA256_LEN);
	else if (!mp_seal_digest_ok(p->s, c, d))
		par_bad(p, c, false);
}

/* A read of chunks [first, last) failed with e: bad chunks when checking,
 * the end of the work when sealing. */
static bool par_read_failed(struct par *p, const struct par_run *r, const struct mp_error *e)
{
	if (!p->s) {
		par_fail(p, e);
		return false;
	}
	for (uint64_t c = r->first; c < r->last; c++)
		par_bad(p, c, true);
	return true;
}

/* Hash one claimed run; false when the work must stop. */
static bool par_hash_run(struct par *p, const struct par_run *r, unsigned char *buf,
			 struct mp_sha256 *h, struct holes *z)
{
	unsigned char d[MP_SHA256_LEN];
	struct mp_seal_chunk ch;
	struct mp_error e;

	if (in_hole(p, z, r->start, r->end)) {
		for (uint64_t c = r->first; c < r->last; c++) {
			mp_seal_chunk_get(p->l, c, &ch);
			mp_seal_zeros_digest(&z->zeros, h, buf, SEAL_WINDOW, ch.len, d);
			par_digest(p, c, d);
		}
		return true;
	}
	mp_seal_chunk_get(p->l, r->first, &ch);
	if (r->last - r->first == 1 && r->end - r->start > SEAL_WINDOW) {
		if (hash_chunk_pieces(p, h, buf, &ch, d, &e) != MP_OK)
			return par_read_failed(p, r, &e);
		par_digest(p, r->first, d);
		return true;
	}
	if (mp_pread_full(p->fd, buf, (size_t)(r->end - r->start), r->start, "pack", p->what,
			  MP_E_PACK_IO, &e) != MP_OK)
		return par_read_failed(p, r, &e);
	for (uint64_t c = r->first; c < r->last; c++) {
		mp_seal_chunk_get(p->l, c, &ch);
		mp_sha256_buf(buf + (ch.offset - r->start), (size_t)ch.len, d);
		par_digest(p, c, d);
	}
	return true;
}

static void *par_worker(void *arg)
{
	struct par *p = arg;
	unsigned char *buf = malloc(SEAL_WINDOW);
	struct mp_sha256 *h = mp_sha256_new();
	struct holes z = {0};
	struct par_run r;
	struct mp_error e;

	if (!buf || !h) {
		mp_fail(&e, MP_E_NOMEM, "out of memory hashing %s", p->what);
		par_fail(p, &e);
	} else {
		while (par_claim(p, &r) && par_hash_run(p, &r, buf, h, &z)) {
			pthread_mutex_lock(&p->lock);
			p->done_bytes += r.end - r.start;
			pthread_cond_broadcast(&p->cond);
			pthread_mutex_unlock(&p->lock);
		}
	}
	free(buf);
	mp_sha256_free(h);
	pthread_mutex_lock(&p->lock);
	p->running--;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/*
 * Run par_worker on `jobs` threads; the calling thread reports progress
 * and, when no thread can be started, does the work itself.
 */
static void par_run(struct par *p, unsigned jobs, mp_progress_fn progress, void *parg)
{
	pthread_t tid[SEAL_MAX_JOBS];
	unsigned started = 0;

	pthread_mutex_lock(&p->lock);
	for (unsigned i = 0; i < jobs; i++) {
		if (pthread_create(&tid[i], NULL, par_worker, p) != 0)
			break;
		started++;
		p->running++;
	}
	pthread_mutex_unlock(&p->lock);
	if (started == 0) {
		p->running = 1;
		par_worker(p);
	} else {
		uint64_t last = UINT64_MAX;
		pthread_mutex_lock(&p->lock);
		while (p->running > 0) {
			uint64_t now = p->done_bytes;
			if (progress && now != last) {
				pthread_mutex_unlock(&p->lock);
				progress(now, p->l->file_size, parg);
				pthread_mutex_lock(&p->lock);
				last = now;
				continue;
			}
			pthread_cond_wait(&p->cond, &p->lock);
		}
		pthread_mutex_unlock(&p->lock);
		for (unsigned i = 0; i < started; i++)
			pthread_join(tid[i], NULL);
	}
	if (progress && p->f.rc == MP_OK)
		progress(p->l->file_size, p->l->file_size, parg);
}

/*
 * With the whole-file digest: the calling thread reads the file front to
 * back in windows of SEAL_WINDOW bytes into a ring; one thread feeds every
 * window, in order, to the whole-file digest; `jobs` threads each take a
 * window and hash the chunks in it.  A chunk that crosses a window's end is
 * hashed in pieces, in order: the "carry" (the open chunk's digest state)
 * passes from window k to window k + 1, and a worker touches it only when
 * its window's turn has come (next_carry == k), which costs the next
 * worker a wait of two partial chunks at most.
 */
struct win {
	uint64_t k;          /* window number in this slot */
	uint64_t start, len;
	bool chunks_done, whole_done;
};

struct ring {
	int fd;
	const char *what;
	const struct mp_seal_layout *l;
	unsigned char (*digests)[MP_SHA256_LEN];
	unsigned nslots;
	unsigned char **buf;
	struct win *w;
	uint64_t nwin;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t filled;     /* windows read */
	uint64_t claimed;    /* windows taken by chunk workers */
	uint64_t next_carry; /* the window whose boundary pieces go next */
	uint64_t done_bytes; /* bytes through both digests */
	struct mp_sha256 *carry;
	struct mp_sha256 *whole;
	struct first_fail f;
};

static void ring_fail(struct ring *r, const struct mp_error *e)
{
	fail_first(&r->f, &r->lock, &r->cond, e);
}

static void ring_release(struct ring *r, struct win *w, bool whole)
{
	pthread_mutex_lock(&r->lock);
	if (whole)
		w->whole_done = true;
	else
		w->chunks_done = true;
	if (w->whole_done && w->chunks_done)
		r->done_bytes += w->len;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void *ring_whole(void *arg)
{
	struct ring *r = arg;
	for (uint64_t k = 0; k < r->nwin; k++) {
		struct win *w = &r->w[k % r->nslots];
		pthread_mutex_lock(&r->lock);
		while (!r->f.stop && r->filled <= k)
			pthread_cond_wait(&r->cond, &r->lock);
		pthread_mutex_unlock(&r->lock);
		if (r->f.stop)
			break;
		mp_sha256_update(r->whole, r->buf[k % r->nslots], (size_t)w->len);
		ring_release(r, w, true);
	}
	return NULL;
}

/* Chunks of window [start, end): hash them, carrying a crossing chunk. */
static void ring_window(struct ring *r, uint64_t k, const unsigned char *buf,
			uint64_t start, uint64_t end)
{
	const struct mp_seal_layout *l = r->l;
	uint64_t c0 = mp_seal_chunk_at(l, start), c1 = mp_seal_chunk_at(l, end - 1);
	struct mp_seal_chunk a, b;
	uint64_t inner_first, inner_last; /* whole chunks [inner_first, inner_last) */

	mp_seal_chunk_get(l, c0, &a);
	mp_seal_chunk_get(l, c1, &b);
	inner_first = a.offset < start ? c0 + 1 : c0;
	inner_last = b.offset + b.len > end ? c1 : c1 + 1;

	pthread_mutex_lock(&r->lock);
	while (!r->f.stop && r->next_carry != k)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
	if (r->f.stop)
		return;
	if (a.offset < start) { /* the chunk carried in from window k - 1 */
		uint64_t e = a.offset + a.len < end ? a.offset + a.len : end;
		mp_sha256_update(r->carry, buf, (size_t)(e - start));
		if (a.offset + a.len <= end)
			mp_sha256_final(r->carry, r->digests[c0]);
	}
	if (b.offset + b.len > end && b.offset >= start) /* carried on to k + 1 */
		mp_sha256_update(r->carry, buf + (b.offset - start), (size_t)(end - b.offset));
	pthread_mutex_lock(&r->lock);
	r->next_carry = k + 1;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);

	for (uint64_t c = inner_first; c < inner_last; c++) {
		struct mp_seal_chunk ch;
		mp_seal_chunk_get(l, c, &ch);
		mp_sha256_buf(buf + (ch.offset - start), (size_t)ch.len, r->digests[c]);
	}
}

static void *ring_worker(void *arg)
{
	struct ring *r = arg;
	for (;;) {
		uint64_t k;
		struct win *w;
		pthread_mutex_lock(&r->lock);
		while (!r->f.stop && r->claimed < r->nwin && r->filled <= r->claimed)
			pthread_cond_wait(&r->cond, &r->lock);
		if (r->f.stop || r->claimed >= r->nwin) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		k = r->claimed++;
		pthread_mutex_unlock(&r->lock);
		w = &r->w[k % r->nslots];
		ring_window(r, k, r->buf[k % r->nslots], w->start, w->start + w->len);
		ring_release(r, w, false);
	}
	return NULL;
}

/* Window k of the file: its first byte and its length. */
static uint64_t window_at(const struct mp_seal_layout *l, uint64_t k, uint64_t *len)
{
	uint64_t start = k * SEAL_WINDOW;

	*len = l->file_size - start < SEAL_WINDOW ? l->file_size - start : SEAL_WINDOW;
	return start;
}

/* The ring's buffers and hashes, every slot free; false when out of memory. */
static bool ring_alloc(struct ring *r, unsigned jobs)
{
	r->nwin = mp_seal_div_up(r->l->file_size, SEAL_WINDOW);
	r->nslots = jobs + 2;
	r->buf = calloc(r->nslots, sizeof *r->buf);
	r->w = calloc(r->nslots, sizeof *r->w);
	r->carry = mp_sha256_new();
	r->whole = mp_sha256_new();
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	if (!r->buf || !r->w || !r->carry || !r->whole)
		return false;
	for (unsigned i = 0; i < r->nslots; i++) {
		if (!(r->buf[i] = malloc(SEAL_WINDOW)))
			return false;
		r->w[i].chunks_done = r->w[i].whole_done = true;
	}
	return true;
}

static void ring_free(struct ring *r)
{
	if (r->buf)
		for (unsigned i = 0; i < r->nslots; i++)
			free(r->buf[i]);
	free(r->buf);
	free(r->w);
	mp_sha256_free(r->carry);
	mp_sha256_free(r->whole);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
}

/* No thread could be started: every window in order on this one. */
static enum mp_err ring_serial(struct ring *r, mp_progress_fn progress, void *parg,
			       struct mp_error *err)
{
	const struct mp_seal_layout *l = r->l;

	for (uint64_t k = 0; k < r->nwin; k++) {
		uint64_t len, start = window_at(l, k, &len);
		enum mp_err rc = mp_pread_full(r->fd, r->buf[0], (size_t)len, start, "pack",
					       r->what, MP_E_PACK_IO, err);

		if (rc)
			return rc;
		mp_sha256_update(r->whole, r->buf[0], (size_t)len);
		r->next_carry = k;
		ring_window(r, k, r->buf[0], start, start + len);
		if (progress)
			progress(start + len, l->file_size, parg);
	}
	return MP_OK;
}

/* Wait (reporting progress) until slot w is free; false when the work stopped. */
static bool ring_wait_free(struct ring *r, const struct win *w, mp_progress_fn progress,
			   void *parg, uint64_t *last_report)
{
	bool stop;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		if (progress && r->done_bytes != *last_report) {
			uint64_t now = r->done_bytes;

			*last_report = now;
			pthread_mutex_unlock(&r->lock);
			progress(now, r->l->file_size, parg);
			pthread_mutex_lock(&r->lock);
			continue;
		}
		if (r->f.stop || (w->chunks_done && w->whole_done))
			break;
		pthread_cond_wait(&r->cond, &r->lock);
	}
	stop = r->f.stop;
	pthread_mutex_unlock(&r->lock);
	return !stop;
}

/* The reading side: fill each window's slot once both digests are done with it. */
static void ring_fill(struct ring *r, mp_progress_fn progress, void *parg)
{
	uint64_t last_report = UINT64_MAX;
	struct mp_error e;

	for (uint64_t k = 0; k < r->nwin; k++) {
		unsigned slot = (unsigned)(k % r->nslots);
		struct win *w = &r->w[slot];
		uint64_t len, start = window_at(r->l, k, &len);

		if (!ring_wait_free(r, w, progress, parg, &last_report))
			break;
		if (mp_pread_full(r->fd, r->buf[slot], (size_t)len, start, "pack", r->what,
				  MP_E_PACK_IO, &e)) {
			ring_fail(r, &e);
			break;
		}
		pthread_mutex_lock(&r->lock);
		w->k = k;
		w->start = start;
		w->len = len;
		w->chunks_done = w->whole_done = false;
		r->filled = k + 1;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
	}
}

/* The whole-file thread and up to jobs chunk workers, the calling thread
 * reading; the serial path when no thread starts. */
static enum mp_err ring_run(struct ring *r, unsigned jobs, mp_progress_fn progress, void *parg,
			    struct mp_error *err)
{
	pthread_t tid[SEAL_MAX_JOBS], wtid;
	bool whole_started = pthread_create(&wtid, NULL, ring_whole, r) == 0;
	unsigned started = 0;

	for (unsigned i = 0; whole_started && i < jobs; i++) {
		if (pthread_create(&tid[i], NULL, ring_worker, r) != 0)
			break;
		started++;
	}
	if (!whole_started || started == 0) {
		/* stop what started, then do it all here in order */
		ring_fail(r, &(struct mp_error){.code = MP_E_NOMEM});
		if (whole_started)
			pthread_join(wtid, NULL);
		r->f.stop = false;
		r->f.rc = MP_OK;
		return ring_serial(r, progress, parg, err);
	}
	ring_fill(r, progress, parg);
	pthread_join(wtid, NULL);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (r->f.rc != MP_OK && err)
		*err = r->f.err;
	if (r->f.rc == MP_OK && progress)
		progress(r->l->file_size, r->l->file_size, parg);
	return r->f.rc;
}

static enum mp_err hash_with_whole(int fd, const char *what, const struct mp_seal_layout *l,
				   unsigned jobs, mp_progress_fn progress, void *parg,
				   unsigned char (*digests)[MP_SHA256_LEN],
				   unsigned char pack_sha256[MP_SHA256_LEN], struct mp_error *err)
{
	struct ring r = {.fd = fd, .what = what, .l = l, .digests = digests};
	enum mp_err rc;

	if (!ring_alloc(&r, jobs))
		rc = mp_fail(err, MP_E_NOMEM, "out of memory hashing %s", what);
	else
		rc = ring_run(&r, jobs, progress, parg, err);
	if (rc == MP_OK)
		mp_sha256_final(r.whole, pack_sha256);
	ring_free(&r);
	return rc;
}

enum mp_err mp_seal_hash_file(int fd, const char *what, const struct mp_seal_layout *l,
			      unsigned jobs, mp_progress_fn progress, void *progress_arg,
			      unsigned char (*digests)[MP_SHA256_LEN],
			      unsigned char pack_sha256[MP_SHA256_LEN], struct mp_error *err)
{
	struct par p = {.fd = fd, .what = what, .l = l, .digests = digests};

	jobs = pick_jobs(jobs);
	if (pack_sha256)
		return hash_with_whole(fd, what, l, jobs, progress, progress_arg, digests,
				       pack_sha256, err);
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	par_run(&p, jobs, progress, progress_arg);
	pthread_mutex_destroy(&p.lock);
	pthread_cond_destroy(&p.cond);
	if (p.f.rc != MP_OK && err)
		*err = p.f.err;
	return p.f.rc;
}

/* The chunks of the layout (or of its roles alone) against the seal, on
 * `jobs` threads, until done or a stop is asked. */
static enum mp_err check_chunks(int fd, const char *what, const struct mp_seal *s,
				const struct mp_seal_layout *l, unsigned jobs, bool roles_only,
				mp_progress_fn progress, void *progress_arg, mp_seal_bad_fn bad,
				void *bad_arg, const struct mp_cancel *cancel, struct mp_error *err)
{
	struct par p = {.fd = fd, .what = what, .l = l, .s = s, .bad = bad, .bad_arg = bad_arg,
			.roles_only = roles_only, .cancel = cancel};
	uint64_t total = roles_only ? mp_seal_role_chunks(l) : l->chunk_count;

	if (s->chunk_count != l->chunk_count || s->chunk_size != l->chunk_size)
		return mp_fail(err, MP_E_SEAL_MISMATCH,
			       "seal is not this pack's: chunk_count %" PRIu64
			       " is not the layout's %" PRIu64, s->chunk_count, l->chunk_count);
	jobs = pick_jobs(jobs);
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	par_run(&p, jobs, progress, progress_arg);
	pthread_mutex_destroy(&p.lock);
	pthread_cond_destroy(&p.cond);
	if (p.f.rc != MP_OK) {
		if (err)
			*err = p.f.err;
		return p.f.rc;
	}
	if (p.bad_count == total && p.io_failed)
		return mp_fail(err, MP_E_PACK_IO, "cannot read pack %s: no chunk could be read",
			       what);
	if (p.bad_count)
		return mp_fail(err, MP_E_SEAL_CHUNK,
			       "pack bytes differ from their sealed digest: %" PRIu64
			       " of %" PRIu64 " chunks, the first is chunk %" PRIu64,
			       p.bad_count, total, p.first_bad);
	return MP_OK;
}

enum mp_err mp_seal_check_part(int fd, const char *what, const struct mp_seal *s,
			       const struct mp_seal_layout *l, unsigned jobs, bool roles_only,
			       mp_progress_fn progress, void *progress_arg,
			       mp_seal_bad_fn bad, void *bad_arg, struct mp_error *err)
{
	return check_chunks(fd, what, s, l, jobs, roles_only, progress, progress_arg, bad,
			    bad_arg, NULL, err);
}

enum mp_err mp_seal_check_file_until(int fd, const char *what, const struct mp_seal *s,
				     const struct mp_seal_layout *l, unsigned jobs,
				     mp_progress_fn progress, void *progress_arg,
				     mp_seal_bad_fn bad, void *bad_arg,
				     const struct mp_cancel *cancel, struct mp_error *err)
{
	return check_chunks(fd, what, s, l, jobs, false, progress, progress_arg, bad, bad_arg,
			    cancel, err);
}

enum mp_err mp_seal_check_file(int fd, const char *what, const struct mp_seal *s,
			       const struct mp_seal_layout *l, unsigned jobs,
			       mp_progress_fn progress, void *progress_arg,
			       mp_seal_bad_fn bad, void *bad_arg, struct mp_error *err)
{
	return check_chunks(fd, what, s, l, jobs, false, progress, progress_arg, bad, bad_arg,
			    NULL, err);
}
