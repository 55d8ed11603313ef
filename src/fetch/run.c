/*
 * run.c - a fetch from start to end (fetch.h): set-up, the root of
 * trust, and the finished pack put in place with its files.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/outfile.h"
#include "fetch/fetch_internal.h"
#include "fetch/trust.h"
#include "seal/sign.h"

enum mp_err mp_fetch_global_init(struct mp_error *err)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return mp_fail(err, MP_E_NOMEM, "cannot set up libcurl");
	return MP_OK;
}

void mp_fetch_global_cleanup(void)
{
	curl_global_cleanup();
}

/* Every request is bounded: a reply slower than this is ended, also when
 * the caller gives no --low-speed of its own. */
#define LOW_SPEED_DEFAULT 1024
#define LOW_SPEED_TIME_DEFAULT 30

static void wake(void *arg)
{
	struct fetch *f = arg;

	if (f->multi)
		curl_multi_wakeup(f->multi);
}

enum mp_err mp_fetch_setup(struct fetch *f, struct mp_error *err)
{
	const struct mp_fetch_opts *o = f->o;
	unsigned conns = o->connections ? o->connections : MP_FETCH_DEFAULT_CONNECTIONS;

	if (o->nsources == 0 || o->nsources > MP_FETCH_MAX_MIRRORS)
		return mp_fail(err, MP_E_USAGE, "invalid usage: give 1 to %d sources",
			       MP_FETCH_MAX_MIRRORS);
	f->net = (struct mp_fetch_net){.low_speed = o->low_speed ? o->low_speed
								   : LOW_SPEED_DEFAULT,
				       .low_speed_time = o->low_speed_time > 0 ? o->low_speed_time
									       : LOW_SPEED_TIME_DEFAULT,
				       .max_rate = o->max_rate ? (o->max_rate + conns - 1) / conns : 0,
				       .s3_key_id = o->s3_key_id, .s3_secret = o->s3_secret,
				       .s3_token = o->s3_token, .s3_key_from = o->s3_key_from,
				       .ca_file = o->ca_file, .ca_path = o->ca_path};
	for (size_t i = 0; i < o->nsources; i++) {
		struct fetch_mirror *m = &f->mirrors[f->nmirrors++];
		enum mp_err rc = mp_fetch_source_parse(o->sources[i], &o->s3, &m->src, err);

		if (rc)
			return rc;
		m->rep = &f->res->mirrors[i];
		m->usable = true;
		snprintf(m->rep->source, sizeof m->rep->source, "%s", m->src.given);
	}
	f->res->nmirrors = f->nmirrors;
	f->out = strdup(o->out);
	f->partial = mp_path_with_suffix(o->out, ".partial");
	f->state = mp_path_with_suffix(o->out, ".partial.state");
	f->lock = mp_path_with_suffix(o->out, ".lock");
	f->manifest_out = mp_pack_default_manifest_path(o->out);
	if (!f->out || !f->partial || !f->state || !f->lock || !f->manifest_out)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	return MP_OK;
}

static enum mp_err write_beside(struct fetch *f, const char *suffix, const struct fetch_blob *b,
				struct mp_error *err)
{
	char *path = mp_path_with_suffix(f->out, suffix);
	enum mp_err rc = path ? mp_output_write_atomic(path, MP_TMP_PRIVATE, MP_E_SEAL_IO, b->data,
						       b->len, err)
			      : mp_fail(err, MP_E_NOMEM, "out of memory");

	free(path);
	return rc;
}

/* The manifest (its pack path now OUT's absolute name), seal, statement
 * and signature beside OUT. */
static enum mp_err write_sidecars(struct fetch *f, struct mp_error *err)
{
	char *dir = NULL, *real = NULL, *abs = NULL, *text = NULL;
	const char *base;
	size_t len = 0;
	enum mp_err rc;

	mp_path_split(f->out, &dir, &base);
	real = dir ? realpath(dir, NULL) : NULL;
	abs = real ? mp_path_join(real, base) : NULL;
	rc = abs ? mp_fetch_manifest_with_path(f, abs, &text, &len, err)
		 : mp_fail(err, MP_E_PACK_IO, "cannot write %s: its directory does not resolve",
			   f->out);
	if (rc == MP_OK)
		rc = mp_output_write_atomic(f->manifest_out, MP_TMP_PRIVATE, MP_E_PACK_IO, text, len,
					    err);
	if (rc == MP_OK)
		rc = write_beside(f, MP_SEAL_SUFFIX, &f->seal_raw, err);
	if (rc == MP_OK && f->statement.data && f->sig.data)
		rc = write_beside(f, MP_STATEMENT_SUFFIX, &f->statement, err);
	if (rc == MP_OK && f->statement.data && f->sig.data)
		rc = write_beside(f, MP_SIG_SUFFIX, &f->sig, err);
	free(dir);
	free(real);
	free(abs);
	free(text);
	return rc;
}

/* Every chunk passed: OUT in place, opened again as a mount would. */
enum mp_err mp_fetch_finish(struct fetch *f, struct mp_error *err)
{
	struct mp_seal_layout l;
	enum mp_err rc;

	mp_pack_close(f->pack);
	f->pack = NULL;
	if ((rc = mp_fetch_test_pause(f, "written", err)))
		return rc;
	if (fsync(f->fd) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: fsync failed", f->partial);
	if ((rc = write_sidecars(f, err)))
		return rc;
	if (rename(f->partial, f->out) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot rename %s to %s", f->partial, f->out);
	f->res->renamed = true;
	if ((rc = mp_fetch_test_pause(f, "renamed", err)))
		return rc;
	unlink(f->state);
	if ((rc = mp_pack_open(&f->pack, f->out, NULL, err)) ||
	    (rc = mp_seal_layout_of_pack(&l, f->pack, f->seal->chunk_size, err)))
		return rc;
	rc = mp_seal_bind(f->seal, f->pack, &l, err);
	mp_seal_layout_free(&l);
	if (rc == MP_OK && f->o->ntrust && f->statement.data)
		rc = mp_trust_check(f->pack, f->seal, f->o->trust_keys, f->o->ntrust, err);
	return rc;
}

enum mp_err mp_fetch_transfer_start(struct fetch *f, struct mp_error *err)
{
	unsigned threads = f->o->hash_threads ? f->o->hash_threads
					      : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	enum mp_err rc;

	if (!(f->multi = curl_multi_init()))
		return mp_fail(err, MP_E_NOMEM, "out of memory (curl_multi_init)");
	if ((rc = mp_fetch_hashq_start(&f->hq, threads, f->seal, f->plan.bound, f->fd, f->partial,
				       wake, f, err)))
		return rc;
	mp_fetch_hashq_direct(f->hq, f->direct_fd);
	return MP_OK;
}

static enum mp_err transfer(struct fetch *f, struct mp_error *err)
{
	enum mp_err rc;

	if ((rc = mp_fetch_transfer_start(f, err)) || (rc = mp_fetch_resume_check(f, err)))
		return rc;
	f->t0 = mp_fetch_now();
	return mp_fetch_engine(f, err);
}

void mp_fetch_release(struct fetch *f)
{
	mp_fetch_hashq_stop(f->hq);
	if (f->multi)
		curl_multi_cleanup(f->multi);
	mp_pack_close(f->pack);
	if (f->have_layout)
		mp_seal_layout_free(&f->layout);
	mp_fetch_plan_free(&f->plan);
	mp_seal_free(f->seal);
	mp_fetch_blob_free(&f->manifest);
	mp_fetch_blob_free(&f->seal_raw);
	mp_fetch_blob_free(&f->statement);
	mp_fetch_blob_free(&f->sig);
	mp_fetch_local_close(f);
	free(f->bad_mask);
	free(f->out);
	free(f->partial);
	free(f->state);
	free(f->lock);
	free(f->manifest_out);
}

enum mp_err mp_fetch_run(const struct mp_fetch_opts *o, struct mp_fetch_result *res,
			 struct mp_error *err)
{
	struct fetch *f = calloc(1, sizeof *f);
	double t0 = mp_fetch_now();
	enum mp_err rc;

	memset(res, 0, sizeof *res);
	res->trusted_by = "nothing";
	if (!f)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	f->o = o;
	f->res = res;
	f->fd = f->state_fd = f->lock_fd = f->direct_fd = -1;
	if (!(rc = mp_fetch_setup(f, err)) && !(rc = mp_fetch_mirrors_open(f, err)) &&
	    !(rc = mp_fetch_local_open(f, err)) &&
	    !(rc = mp_fetch_test_pause(f, "partial", err)) && !(rc = mp_fetch_head(f, err)) &&
	    !(rc = transfer(f, err)))
		rc = mp_fetch_finish(f, err);
	res->chunk_count = f->seal ? f->seal->chunk_count : 0;
	res->pack_path = f->out ? strdup(f->out) : NULL;
	res->manifest_path = f->manifest_out ? strdup(f->manifest_out) : NULL;
	res->seconds = mp_fetch_now() - t0;
	mp_fetch_release(f);
	free(f);
	return rc;
}

void mp_fetch_result_free(struct mp_fetch_result *res)
{
	free(res->pack_path);
	free(res->manifest_path);
	res->pack_path = res->manifest_path = NULL;
}
