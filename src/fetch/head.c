/*
 * head.c - step 4 of a fetch (fetch.h): the header and index first,
 * checked chunk by chunk, then the pack opened from them as a loader
 * would, its seal bound to it and the plan of the rest made.
 *
 * The seal's chunks of the head start at byte 0 and are chunk_size long
 * up to the first object (seal.h), which the manifest's data_start names;
 * so the head can be checked before the index that lays out the other
 * chunks is known, and a wrong data_start fails the check.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/file.h"
#include "fetch/fetch_internal.h"
#include "pack/manifestpath.h"

#define HEAD_MAX (256u << 20)

/* data_start from the manifest: expert_pack's, else the top level's. */
static enum mp_err data_start(const struct fetch *f, uint64_t *out, struct mp_error *err)
{
	json_t *root = json_loadb((const char *)f->manifest.data, f->manifest.len, 0, NULL);
	json_t *v = json_object_get(json_object_get(root, "expert_pack"), "data_start");

	if (!v)
		v = json_object_get(root, "data_start");
	*out = json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
	json_decref(root);
	if (*out == 0 || *out > f->seal->pack_size || *out > HEAD_MAX)
		return mp_fail(err, MP_E_MANIFEST_VALUE, "invalid manifest value: the manifest "
			       "gives no usable data_start (the head's end, at most %u bytes)",
			       HEAD_MAX);
	return MP_OK;
}

enum mp_err mp_fetch_manifest_with_path(const struct fetch *f, const char *path, char **out,
					size_t *out_len, struct mp_error *err)
{
	static const char *const keys[] = {"expert_pack.path", "pack_path"};
	const char *m = (const char *)f->manifest.data;
	struct mp_text_span span;

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (mp_manifest_key_span(m, f->manifest.len, "manifest", keys[i], &span, NULL) ==
		    MP_OK)
			return mp_manifest_splice_path(m, f->manifest.len, &span, path, out,
						       out_len, err);
	return mp_fail(err, MP_E_MANIFEST_MISSING, "manifest is missing a required key: no "
		       "expert_pack.path or pack_path");
}

/* How many chunks of buf[0..len) (the head, chunks of chunk_size from 0)
 * match the seal, from the first on. */
static uint64_t head_good(const struct fetch *f, const unsigned char *buf, uint64_t len)
{
	uint64_t c = 0, C = f->seal->chunk_size;

	for (uint64_t at = 0; at < len; at += C, c++) {
		unsigned char d[MP_SHA256_LEN];
		uint64_t n = len - at < C ? len - at : C;

		mp_sha256_buf(buf + at, (size_t)n, d);
		if (!mp_seal_digest_ok(f->seal, c, d))
			break;
	}
	return c;
}

enum mp_err mp_fetch_get_range(struct fetch *f, struct fetch_mirror *m, uint64_t offset,
			       uint64_t len, unsigned char *buf, struct mp_error *err)
{
	struct mp_fetch_xfer x;
	enum mp_err rc = mp_fetch_xfer_setup(&x, &m->src, m->src.url, &f->net, buf, offset, len,
					     len, false, err);

	if (rc == MP_OK && mp_fetch_perform(f, m, &x, m->src.given, err) != MP_FETCH_GOOD)
		rc = err->code;
	m->rep->bytes += x.got;
	f->res->bytes_fetched += x.got;
	mp_fetch_xfer_cleanup(&x);
	return rc;
}

/* The head into buf from the first mirror that sends it right: the usable
 * mirrors in turn, until one does or none is left (each is dropped after
 * MP_FETCH_DROP_AFTER failures in a row, so this ends). */
static enum mp_err fetch_head(struct fetch *f, unsigned char *buf, uint64_t len,
			      uint64_t chunks, struct mp_error *err)
{
	struct mp_error e = {MP_E_FETCH_CHUNK, ""};
	bool any = true;

	while (any) {
		any = false;
		for (size_t i = 0; i < f->nmirrors; i++) {
			struct fetch_mirror *m = &f->mirrors[i];
			enum mp_err rc;

			if (!m->usable)
				continue;
			any = true;
			rc = mp_fetch_get_range(f, m, 0, len, buf, &e);
			if (rc == MP_E_INTERRUPTED || rc == MP_E_NOMEM || rc == MP_E_USAGE)
				return *err = e, rc;
			if (rc != MP_OK) {
				if (m->backoff_level >= MP_FETCH_MAX_BACKOFFS)
					mp_fetch_mirror_drop(f, m, e.msg);
				else
					mp_fetch_mirror_failed(f, m, e.msg);
				continue;
			}
			if (head_good(f, buf, len) == chunks) {
				m->fails_in_row = 0;
				return MP_OK;
			}
			m->rep->chunks_bad++;
			mp_fail(&e, MP_E_FETCH_CHUNK, "%s: the pack's head (chunk %" PRIu64 ") from "
				"%s does not match the seal", mp_err_summary(MP_E_FETCH_CHUNK),
				head_good(f, buf, len), m->src.given);
			/* a mirror that sends a bad head will again: not asked twice */
			mp_fetch_mirror_drop(f, m, e.msg);
		}
	}
	if (e.code == MP_E_FETCH_MIRROR || !e.msg[0])
		mp_fail(&e, MP_E_FETCH_MIRROR, "mirror failed: no mirror left (each was refused "
			"or dropped: see above)");
	return *err = e, e.code;
}

/* The head in the partial: kept when a resumed run's passes again. */
static enum mp_err place_head(struct fetch *f, uint64_t len, uint64_t *chunks,
			      struct mp_error *err)
{
	unsigned char *buf = malloc((size_t)len);
	enum mp_err rc = MP_OK;

	*chunks = (len + f->seal->chunk_size - 1) / f->seal->chunk_size;
	if (!buf)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	if (!(f->resumed && mp_pread_all(f->fd, buf, (size_t)len, 0, NULL) == 0 &&
	      head_good(f, buf, len) == *chunks)) {
		rc = fetch_head(f, buf, len, *chunks, err);
		if (rc == MP_OK)
			rc = mp_pwrite_full(f->fd, buf, (size_t)len, 0, f->partial, err);
		if (rc == MP_OK)
			f->res->chunks_fetched += *chunks;
	} else {
		f->res->chunks_kept += *chunks;
	}
	free(buf);
	return rc;
}

/* The pack opened from the partial, the manifest pointing at it. */
static enum mp_err open_partial(struct fetch *f, struct mp_error *err)
{
	char *real = realpath(f->partial, NULL), *text = NULL;
	size_t len = 0;
	struct mp_open_opts o = {.manifest_path = f->manifest_out};
	enum mp_err rc = real ? mp_fetch_manifest_with_path(f, real, &text, &len, err)
			      : mp_fail(err, MP_E_PACK_IO, "cannot resolve %s", f->partial);

	o.manifest_text = text;
	o.manifest_text_len = len;
	o.cancel = f->o->cancel;
	if (rc == MP_OK)
		rc = mp_pack_open(&f->pack, f->partial, &o, err);
	free(real);
	free(text);
	return rc;
}

/* Runs of at most run_bytes (16 MiB), fewer bytes a run when the
 * connections would hold over MP_FETCH_RUN_MEMORY at once, but never
 * under a chunk; a small pack still cut into four runs a connection, so
 * that every connection has work. */
static uint64_t run_bytes(const struct fetch *f)
{
	uint64_t max = f->o->run_bytes ? f->o->run_bytes : MP_FETCH_RUN_BYTES;
	unsigned conns = f->o->connections ? f->o->connections : MP_FETCH_DEFAULT_CONNECTIONS;
	uint64_t share = f->seal->pack_size / (4u * conns);
	uint64_t budget = MP_FETCH_RUN_MEMORY / (2u * conns);

	if (!f->o->run_bytes && budget < max)
		max = budget;
	if (share > max)
		share = max;
	return share < f->seal->chunk_size ? f->seal->chunk_size : share;
}

enum mp_err mp_fetch_head(struct fetch *f, struct mp_error *err)
{
	uint64_t len, chunks;
	enum mp_err rc;

	if ((rc = data_start(f, &len, err)) || (rc = place_head(f, len, &chunks, err)) ||
	    (rc = open_partial(f, err)))
		return rc;
	if ((rc = mp_seal_layout_of_pack(&f->layout, f->pack, f->seal->chunk_size, err)))
		return rc;
	f->have_layout = true;
	if ((rc = mp_seal_bind(f->seal, f->pack, &f->layout, err)))
		return rc;
	if (f->layout.head_chunks != chunks)
		return mp_fail(err, MP_E_SEAL_MISMATCH, "seal is not this pack's: the manifest's "
			       "data_start is not where the first object starts");
	rc = mp_fetch_plan_init(&f->plan, &f->layout, run_bytes(f), err);
	for (uint64_t c = 0; rc == MP_OK && c < chunks; c++) {
		mp_fetch_plan_held(&f->plan, c);
		mp_fetch_record_chunk(f, c);
	}
	return rc;
}
