/*
 * mirrors.c - step 1 of a fetch (fetch.h): every mirror's manifest, seal,
 * statement, signature and pack size, each mirror compared with the
 * first that answered.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/fetch_internal.h"
#include "fetch/trust.h"
#include "pack/mjson.h"
#include "seal/sign.h"

void mp_fetch_blob_free(struct fetch_blob *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

enum mp_fetch_verdict mp_fetch_perform(struct fetch *f, struct fetch_mirror *m,
				       struct mp_fetch_xfer *x, const char *who,
				       struct mp_error *err)
{
	for (;;) {
		enum mp_fetch_verdict v = mp_fetch_judge(x, curl_easy_perform(x->h), who, err);
		double wait;

		if (v == MP_FETCH_GOOD)
			m->backoff_level = 0;
		if (v != MP_FETCH_LATER)
			return v;
		if ((wait = mp_fetch_back_off(m, x)) < 0) {
			char last[MP_MSG_MAX];

			snprintf(last, sizeof last, "%s", err->msg);
			mp_fail_escaped(err, MP_E_FETCH_MIRROR, "%s (busy %u times in a row)", last,
				m->backoff_level);
			return MP_FETCH_BAD;
		}
		mp_cancel_sleep_ms(f->o->cancel, (long)(wait * 1000.0));
		if (mp_cancel_check(f->o->cancel, err, "waiting for %s", who))
			return MP_FETCH_BAD;
		x->got = 0;
		x->overflow = false;
	}
}

enum mp_err mp_fetch_get_blob(struct fetch *f, struct fetch_mirror *m, const char *suffix,
			      size_t cap, bool optional, struct fetch_blob *b,
			      struct mp_error *err)
{
	char url[MP_FETCH_URL_MAX + 32], who[MP_FETCH_URL_MAX + 64];
	struct mp_fetch_xfer x;
	enum mp_fetch_verdict v;
	enum mp_err rc;

	b->data = NULL;
	b->len = 0;
	if (!mp_fetch_source_beside(&m->src, suffix, url, sizeof url))
		return mp_fail(err, MP_E_USAGE, "invalid usage: source %s: URL too long",
			       m->src.given);
	snprintf(who, sizeof who, "%s (PACK%s)", m->src.given, suffix);
	rc = mp_fetch_xfer_setup(&x, &m->src, url, &f->net, NULL, 0, 0, cap, false, err);
	if (rc == MP_OK) {
		v = mp_fetch_perform(f, m, &x, who, err);
		rc = v == MP_FETCH_GOOD ? MP_OK : err->code;
		if (v == MP_FETCH_ABSENT && optional)
			rc = MP_OK;
		else if (v == MP_FETCH_GOOD) {
			b->data = x.buf;
			b->len = (size_t)x.got;
			x.buf = NULL;
		}
	}
	mp_fetch_xfer_cleanup(&x);
	return rc;
}

/* The pack's size on mirror m (a HEAD, or what file:// reports). */
static enum mp_err pack_size(struct fetch *f, struct fetch_mirror *m, uint64_t *size,
			     struct mp_error *err)
{
	struct mp_fetch_xfer x;
	curl_off_t len = -1;
	enum mp_err rc = mp_fetch_xfer_setup(&x, &m->src, m->src.url, &f->net, NULL, 0, 0, 0,
					     true, err);

	if (rc == MP_OK && mp_fetch_perform(f, m, &x, m->src.given, err) != MP_FETCH_GOOD)
		rc = err->code;
	if (rc == MP_OK && (curl_easy_getinfo(x.h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len) ||
			    len < 0))
		rc = mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: it gives no size for "
			     "the pack", m->src.given);
	*size = (uint64_t)len;
	mp_fetch_xfer_cleanup(&x);
	return rc;
}

struct sidecars {
	struct fetch_blob manifest, seal, statement, sig;
	uint64_t size;
};

static void sidecars_free(struct sidecars *s)
{
	mp_fetch_blob_free(&s->manifest);
	mp_fetch_blob_free(&s->seal);
	mp_fetch_blob_free(&s->statement);
	mp_fetch_blob_free(&s->sig);
}

static enum mp_err get_sidecars(struct fetch *f, struct fetch_mirror *m, struct sidecars *s,
				struct mp_error *err)
{
	enum mp_err rc;

	memset(s, 0, sizeof *s);
	if ((rc = mp_fetch_get_blob(f, m, ".manifest.json", MP_MANIFEST_MAX, false,
				    &s->manifest, err)) ||
	    (rc = mp_fetch_get_blob(f, m, MP_SEAL_SUFFIX,
				    MP_SEAL_HEADER_SIZE + MP_SEAL_MAX_TABLE + MP_SHA256_LEN, false,
				    &s->seal, err)) ||
	    (rc = mp_fetch_get_blob(f, m, MP_STATEMENT_SUFFIX, MP_STATEMENT_MAX, true,
				    &s->statement, err)) ||
	    (rc = mp_fetch_get_blob(f, m, MP_SIG_SUFFIX, 4 * MP_ED25519_SIG_LEN, true, &s->sig,
				    err)))
		return rc;
	return pack_size(f, m, &s->size, err);
}

static bool same(const struct fetch_blob *a, const struct fetch_blob *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* Mirror m against the first: the one line of a refusal, or NULL. */
static const char *differs(struct fetch *f, const struct sidecars *s)
{
	if (s->size != f->seal->pack_size)
		return "its pack's size differs from the first mirror's";
	if (!same(&s->manifest, &f->manifest))
		return "its manifest differs from the first mirror's";
	if (!same(&s->seal, &f->seal_raw))
		return "its seal differs from the first mirror's";
	return NULL;
}

/* The first mirror's files become the fetch's, its seal parsed. */
static enum mp_err adopt(struct fetch *f, struct fetch_mirror *m, struct sidecars *s,
			 struct mp_error *err)
{
	char what[MP_FETCH_URL_MAX + 32];
	enum mp_err rc;

	snprintf(what, sizeof what, "seal from %s", m->src.given);
	rc = mp_seal_parse(&f->seal, s->seal.data, s->seal.len, what, err);
	if (rc == MP_OK && s->size != f->seal->pack_size)
		rc = mp_fail(err, MP_E_SEAL_MISMATCH, "seal is not this pack's: %s: the pack is "
			     "%" PRIu64 " bytes, the seal's %" PRIu64, m->src.given, s->size,
			     f->seal->pack_size);
	if (rc != MP_OK) {
		mp_seal_free(f->seal);
		f->seal = NULL;
		return rc;
	}
	f->manifest = s->manifest;
	f->seal_raw = s->seal;
	f->statement = s->statement;
	f->sig = s->sig;
	f->res->pack_size = s->size;
	f->origin = m;
	memset(s, 0, sizeof *s);
	return MP_OK;
}

static void refuse(struct fetch *f, struct fetch_mirror *m, const char *why)
{
	m->usable = false;
	m->rep->refused = true;
	snprintf(m->rep->why, sizeof m->rep->why, "%s", why);
	mp_fetch_note(f, "mirror %s refused: %s", m->src.given, why);
}

/* The files adopted from a mirror the root of trust refused, let go. */
static void unadopt(struct fetch *f)
{
	mp_seal_free(f->seal);
	f->seal = NULL;
	mp_fetch_blob_free(&f->manifest);
	mp_fetch_blob_free(&f->seal_raw);
	mp_fetch_blob_free(&f->statement);
	mp_fetch_blob_free(&f->sig);
	f->res->pack_size = 0;
	f->origin = NULL;
}

/* Whether a failure to adopt a mirror's files is the whole fetch's (the
 * user's keys or options, memory) rather than that mirror's. */
static bool fatal(enum mp_err rc)
{
	return rc == MP_E_FETCH_TRUST || rc == MP_E_KEY || rc == MP_E_USAGE || rc == MP_E_NOMEM;
}

/* Step 2, the root of trust, checked on the first mirror that serves the
 * sidecars (moved here from run.c when i27-faults was merged: run.c calls
 * this file, so it may not be called back). */
enum mp_err mp_fetch_trust(struct fetch *f, struct mp_error *err)
{
	const struct mp_fetch_opts *o = f->o;
	enum mp_err rc = MP_OK;

	mp_sha256_hex(f->seal->seal_digest, f->res->seal_sha256);
	f->res->trusted_by = "nothing";
	if (o->expect_seal_sha256) {
		rc = mp_fetch_trust_seal_digest(f->seal, o->expect_seal_sha256,
						f->origin ? f->origin->src.given
							  : f->res->mirrors[0].source, err);
		f->res->trusted_by = "seal digest";
	}
	if (rc == MP_OK && o->ntrust) {
		rc = mp_fetch_trust_statement(f->seal, (const char *)f->manifest.data,
					      f->manifest.len, (const char *)f->statement.data,
					      f->statement.len, f->sig.data, f->sig.len,
					      o->trust_keys, o->ntrust, err);
		f->res->trusted_by = "signature";
	}
	if (rc == MP_OK && !o->expect_seal_sha256 && !o->ntrust && !o->unverified_origin)
		return mp_fail(err, MP_E_FETCH_TRUST, "%s: give --trust PUB[:PUB...] (a key that "
			       "signed the seal and manifest) or --expect-seal-sha256 HEX (the "
			       "seal's digest) (or --unverified-origin)",
			       mp_err_summary(MP_E_FETCH_TRUST));
	f->res->origin_proven = rc == MP_OK && (o->expect_seal_sha256 || o->ntrust);
	return rc;
}

/*
 * The first mirror whose files pass the root of trust is the one every
 * other is compared with: a mirror that serves a manifest, seal or
 * signature the root refuses is refused, and the next one tried, so a
 * hostile first mirror costs nothing.  Its note is deferred until a
 * mirror passes: when none does, the one line is the first refusal's
 * error, not a note per mirror and an error.
 */
enum mp_err mp_fetch_mirrors_open(struct fetch *f, struct mp_error *err)
{
	struct mp_error last = {MP_E_FETCH_MIRROR, "mirror failed: no mirror answered"};
	struct mp_error untrusted = {MP_OK, ""};
	size_t deferred[MP_FETCH_MAX_MIRRORS], ndeferred = 0;

	for (size_t i = 0; i < f->nmirrors; i++) {
		struct fetch_mirror *m = &f->mirrors[i];
		struct sidecars s;
		struct mp_error e;
		const char *why = NULL;
		enum mp_err rc = mp_cancel_check(f->o->cancel, err, "asking %s", m->src.given);

		if (rc)
			return rc;
		rc = get_sidecars(f, m, &s, &e);
		if (rc == MP_E_INTERRUPTED) {
			sidecars_free(&s);
			return *err = e, rc;
		}
		if (rc == MP_OK && !f->seal) {
			rc = adopt(f, m, &s, &e);
			if (rc == MP_OK && (rc = mp_fetch_trust(f, &e)) != MP_OK)
				unadopt(f);
			if (rc != MP_OK && rc != MP_E_FETCH_MIRROR) {
				sidecars_free(&s);
				if (fatal(rc))
					return *err = e, rc;
				if (!untrusted.code)
					untrusted = e;
				m->usable = false;
				m->rep->refused = true;
				snprintf(m->rep->why, sizeof m->rep->why, "%s", e.msg);
				deferred[ndeferred++] = i;
				continue;
			}
			for (size_t k = 0; rc == MP_OK && k < ndeferred; k++)
				mp_fetch_note(f, "mirror %s refused: %s",
					      f->mirrors[deferred[k]].src.given,
					      f->mirrors[deferred[k]].rep->why);
		}
		if (rc == MP_OK && f->seal && s.seal.data)
			why = differs(f, &s);
		if (rc != MP_OK)
			last = e, refuse(f, m, e.msg);
		else if (why)
			refuse(f, m, why);
		sidecars_free(&s);
	}
	if (!f->seal && untrusted.code)
		return *err = untrusted, untrusted.code;
	if (!f->seal)
		return *err = last, last.code;
	return MP_OK;
}
