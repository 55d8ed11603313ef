/*
 * engine.c - step 5 of a fetch (fetch.h): runs of chunks asked for with
 * parallel range GETs on libcurl's multi interface, handed to the hashing
 * threads as they arrive, chunks that fail asked for again elsewhere.
 *
 * One thread (the caller's) drives curl and the plan; the buffers of at
 * most 2 * connections runs exist at once (in flight or being hashed).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/fetch_internal.h"

struct req {
	struct req *next, *prev;    /* f->reqs: every request in flight */
	struct mp_fetch_xfer x;
	struct fetch_mirror *m;
	struct mp_fetch_job *job;   /* its buffer is the body's */
};

enum mp_fetch_verdict mp_fetch_judge(struct mp_fetch_xfer *x, CURLcode res, const char *who,
				     struct mp_error *err)
{
	/* before the status, which is the last redirect's own 30x */
	if (res == CURLE_TOO_MANY_REDIRECTS)
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: more than %ld "
			       "redirects (a redirect loop?)", who, MP_FETCH_MAX_REDIRS),
		       MP_FETCH_BAD;
	return mp_fetch_xfer_judge(x, res, who, err);
}

void mp_fetch_mirror_drop(struct fetch *f, struct fetch_mirror *m, const char *why)
{
	if (!m->usable)
		return;
	m->usable = false;
	m->rep->dropped = true;
	/* the report keeps what fits; the note has it all */
	snprintf(m->rep->why, sizeof m->rep->why, "%.*s", (int)sizeof m->rep->why - 1, why);
	mp_fetch_note(f, "mirror %s dropped: %s", m->src.given, why);
}

void mp_fetch_mirror_failed(struct fetch *f, struct fetch_mirror *m, const char *why)
{
	char line[MP_MSG_MAX + 64];

	m->rep->failures++;
	if (++m->fails_in_row < MP_FETCH_DROP_AFTER || !m->usable)
		return;
	snprintf(line, sizeof line, "%u failures in a row, the last: %s", m->fails_in_row, why);
	mp_fetch_mirror_drop(f, m, line);
}

void mp_fetch_mirror_busy(struct fetch *f, struct fetch_mirror *m, const char *last)
{
	char why[MP_MSG_MAX + 64];

	snprintf(why, sizeof why, "busy %u times in a row, the last: %s", m->backoff_level, last);
	mp_fetch_mirror_drop(f, m, why);
}

double mp_fetch_back_off(struct fetch_mirror *m, struct mp_fetch_xfer *x)
{
	curl_off_t said = -1;
	double now = mp_fetch_now(), wait;

	/* CURLINFO_RETRY_AFTER also reads the HTTP-date form */
	if (x->h && curl_easy_getinfo(x->h, CURLINFO_RETRY_AFTER, &said) != CURLE_OK)
		said = -1;
	if (x->retry_after > said)
		said = x->retry_after;
	m->rep->backoffs++;
	if (x->retry_after < 0 && said <= 0)
		wait = (double)(1u << (m->backoff_level < 5 ? m->backoff_level : 5));
	else
		wait = (double)(said > MP_FETCH_MAX_RETRY_AFTER ? MP_FETCH_MAX_RETRY_AFTER : said);
	if (now < m->not_before) {
		/* sent before the back-off began: the same busy spell */
		if (now + wait > m->not_before)
			m->not_before = now + wait;
		return m->not_before - now;
	}
	if (++m->backoff_level >= MP_FETCH_MAX_BACKOFFS)
		return -1;
	m->not_before = now + wait;
	return wait;
}

static uint64_t run_mask(const struct fetch *f, const struct mp_fetch_run *r)
{
	uint64_t mask = 0;

	for (uint64_t c = r->first; c < r->first + r->count; c++)
		mask |= f->bad_mask[c];
	return mask;
}

/* The usable mirror, not backing off and not known to lie about the run,
 * with the fewest requests in flight; NULL when none.  *any: some mirror
 * not known to lie is usable (perhaps backing off). */
static struct fetch_mirror *pick(struct fetch *f, uint64_t mask, double now, bool *any)
{
	struct fetch_mirror *best = NULL;

	*any = false;
	for (size_t i = 0; i < f->nmirrors; i++) {
		struct fetch_mirror *m = &f->mirrors[i];

		if (!m->usable || (mask >> i) & 1u)
			continue;
		*any = true;
		if (m->not_before <= now && (!best || m->in_flight < best->in_flight))
			best = m;
	}
	return best;
}

static void put_back(struct fetch *f, const struct mp_fetch_run *r)
{
	for (uint64_t c = r->first; c < r->first + r->count; c++)
		mp_fetch_plan_missing(&f->plan, c);
}

static enum mp_err no_mirror_for(struct fetch *f, uint64_t chunk, struct mp_error *err)
{
	char where[128];

	mp_seal_chunk_describe(f->pack, &f->layout, chunk, where, sizeof where);
	return mp_fail(err, MP_E_FETCH_CHUNK, "%s: chunk %" PRIu64 " (%s, bytes %" PRIu64
		       "-%" PRIu64 "): every usable mirror sent bytes that do not match the seal",
		       mp_err_summary(MP_E_FETCH_CHUNK), chunk, where, f->plan.bound[chunk],
		       f->plan.bound[chunk + 1] - 1);
}

/* A run to mirror m; a demand run (a reader waits) uncapped by max_rate,
 * which is the background's. */
static enum mp_err start(struct fetch *f, struct fetch_mirror *m, const struct mp_fetch_run *r,
			 bool demand, struct mp_error *err)
{
	struct req *q = calloc(1, sizeof *q);
	struct mp_fetch_net net = f->net;
	enum mp_err rc;

	if (demand)
		net.max_rate = 0;
	if (!q || !(q->job = mp_fetch_hashq_job(f->hq, r->first, r->count, r->offset, r->len,
						(int)(m - f->mirrors), true))) {
		free(q);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	q->m = m;
	rc = mp_fetch_xfer_setup(&q->x, &m->src, m->src.url, &net, q->job->buf, r->offset,
				 r->len, r->len, false, err);
	if (rc == MP_OK && curl_multi_add_handle(f->multi, q->x.h) != CURLM_OK)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory (curl_multi_add_handle)");
	if (rc != MP_OK) {
		mp_fetch_xfer_cleanup(&q->x);
		mp_fetch_job_free(q->job);
		free(q);
		return rc;
	}
	q->x.owner = q;
	q->next = f->reqs;
	if (q->next)
		((struct req *)q->next)->prev = q;
	f->reqs = q;
	m->in_flight++;
	return MP_OK;
}

/* The next run: the driver's, else the plan's while a connection is free. */
static bool next_run(struct fetch *f, unsigned in_flight, unsigned conns,
		     struct mp_fetch_run *r, bool *demand)
{
	*demand = false;
	if (f->driver)
		return f->driver->next(f->driver->arg, f, in_flight < conns, r, demand);
	return in_flight < conns && mp_fetch_plan_next(&f->plan, r);
}

/* No mirror left for chunk c: a fetch fails; a mount's driver is told. */
static enum mp_err stuck(struct fetch *f, uint64_t c, struct mp_error *err)
{
	if (!f->driver)
		return no_mirror_for(f, c, err);
	f->driver->stuck(f->driver->arg, c);
	return MP_OK;
}

/* Start runs while connections and hashing room are free (a demand run
 * goes ahead of them, up to twice the connections). */
static enum mp_err fill(struct fetch *f, unsigned *in_flight, struct mp_error *err)
{
	unsigned conns = f->o->connections ? f->o->connections : MP_FETCH_DEFAULT_CONNECTIONS;
	/* a fetch holds at most 2 * conns runs (MP_FETCH_RUN_MEMORY) */
	unsigned cap = f->driver ? 2 * conns : conns;
	struct mp_fetch_run r;
	bool any, demand;

	while (*in_flight < cap && mp_fetch_hashq_busy(f->hq) < cap &&
	       next_run(f, *in_flight, conns, &r, &demand)) {
		uint64_t mask = run_mask(f, &r);
		struct fetch_mirror *m = pick(f, mask, mp_fetch_now(), &any);
		enum mp_err rc;

		if (!m && r.count > 1 && mask) {
			put_back(f, &r);
			mp_fetch_plan_run_of(&f->plan, r.first, 1, &r);
			f->plan.state[r.first] = MP_CHUNK_FLIGHT;
			m = pick(f, f->bad_mask[r.first], mp_fetch_now(), &any);
		}
		if (!m) {
			put_back(f, &r);
			if (!any && mask)
				return stuck(f, r.first, err);
			return MP_OK; /* every mirror backing off, or none left (below) */
		}
		if ((rc = start(f, m, &r, demand, err)))
			return rc;
		(*in_flight)++;
	}
	return MP_OK;
}

static void unlink_req(struct fetch *f, struct req *q)
{
	if (q->prev)
		q->prev->next = q->next;
	else
		f->reqs = q->next;
	if (q->next)
		q->next->prev = q->prev;
}

/* A finished request: its run to the hashing threads, or back to the plan. */
static void finished(struct fetch *f, CURLMsg *msg)
{
	struct mp_fetch_xfer *x = NULL;
	struct req *q;
	struct mp_error e;
	struct mp_fetch_run r;
	enum mp_fetch_verdict v;

	curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
	q = x->owner;
	unlink_req(f, q);
	curl_multi_remove_handle(f->multi, x->h);
	q->m->in_flight--;
	q->m->rep->bytes += x->got;
	f->res->bytes_fetched += x->got;
	v = mp_fetch_judge(x, msg->data.result, q->m->src.given, &e);
	if (x->http_version)
		snprintf(q->m->rep->http_version, sizeof q->m->rep->http_version, "%s",
			 mp_fetch_http_version_name(x->http_version));
	if (v == MP_FETCH_GOOD) {
		mp_fetch_hashq_push(f->hq, q->job);
		q->job = NULL;
	} else {
		mp_fetch_plan_run_of(&f->plan, q->job->first, q->job->count, &r);
		put_back(f, &r);
		if (v != MP_FETCH_LATER)
			mp_fetch_mirror_failed(f, q->m, e.msg);
		else if (mp_fetch_back_off(q->m, x) < 0)
			mp_fetch_mirror_busy(f, q->m, e.msg);
	}
	mp_fetch_xfer_cleanup(x);
	mp_fetch_job_free(q->job);
	free(q);
}

/* A hashed run: chunks held, or asked for again from another mirror. */
static enum mp_err hashed(struct fetch *f, struct mp_fetch_job *j, struct mp_error *err)
{
	struct fetch_mirror *m = &f->mirrors[j->mirror];
	enum mp_err rc = j->rc;

	/* a write that failed: the run's chunks asked for again (a fetch ends
	 * here; a mount from mirrors goes on) */
	for (uint64_t i = 0; rc != MP_OK && i < j->count; i++)
		mp_fetch_plan_missing(&f->plan, j->first + i);
	if (rc)
		*err = j->err;
	for (uint64_t i = 0; rc == MP_OK && i < j->count; i++) {
		uint64_t c = j->first + i;

		if (j->ok[i]) {
			mp_fetch_plan_held(&f->plan, c);
			mp_fetch_record_chunk(f, c);
			m->rep->chunks_good++;
			f->res->chunks_fetched++;
			if (f->driver)
				f->driver->chunk(f->driver->arg, c, true);
			continue;
		}
		f->bad_mask[c] |= 1ull << j->mirror;
		mp_fetch_plan_missing(&f->plan, c);
		m->rep->chunks_bad++;
		f->res->chunks_refetched++;
		if (f->driver)
			f->driver->chunk(f->driver->arg, c, false);
	}
	if (rc == MP_OK && j->failed) {
		char why[160];

		snprintf(why, sizeof why, "%" PRIu64 " chunks did not match the seal", j->failed);
		mp_fetch_mirror_failed(f, m, why);
		/* a mount serves readers who wait: a mirror that lied once is not
		 * asked again (a fetch allows MP_FETCH_DROP_AFTER in a row) */
		if (f->driver)
			mp_fetch_mirror_drop(f, m, why);
	} else if (rc == MP_OK) {
		m->fails_in_row = 0;
		m->backoff_level = 0;
	}
	mp_fetch_job_free(j);
	return rc;
}

static void progress(struct fetch *f, bool force)
{
	struct mp_fetch_progress p = {0};
	double now = mp_fetch_now();

	if (!f->o->progress || (!force && now - f->last_progress < 0.5))
		return;
	f->last_progress = now;
	p.done_bytes = f->plan.held_bytes;
	p.total_bytes = f->seal->pack_size;
	p.seconds = now - f->t0;
	p.fetched_bytes = f->res->bytes_fetched;
	p.refetched_chunks = f->res->chunks_refetched;
	for (size_t i = 0; i < f->nmirrors; i++)
		p.mirrors_active += f->mirrors[i].usable;
	f->o->progress(&p, f->o->progress_arg);
}

unsigned mp_fetch_usable_mirrors(const struct fetch *f)
{
	unsigned n = 0;

	for (size_t i = 0; i < f->nmirrors; i++)
		n += f->mirrors[i].usable;
	return n;
}

/* One turn of the loop: results, new requests, curl's work (waiting at
 * most wait_ms).  A mount from mirrors waits for a mirror to come back
 * where a fetch ends with none left. */
enum mp_err mp_fetch_engine_turn(struct fetch *f, unsigned *in_flight, int wait_ms,
				 struct mp_error *err)
{
	struct mp_fetch_job *j;
	CURLMsg *msg;
	int running, left;
	enum mp_err rc = MP_OK;

	while (rc == MP_OK && (j = mp_fetch_hashq_pop(f->hq, false)))
		rc = hashed(f, j, err);
	if (rc == MP_OK && !f->paused_mid && f->plan.held * 2 >= f->plan.chunk_count) {
		f->paused_mid = true;
		rc = mp_fetch_test_pause(f, "transfer", err);
	}
	if (rc == MP_OK)
		rc = fill(f, in_flight, err);
	if (rc == MP_OK && !f->driver && mp_fetch_usable_mirrors(f) == 0)
		rc = mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: no mirror left (each was "
			     "refused or dropped: see above)");
	if (rc)
		return rc;
	curl_multi_perform(f->multi, &running);
	while ((msg = curl_multi_info_read(f->multi, &left)))
		if (msg->msg == CURLMSG_DONE) {
			finished(f, msg);
			(*in_flight)--;
		}
	if (!mp_fetch_plan_done(&f->plan))
		curl_multi_poll(f->multi, NULL, 0, wait_ms, NULL);
	progress(f, false);
	return mp_cancel_check(f->o->cancel, err, "fetching %s", f->partial);
}

enum mp_err mp_fetch_engine_begin(struct fetch *f, struct mp_error *err)
{
	unsigned conns = f->o->connections ? f->o->connections : MP_FETCH_DEFAULT_CONNECTIONS;

	f->bad_mask = calloc((size_t)f->plan.chunk_count + 1, sizeof *f->bad_mask);
	if (!f->bad_mask)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	/* runs in flight and being hashed: at most 2 * conns (fill()) */
	return mp_fetch_hashq_pool(f->hq, f->plan.max_bytes, 2 * conns, err);
}

/* What is still in flight after a failure or a stop is abandoned. */
void mp_fetch_engine_abandon(struct fetch *f)
{
	while (f->reqs) {
		struct req *q = f->reqs;

		unlink_req(f, q);
		curl_multi_remove_handle(f->multi, q->x.h);
		mp_fetch_xfer_cleanup(&q->x);
		mp_fetch_job_free(q->job);
		free(q);
	}
}

enum mp_err mp_fetch_engine(struct fetch *f, struct mp_error *err)
{
	unsigned in_flight = 0;
	enum mp_err rc = mp_fetch_engine_begin(f, err);

	while (rc == MP_OK && !(mp_fetch_plan_done(&f->plan) && in_flight == 0))
		rc = mp_fetch_engine_turn(f, &in_flight, 100, err);
	progress(f, true);
	mp_fetch_engine_abandon(f);
	return rc;
}
