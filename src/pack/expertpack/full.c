/*
 * epfull.c - the whole pack read once: its SHA-256 against the manifest's
 * pack_sha256 (the runtime's step 13, verify_pack_sha256) and, from the
 * same bytes, every role's SHA-256 against its entry's checksum (what the
 * offline validator's --full adds).  The first is reported at once; the
 * second after the stricter checks, where the offline validator has it.
 */
#include "config.h"

#include <string.h>

#include "pack/expertpack/check.h"
#include "pack/mjson.h"
#include "pack/readahead.h"

struct full {
	struct mp_epcheck *c;
	struct mp_sha256 *whole, *role;
	uint64_t slot; /* the role being hashed, in file order */
};

/* The role just hashed against its checksum; the first miss is kept. */
static void role_done(struct full *f)
{
	struct mp_epcheck *c = f->c;
	unsigned char d[MP_SHA256_LEN];

	mp_sha256_final(f->role, d);
	if (c->bad_digest_slot == MP_EP_NONE &&
	    memcmp(d, c->ep->role[f->slot].checksum, sizeof d) != 0) {
		c->bad_digest_slot = f->slot;
		memcpy(c->bad_digest, d, sizeof d);
	}
	f->slot++;
}

/* Bytes [pos, pos + len) of the file: to the whole digest, and each part
 * inside a role to that role's. */
static enum mp_err consume(const unsigned char *buf, size_t len, uint64_t pos, void *arg,
			   struct mp_error *err)
{
	struct full *f = arg;
	const struct mp_ep *ep = f->c->ep;
	uint64_t end = pos + len;

	mp_sha256_update(f->whole, buf, len);
	while (f->slot < ep->index_count) {
		uint64_t start, n, from, to;

		mp_ep_role_range(ep, f->slot / MP_EP_ROLES, f->slot % MP_EP_ROLES, &start, &n);
		from = start > pos ? start : pos;
		to = start + n < end ? start + n : end;
		if (from >= end)
			break;
		if (to > from)
			mp_sha256_update(f->role, buf + (from - pos), (size_t)(to - from));
		if (start + n > end)
			break;
		role_done(f);
	}
	return MP_OK;
}

enum mp_err mp_epcheck_full(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_ep *ep = c->ep;
	struct mp_readahead_opts ro = {.progress = c->o->progress,
				       .progress_arg = c->o->progress_arg,
				       .cancel = c->o->cancel};
	struct full f = {c, mp_sha256_new(), mp_sha256_new(), 0};
	unsigned char d[MP_SHA256_LEN];
	char hex[MP_SHA256_HEX];
	enum mp_err rc;

	/* said before the long read: with no digest (absent or null, as the
	 * runtime takes both) there is nothing to compare with; one that is
	 * not a digest is the manifest's fault */
	if (!mp_epcheck_has_pack_sha256(c)) {
		rc = mp_fail_no_full_digest(err, "pack_sha256", ep->file.manifest_path,
					    MP_EP_SHA256_HINT);
		goto out;
	}
	if ((rc = mp_json_get_digest(c->root, "pack_sha256", ep->pack_sha256, err)))
		goto out;
	if (!f.whole || !f.role) {
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
		goto out;
	}
	if ((rc = mp_readahead(ep->file.fd, 0, ep->file.size, ep->file.path, &ro, consume, &f, err)))
		goto out;
	while (f.slot < ep->index_count) /* roles of no bytes at the very end */
		role_done(&f);
	mp_sha256_final(f.whole, d);
	mp_sha256_hex(d, hex);
	if (strcmp(hex, ep->pack_sha256) != 0)
		rc = mp_fail(err, MP_E_FULL_DIGEST,
			     "pack SHA-256 does not match manifest: computed %s, pack_sha256 %s",
			     hex, ep->pack_sha256);
out:
	mp_sha256_free(f.whole);
	mp_sha256_free(f.role);
	return rc;
}

enum mp_err mp_epcheck_full_report(struct mp_epcheck *c, struct mp_error *err)
{
	const struct mp_ep *ep = c->ep;
	uint64_t slot = c->bad_digest_slot, object = slot / MP_EP_ROLES;
	char have[MP_SHA256_HEX], want[MP_SHA256_HEX];

	if (slot == MP_EP_NONE)
		return MP_OK;
	mp_sha256_hex(c->bad_digest, have);
	mp_sha256_hex(ep->role[slot].checksum, want);
	return mp_fail(err, MP_E_EP_PAYLOAD_DIGEST,
		       "entry payload does not match its checksum: " MP_EP_KEY " bytes hash to "
		       "%s, the entry's checksum is %s",
		       (unsigned)(object / ep->num_experts), (unsigned)(object % ep->num_experts),
		       (unsigned)(slot % MP_EP_ROLES), have, want);
}
