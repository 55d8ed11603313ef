/*
 * index.c - the reference runtime's step 5: every entry the file holds
 * read in turn (role, rank, text), then index_truncated if the index does
 * not fit in the file.  The index digest starts here (digest.c) once the
 * whole index is known to lie in the file.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/text.h"
#include "base/u64map.h"
#include "pack/expertpack/check.h"
#include "pack/mjson.h"

/* One text field must decode as UTF-8, as the runtime decodes it. */
static enum mp_err check_text(uint64_t i, const char *field, const unsigned char *raw,
			      size_t len, struct mp_error *err)
{
	size_t n = mp_ep_text_len(raw, len), k = 0;

	while (k < n && raw[k] < 0x80) /* the usual case, cheaply */
		k++;
	if (k == n || mp_text_is_utf8((const char *)raw, n))
		return MP_OK;
	return mp_fail(err, MP_E_EP_TEXT,
		       "expert-pack index text is not UTF-8: entry %llu %s is \"%.*s\"",
		       (unsigned long long)i, field, (int)n, (const char *)raw);
}

/* Step 5 for entry i: role, rank, then the four text fields (read from
 * the raw bytes: this pass decodes nothing else). */
static enum mp_err read_entry(struct mp_epcheck *c, uint64_t i, const unsigned char *raw,
			      void *arg, struct mp_error *err)
{
	struct mp_ep_entry e = {.role_id = raw[4], .rank = raw[5]};
	enum mp_err rc;

	if (e.role_id >= MP_EP_ROLES)
		return mp_fail(err, MP_E_EP_ROLE_RANK,
			       "expert-pack index role or rank is invalid: entry %llu has role_id "
			       "%u, must be 0 (gate), 1 (up) or 2 (down)",
			       (unsigned long long)i, e.role_id);
	if (e.rank < 1 || e.rank > MP_EP_MAX_RANK)
		return mp_fail(err, MP_E_EP_ROLE_RANK,
			       "expert-pack index role or rank is invalid: entry %llu has rank "
			       "%u, must be 1 to 4",
			       (unsigned long long)i, e.rank);
	if ((rc = check_text(i, "dtype", raw + MP_EP_DTYPE_AT, MP_EP_DTYPE_LEN, err)) ||
	    (rc = check_text(i, "tensor_name", raw + MP_EP_NAME_AT, MP_EP_NAME_LEN, err)) ||
	    (rc = check_text(i, "quant_scheme", raw + MP_EP_QUANT_AT, MP_EP_DTYPE_LEN, err)) ||
	    (rc = check_text(i, "transform_id", raw + MP_EP_TRANSFORM_AT, MP_EP_DTYPE_LEN,
			     err)))
		return rc;
	return MP_OK;
}

enum mp_err mp_epcheck_index(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_ep *ep = c->ep;
	enum mp_err rc;

	/* the whole index is in the file: its digest can be made meanwhile */
	if (c->entries_in_file == ep->index_count && (rc = mp_epcheck_digest_start(c, err)))
		return rc;
	/* Whatever index_count says, only what the file holds is read. */
	if ((rc = mp_epcheck_stream(c, 0, c->entries_in_file, read_entry, NULL, err)))
		return rc;
	if (c->entries_in_file < ep->index_count)
		return mp_fail(err, MP_E_INDEX_TRUNCATED,
			       "index runs past the end of the pack: entry %llu of %llu would "
			       "end at byte %llu, the pack has %llu bytes",
			       (unsigned long long)c->entries_in_file,
			       (unsigned long long)ep->index_count,
			       (unsigned long long)(MP_EP_HEADER_SIZE +
						    (c->entries_in_file + 1) * MP_EP_ENTRY_SIZE),
			       (unsigned long long)ep->file.size);
	return MP_OK;
}
