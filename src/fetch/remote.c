/*
 * remote.c - a pack served while it is fetched (remote.h): the open,
 * the readers' waits and the engine's thread that drives fetch's engine
 * (engine.c) through a driver of its own.
 *
 * Locking: r->lock guards the demand queue, the list of hot chunks, the
 * per-chunk flags and counts but `local`, the wait statistics and the
 * published copy of the counters; `local` is read without it (set once a
 * chunk is written, cleared when its stored bytes fail a check).  The
 * plan, the mirrors and the fetch's result are the engine thread's alone;
 * readers see them through the copy published after every turn.
 *
 * The fill's order: the chunks readers wait for, then the hot ones (not
 * local, in objects readers have read: mp_remote_hint()), most hinted
 * first, then file order.
 */
#include "config.h"

#include "fetch/remote.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/search.h"
#include "fetch/fetch_internal.h"

/* seconds before a mirror dropped for failures (not lies) is tried again,
 * doubled each time it fails again, at most REVIVE_MAX */
#define REVIVE 1.0
#define REVIVE_MAX 8.0
/* a waiting reader looks again at least this often (ms): the abandon hook */
#define WAIT_SLICE_MS 200
/* the engine's wait for curl each turn (ms) */
#define TURN_MS 100
/* wait histogram: bucket k holds waits under 2^k microseconds */
#define WAIT_BUCKETS 40
/* hot chunks the fill knows of at once (more are fetched in file order) */
#define HOT_MAX 4096
/* chunks one hint may heat: an object's, not a whole file's */
#define HINT_MAX_CHUNKS 256

/* What the mount knows of one chunk of the seal besides the plan. */
struct chunk {
	_Atomic uint8_t local;  /* checked and written: read without the lock */
	uint8_t queued;         /* in the demand ring */
	uint8_t lost;           /* held, but its stored bytes failed a check */
	uint8_t listed;         /* in the hot list */
	uint32_t heat;          /* hints that came while it was not local */
	uint32_t stuck;         /* times no mirror would send it (the engine's) */
};

struct mp_remote {
	struct mp_remote_opts o;
	struct fetch f;
	struct mp_fetch_result res;
	struct fetch_driver driver;
	struct mp_cancel cancel;        /* the engine's stop */
	struct chunk *chunk;            /* by chunk of the seal */
	pthread_mutex_t lock;
	pthread_cond_t changed;         /* a chunk became local, or a stop */
	uint64_t *demand;               /* chunks readers wait for, a ring */
	uint64_t dhead, dlen;
	uint64_t hot[HOT_MAX];          /* chunks hinted, fetched before file order */
	size_t nhot;
	uint64_t lost;                  /* chunks whose stored bytes failed, refetched */
	bool stopping, started, multi_ok, ended;
	pthread_t thread;
	uint64_t waits, waits_failed, hist[WAIT_BUCKETS];
	uint64_t chunks_local, bytes_local;
	/* when the engine last saw no usable mirror, and none has sent a good
	 * chunk since; 0: a mirror is there.  A reader's wait ends timeout_s
	 * after it at the latest, so that the waits for the chunks of one read
	 * (one after another) do not each take the whole timeout. */
	double dead_since;
	double revive_at[MP_FETCH_MAX_MIRRORS], revive_wait[MP_FETCH_MAX_MIRRORS];
	uint64_t good_at_revive[MP_FETCH_MAX_MIRRORS];
	uint64_t fill_rate;             /* bytes/s of the fill; 0: no cap */
	uint64_t fill_started;          /* bytes of the fill's runs started */
	struct mp_remote_stats pub;     /* the engine's counters, after each turn */
};

/* --- the open ---------------------------------------------------------------- */

static enum mp_err alloc_states(struct mp_remote *r, struct mp_error *err)
{
	uint64_t n = r->f.seal->chunk_count;   /* bounded by MP_SEAL_MAX_CHUNKS */

	r->chunk = calloc((size_t)n, sizeof *r->chunk);
	r->demand = calloc((size_t)n, sizeof *r->demand);
	if (!r->chunk || !r->demand)
		return mp_fail(err, MP_E_NOMEM, "out of memory: %llu chunk states",
			       (unsigned long long)n);
	return MP_OK;
}

/* The chunks the head holds, and those an earlier run recorded, local. */
static void mark_local_at_open(struct mp_remote *r)
{
	struct fetch *f = &r->f;

	for (uint64_t c = 0; c < f->plan.chunk_count; c++)
		if (f->plan.state[c] == MP_CHUNK_HELD || mp_fetch_record_has(f, c)) {
			atomic_store(&r->chunk[c].local, 1);
			r->chunks_local++;
			r->bytes_local += f->plan.bound[c + 1] - f->plan.bound[c];
		}
}

/* Waits measured on the monotonic clock, as the deadlines are. */
static void init_cond(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

static bool driver_next(void *arg, struct fetch *f, bool room, struct mp_fetch_run *run,
			bool *demand);
static void driver_chunk(void *arg, uint64_t c, bool good);
static void driver_stuck(void *arg, uint64_t c);

enum mp_err mp_remote_open(struct mp_remote **out, const struct mp_remote_opts *o,
			   struct mp_error *err)
{
	struct mp_remote *r = calloc(1, sizeof *r);
	enum mp_err rc;

	*out = NULL;
	if (!r)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	r->o = *o;
	r->o.fetch.cancel = &r->cancel;
	/* the fill is paced by runs (paced()), not by curl's cap */
	r->fill_rate = o->fetch.max_rate;
	r->o.fetch.max_rate = 0;
	r->f.o = &r->o.fetch;
	r->f.res = &r->res;
	r->res.trusted_by = "nothing";
	r->f.fd = r->f.state_fd = r->f.lock_fd = r->f.direct_fd = -1;
	r->driver = (struct fetch_driver){driver_next, driver_chunk, driver_stuck, r};
	pthread_mutex_init(&r->lock, NULL);
	init_cond(&r->changed);
	if (!(rc = mp_fetch_setup(&r->f, err)) && !(rc = mp_fetch_mirrors_open(&r->f, err)) &&
	    !(rc = mp_fetch_local_open(&r->f, err)) && !(rc = mp_fetch_head(&r->f, err)) &&
	    !(rc = alloc_states(r, err))) {
		mark_local_at_open(r);
		*out = r;
		return MP_OK;
	}
	mp_remote_close(r);
	return rc;
}

const char *mp_remote_partial_path(const struct mp_remote *r)
{
	return r->f.partial;
}

const char *mp_remote_manifest_path(const struct mp_remote *r)
{
	return r->f.manifest_out;
}

enum mp_err mp_remote_manifest(const struct mp_remote *r, const char *path, char **out,
			       size_t *len, struct mp_error *err)
{
	return mp_fetch_manifest_with_path(&r->f, path, out, len, err);
}

enum mp_err mp_remote_seal_copy(const struct mp_remote *r, struct mp_seal **out,
				struct mp_error *err)
{
	return mp_seal_parse(out, r->f.seal_raw.data, r->f.seal_raw.len, r->f.out, err);
}

const char *mp_remote_trusted_by(const struct mp_remote *r)
{
	return r->res.trusted_by;
}

/* --- the readers ------------------------------------------------------------- */

static void wake_engine(struct mp_remote *r)
{
	if (r->multi_ok)
		curl_multi_wakeup(r->f.multi);
}

static void count_wait(struct mp_remote *r, double seconds, bool ok)
{
	uint64_t us = seconds > 0 ? (uint64_t)(seconds * 1e6) : 0;
	unsigned k = 0;

	r->waits++;
	if (!ok) {
		r->waits_failed++;
		return;
	}
	while (k + 1 < WAIT_BUCKETS && us >= (1ull << k))
		k++;
	r->hist[k]++;
}

/* Under r->lock: c asked for (again), unless it is queued already. */
static void ask_for(struct mp_remote *r, uint64_t c)
{
	uint64_t n = r->f.seal->chunk_count;

	if (r->chunk[c].queued || r->dlen == n)
		return;
	r->chunk[c].queued = 1;
	r->demand[(r->dhead + r->dlen) % n] = c;
	r->dlen++;
	wake_engine(r);
}

static void deadline_in(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* A reader's wait that failed, logged: the first, then every power of
 * two, so that an outage under a busy loader is a few lines, not one a
 * read.  The note callback is called from the reader's thread here. */
static void said_failed(struct mp_remote *r, uint64_t c, double seconds)
{
	uint64_t n;

	pthread_mutex_lock(&r->lock);
	n = r->waits_failed;
	pthread_mutex_unlock(&r->lock);
	if (n & (n - 1))
		return;
	mp_fetch_note(&r->f, "a read of chunk %llu waited %.1f s and no mirror sent it: EIO "
		      "(%llu such reads so far; local chunks are still served)",
		      (unsigned long long)c, seconds, (unsigned long long)n);
}

int mp_remote_make_local(struct mp_remote *r, uint64_t c, bool wait)
{
	double t0, until;
	bool stopping;
	int rc = 0;

	if (c >= r->f.seal->chunk_count || atomic_load(&r->chunk[c].local))
		return 0;
	if (!wait) {
		pthread_mutex_lock(&r->lock);
		if (!r->stopping)
			ask_for(r, c);
		pthread_mutex_unlock(&r->lock);
		return EAGAIN;
	}
	t0 = mp_fetch_now();
	pthread_mutex_lock(&r->lock);
	while (!atomic_load(&r->chunk[c].local)) {
		struct timespec ts;

		until = t0 + (double)r->o.timeout_s;
		if (r->dead_since > 0 && r->dead_since + (double)r->o.timeout_s < until)
			until = r->dead_since + (double)r->o.timeout_s;
		if (r->stopping || mp_fetch_now() >= until ||
		    (r->o.abandon && r->o.abandon(r->o.abandon_arg))) {
			rc = EIO;
			break;
		}
		/* again each time: a run that failed put c back in the plan */
		ask_for(r, c);
		deadline_in(&ts, WAIT_SLICE_MS);
		pthread_cond_timedwait(&r->changed, &r->lock, &ts);
	}
	count_wait(r, mp_fetch_now() - t0, rc == 0);
	stopping = r->stopping;
	pthread_mutex_unlock(&r->lock);
	if (rc && !stopping)
		said_failed(r, c, mp_fetch_now() - t0);
	return rc;
}

void mp_remote_hint(struct mp_remote *r, uint64_t offset, uint64_t len)
{
	uint64_t first, end;
	bool any = false;

	if (len == 0 || offset >= r->f.seal->pack_size)
		return;
	if (len > r->f.seal->pack_size - offset)
		len = r->f.seal->pack_size - offset;
	/* by the plan's boundaries, fixed once the head is in and kept until
	 * mp_remote_close(): the fetch's layout borrows the pack's object
	 * offsets, which the fill's end frees */
	first = mp_last_at_most(r->f.plan.bound, r->f.plan.chunk_count, offset);
	end = mp_last_at_most(r->f.plan.bound, r->f.plan.chunk_count, offset + len - 1) + 1;
	if (end - first > HINT_MAX_CHUNKS)
		end = first + HINT_MAX_CHUNKS;
	/* the common case once the object is local: no lock taken */
	for (uint64_t c = first; c < end && !any; c++)
		any = !atomic_load(&r->chunk[c].local);
	if (!any)
		return;
	pthread_mutex_lock(&r->lock);
	for (uint64_t c = first; c < end; c++) {
		struct chunk *ch = &r->chunk[c];

		if (atomic_load(&ch->local))
			continue;
		if (ch->heat < UINT32_MAX)
			ch->heat++;
		if (!ch->listed && r->nhot < HOT_MAX) {
			ch->listed = 1;
			r->hot[r->nhot++] = c;
		}
	}
	pthread_mutex_unlock(&r->lock);
}

bool mp_remote_refetch(struct mp_remote *r, uint64_t c)
{
	bool can;

	if (c >= r->f.seal->chunk_count)
		return false;
	pthread_mutex_lock(&r->lock);
	can = r->multi_ok && !r->stopping && !r->ended;
	if (can && atomic_load(&r->chunk[c].local)) {
		atomic_store(&r->chunk[c].local, 0);
		r->chunk[c].lost = 1;
		r->chunks_local--;
		r->bytes_local -= r->f.plan.bound[c + 1] - r->f.plan.bound[c];
		r->lost++;
	}
	pthread_mutex_unlock(&r->lock);
	if (!can)
		return false;
	mp_fetch_note(&r->f, "chunk %llu of %s did not match the seal when read back (bytes "
		      "lost before they reached the disk?): fetched again",
		      (unsigned long long)c, r->f.partial);
	return mp_remote_make_local(r, c, true) == 0;
}

/* --- the driver (the engine's thread) ----------------------------------------- */

/* A chunk readers wait for that is still missing, as a run of one. */
static bool next_demand(struct mp_remote *r, struct fetch *f, struct mp_fetch_run *run)
{
	uint64_t n = f->seal->chunk_count;
	bool found = false;

	pthread_mutex_lock(&r->lock);
	while (!found && r->dlen) {
		uint64_t c = r->demand[r->dhead];

		r->dhead = (r->dhead + 1) % n;
		r->dlen--;
		r->chunk[c].queued = 0;
		if (r->chunk[c].lost) {
			/* its stored bytes failed a reader's check: fetched anew */
			r->chunk[c].lost = 0;
			mp_fetch_plan_lost(&f->plan, c);
			r->res.chunks_refetched++;
		}
		if (f->plan.state[c] != MP_CHUNK_MISSING)
			continue;   /* held, or in flight: its reader is woken then */
		f->plan.state[c] = MP_CHUNK_FLIGHT;
		mp_fetch_plan_run_of(&f->plan, c, 1, run);
		found = true;
	}
	pthread_mutex_unlock(&r->lock);
	return found;
}

/*
 * Whether the fill may start another run: what it started stays within
 * max_rate times the seconds since it began.  Paced here, by runs, and not
 * by curl's receive cap: a run of a few hundred KiB arrives in one or two
 * reads of curl's buffer before any cap bites, and a demand run must not
 * be capped at all.
 */
static bool paced(const struct mp_remote *r)
{
	double rate = (double)r->fill_rate;

	return rate == 0 || (double)r->fill_started <= rate * (mp_fetch_now() - r->f.t0);
}

/* The hottest chunk still missing, with the missing ones after it, as a
 * run (the lowest of equally hot ones: an object is fetched in order);
 * chunks no longer missing leave the list. */
static bool next_hot(struct mp_remote *r, struct fetch *f, struct mp_fetch_run *run)
{
	uint64_t best = UINT64_MAX;
	bool found;

	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nhot;) {
		uint64_t c = r->hot[i];
		const struct chunk *ch = &r->chunk[c], *b;

		if (f->plan.state[c] != MP_CHUNK_MISSING) {
			r->chunk[c].listed = 0;
			r->hot[i] = r->hot[--r->nhot];
			continue;
		}
		b = best == UINT64_MAX ? NULL : &r->chunk[best];
		if (!b || ch->heat > b->heat || (ch->heat == b->heat && c < best))
			best = c;
		i++;
	}
	found = best != UINT64_MAX && mp_fetch_plan_run_from(&f->plan, best, run);
	pthread_mutex_unlock(&r->lock);
	return found;
}

static bool driver_next(void *arg, struct fetch *f, bool room, struct mp_fetch_run *run,
			bool *demand)
{
	struct mp_remote *r = arg;

	if (next_demand(r, f, run))
		return *demand = true;
	if (!room || !r->o.fill || !paced(r))
		return false;
	if (!next_hot(r, f, run) && !mp_fetch_plan_next(&f->plan, run))
		return false;
	r->fill_started += run->len;
	return true;
}

static void driver_chunk(void *arg, uint64_t c, bool good)
{
	struct mp_remote *r = arg;

	if (!good || atomic_load(&r->chunk[c].local))
		return;
	pthread_mutex_lock(&r->lock);
	r->dead_since = 0;
	atomic_store(&r->chunk[c].local, 1);
	r->chunks_local++;
	r->bytes_local += r->f.plan.bound[c + 1] - r->f.plan.bound[c];
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
}

/* Every usable mirror lied about c: its readers time out; the fill goes on
 * past it until a mirror comes back. */
static void driver_stuck(void *arg, uint64_t c)
{
	struct mp_remote *r = arg;

	if (r->chunk[c].stuck++ == 0)
		mp_fetch_note(&r->f, "chunk %llu: every usable mirror sent bytes that do not "
			      "match the seal", (unsigned long long)c);
	r->f.plan.state[c] = MP_CHUNK_FLIGHT; /* not asked for again until revived */
}

/* Mirror i dropped for failing (not refused, never lied): tried again
 * when its wait is over, the wait doubled when it failed since the last
 * try without sending a good chunk. */
static bool revive_mirror(struct mp_remote *r, size_t i, double now)
{
	struct fetch_mirror *m = &r->f.mirrors[i];

	if (m->usable || m->rep->refused || m->rep->chunks_bad)
		return false;
	if (r->revive_at[i] == 0) {
		if (r->revive_wait[i] == 0 || m->rep->chunks_good > r->good_at_revive[i])
			r->revive_wait[i] = REVIVE;
		else if ((r->revive_wait[i] *= 2) > REVIVE_MAX)
			r->revive_wait[i] = REVIVE_MAX;
		r->revive_at[i] = now + r->revive_wait[i];
	}
	if (now < r->revive_at[i])
		return false;
	r->revive_at[i] = 0;
	r->good_at_revive[i] = m->rep->chunks_good;
	m->usable = true;
	m->fails_in_row = 0;
	m->backoff_level = 0;
	m->not_before = 0;
	return true;
}

/* Mirrors dropped for failing tried again; with one back, the chunks set
 * aside as stuck asked for again. */
static void revive(struct mp_remote *r)
{
	struct fetch *f = &r->f;
	double now = mp_fetch_now();
	bool any = false;

	for (size_t i = 0; i < f->nmirrors; i++)
		any |= revive_mirror(r, i, now);
	for (uint64_t c = 0; any && c < f->plan.chunk_count; c++)
		if (r->chunk[c].stuck && f->plan.state[c] == MP_CHUNK_FLIGHT) {
			r->chunk[c].stuck = 0;
			mp_fetch_plan_missing(&f->plan, c);
		}
}

/* The engine's counters, copied for readers of the stats. */
static void publish(struct mp_remote *r, bool complete)
{
	struct mp_remote_stats *s = &r->pub;
	const char *path = complete ? r->f.out : r->f.partial;

	pthread_mutex_lock(&r->lock);
	if (mp_fetch_usable_mirrors(&r->f) == 0 && r->dead_since == 0)
		r->dead_since = mp_fetch_now();
	s->pack_size = r->f.seal->pack_size;
	s->chunk_count = r->f.seal->chunk_count;
	s->chunks_fetched = r->res.chunks_fetched;
	s->chunks_refetched = r->res.chunks_refetched;
	s->chunks_kept = r->res.chunks_kept;
	s->bytes_fetched = r->res.bytes_fetched;
	s->complete = complete;
	snprintf(s->pack_path, sizeof s->pack_path, "%s", path);
	s->nmirrors = r->f.nmirrors < MP_REMOTE_STATS_MIRRORS ? r->f.nmirrors
							      : MP_REMOTE_STATS_MIRRORS;
	for (size_t i = 0; i < s->nmirrors; i++) {
		const struct mp_fetch_mirror_report *m = &r->res.mirrors[i];
		struct mp_remote_mirror_stats *t = &s->mirrors[i];

		snprintf(t->source, sizeof t->source, "%.*s", (int)sizeof t->source - 1, m->source);
		t->bytes = m->bytes;
		t->failures = m->failures;
		t->chunks_good = m->chunks_good;
		t->chunks_bad = m->chunks_bad;
		t->dropped = !r->f.mirrors[i].usable;
		t->liar = m->chunks_bad > 0;
	}
	pthread_mutex_unlock(&r->lock);
}

/* A resumed open counted the recorded chunks local; those that fail their
 * check again are fetched (and not local meanwhile). */
static enum mp_err recheck(struct mp_remote *r, struct mp_error *err)
{
	struct fetch *f = &r->f;
	enum mp_err rc = mp_fetch_resume_check(f, err);

	pthread_mutex_lock(&r->lock);
	for (uint64_t c = 0; c < f->plan.chunk_count; c++)
		if (atomic_load(&r->chunk[c].local) && f->plan.state[c] != MP_CHUNK_HELD) {
			atomic_store(&r->chunk[c].local, 0);
			r->chunks_local--;
			r->bytes_local -= f->plan.bound[c + 1] - f->plan.bound[c];
		}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* Every chunk local: OUT in place, said once. */
static void complete(struct mp_remote *r)
{
	struct mp_error e = {0};

	if (mp_fetch_finish(&r->f, &e) != MP_OK) {
		mp_fetch_note(&r->f, "the fill is complete but %s is not in place: %s", r->f.out,
			      e.msg);
		publish(r, false);
		return;
	}
	mp_fetch_note(&r->f, "fill complete: %s is a local sealed pack", r->f.out);
	publish(r, true);
}

static void *engine_main(void *arg)
{
	struct mp_remote *r = arg;
	struct fetch *f = &r->f;
	struct mp_error e = {0};
	unsigned in_flight = 0;
	enum mp_err rc = recheck(r, &e);

	if (rc == MP_OK)
		rc = mp_fetch_engine_begin(f, &e);
	while (rc == MP_OK && !mp_cancel_sig(&r->cancel)) {
		if (mp_fetch_plan_done(&f->plan) && in_flight == 0) {
			complete(r);
			break;
		}
		revive(r);
		rc = mp_fetch_engine_turn(f, &in_flight, TURN_MS, &e);
		publish(r, false);
		if (rc == MP_E_PACK_IO || rc == MP_E_NO_SPACE) {
			/* a write that failed: the chunk is fetched again later */
			mp_fetch_note(f, "%s", e.msg);
			rc = MP_OK;
		}
	}
	if (rc != MP_OK && !mp_cancel_sig(&r->cancel))
		mp_fetch_note(f, "the fill stopped: %s", e.msg);
	mp_fetch_engine_abandon(f);
	pthread_mutex_lock(&r->lock);
	r->ended = true;
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

enum mp_err mp_remote_start(struct mp_remote *r, struct mp_error *err)
{
	enum mp_err rc = mp_fetch_transfer_start(&r->f, err);

	if (rc)
		return rc;
	r->f.driver = &r->driver;
	r->f.t0 = mp_fetch_now();
	pthread_mutex_lock(&r->lock);
	r->multi_ok = true;
	pthread_mutex_unlock(&r->lock);
	publish(r, false);
	if (pthread_create(&r->thread, NULL, engine_main, r) != 0)
		return mp_fail(err, MP_E_NOMEM, "cannot start the fill's thread");
	r->started = true;
	return MP_OK;
}

/* --- the counters ------------------------------------------------------------ */

/* The upper bound (s) of the bucket where the q-th of n waits lies. */
static double quantile(const uint64_t *hist, uint64_t n, double q)
{
	uint64_t want = (uint64_t)((double)n * q), seen = 0;

	if (n == 0)
		return 0;
	for (unsigned k = 0; k < WAIT_BUCKETS; k++) {
		seen += hist[k];
		if (seen > want)
			return (double)(1ull << k) / 1e6;
	}
	return (double)(1ull << (WAIT_BUCKETS - 1)) / 1e6;
}

void mp_remote_stats(struct mp_remote *r, struct mp_remote_stats *s)
{
	pthread_mutex_lock(&r->lock);
	*s = r->pub;
	s->chunks_local = r->chunks_local;
	s->bytes_local = r->bytes_local;
	s->demand_waits = r->waits;
	s->demand_failed = r->waits_failed;
	s->demand_p50 = quantile(r->hist, r->waits - r->waits_failed, 0.50);
	s->demand_p99 = quantile(r->hist, r->waits - r->waits_failed, 0.99);
	s->fill = r->o.fill;
	pthread_mutex_unlock(&r->lock);
}

/* --- the end ----------------------------------------------------------------- */

void mp_remote_stop(struct mp_remote *r)
{
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	mp_cancel_request(&r->cancel, 1);
	pthread_cond_broadcast(&r->changed);
	wake_engine(r);
	pthread_mutex_unlock(&r->lock);
	if (r->started) {
		pthread_join(r->thread, NULL);
		r->started = false;
	}
	pthread_mutex_lock(&r->lock);
	r->multi_ok = false;
	pthread_mutex_unlock(&r->lock);
}

void mp_remote_close(struct mp_remote *r)
{
	if (!r)
		return;
	mp_remote_stop(r);
	mp_fetch_release(&r->f);
	mp_fetch_result_free(&r->res);
	free(r->chunk);
	free(r->demand);
	pthread_cond_destroy(&r->changed);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
