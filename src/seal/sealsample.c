/*
 * sealsample.c - a few chunks hashed before a seal is used (sealsample.h).
 */
#include "config.h"

#include "seal/sealsample.h"

#include <inttypes.h>
#include <stdlib.h>

#include "base/file.h"
#include "pack/digest.h"

#define BUF (1u << 20)

/* The SHA-256 of chunk c, read in pieces of BUF bytes. */
static enum mp_err hash_chunk(const struct mp_seal_layout *l, const struct mp_pack *pack,
			      int fd, uint64_t c, unsigned char *buf,
			      unsigned char out[MP_SHA256_LEN], struct mp_error *err)
{
	struct mp_seal_chunk ch;
	struct mp_sha256 *h = mp_sha256_new();
	enum mp_err rc = MP_OK;

	if (!h)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	mp_seal_chunk_get(l, c, &ch);
	for (uint64_t at = 0; rc == MP_OK && at < ch.len;) {
		size_t n = ch.len - at < BUF ? (size_t)(ch.len - at) : BUF;

		rc = mp_pread_full(fd, buf, n, ch.offset + at, "pack", pack->file.path,
				   MP_E_PACK_IO, err);
		mp_sha256_update(h, buf, n);
		at += n;
	}
	mp_sha256_final(h, out);
	mp_sha256_free(h);
	return rc;
}

enum mp_err mp_seal_sample(const struct mp_seal *s, const struct mp_seal_layout *l,
			   const struct mp_pack *pack, int fd, struct mp_error *err)
{
	uint64_t n = l->object_count, picks = n < MP_SEAL_SAMPLES ? n : MP_SEAL_SAMPLES;
	unsigned char *buf, got[MP_SHA256_LEN];
	enum mp_err rc = MP_OK;
	bool matched = picks == 0;

	buf = malloc(BUF);
	if (!buf)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (uint64_t k = 0; rc == MP_OK && !matched && k < picks; k++) {
		/* first, last and evenly between: k * (n - 1) / (picks - 1) */
		uint64_t obj = picks < 2 ? 0 : k * (n - 1) / (picks - 1);
		uint64_t c = l->object_first[obj];

		rc = hash_chunk(l, pack, fd, c, buf, got, err);
		matched = rc == MP_OK && mp_seal_digest_ok(s, c, got);
	}
	free(buf);
	if (rc == MP_OK && !matched)
		rc = mp_fail(err, MP_E_SEAL_MISMATCH, "seal is not this pack's: none of the "
			     "%" PRIu64 " chunks sampled across the pack matches its sealed "
			     "digest (a seal of other bytes)", picks);
	return rc;
}
