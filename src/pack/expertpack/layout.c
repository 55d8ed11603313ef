/*
 * layout.c - the reference runtime's steps 9 to 12: entries at all,
 * object_stride, the file size, and every object's roles where they belong.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "pack/expertpack/check.h"
#include "pack/mjson.h"

/* Step 10: object_stride, a JSON integer (the runtime takes "6656" too). */
static enum mp_err check_stride(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_ep *ep = c->ep;
	unsigned __int128 payload = (unsigned __int128)ep->role_bytes * MP_EP_ROLES;
	json_int_t v;
	json_t *j;
	enum mp_err rc = mp_json_get_typed(c->root, "object_stride", JSON_INTEGER, "an integer",
					   &j, err);

	if (rc)
		return rc;
	v = json_integer_value(j);
	if (v < 0 || (unsigned __int128)v < payload)
		return mp_fail(err, MP_E_EP_STRIDE,
			       "expert-pack object stride is smaller than its payload: "
			       "object_stride is %lld, 3 roles of %llu bytes",
			       (long long)v, (unsigned long long)ep->role_bytes);
	ep->object_stride = (uint64_t)v;
	return MP_OK;
}

/* Step 11: the file ends where the last object's stride does. */
static enum mp_err check_size(const struct mp_epcheck *c, struct mp_error *err)
{
	const struct mp_ep *ep = c->ep;
	unsigned __int128 want =
		ep->data_start + (unsigned __int128)ep->object_count * ep->object_stride;
	char buf[40];

	if (want == ep->file.size)
		return MP_OK;
	return mp_fail(err, MP_E_EP_FILE_SIZE,
		       "expert-pack file size does not match its index: the pack has %llu "
		       "bytes, data_start %llu + %llu objects x object_stride %llu is %s",
		       (unsigned long long)ep->file.size, (unsigned long long)ep->data_start,
		       (unsigned long long)ep->object_count,
		       (unsigned long long)ep->object_stride, mp_epcheck_u128(want, buf));
}

static enum mp_err missing(const struct mp_epcheck *c, uint64_t object, unsigned role,
			   struct mp_error *err)
{
	const struct mp_ep *ep = c->ep;
	const struct mp_ep_entry *o = &c->outside_entry;
	unsigned l = (unsigned)(object / ep->num_experts), e = (unsigned)(object % ep->num_experts);

	if (c->outside == MP_EP_NONE)
		return mp_fail(err, MP_E_EP_MISSING,
			       "expert-pack index has no entry for " MP_EP_KEY, l, e, role);
	return mp_fail(err, MP_E_EP_MISSING,
		       "expert-pack index has no entry for " MP_EP_KEY ": entry %llu is "
		       MP_EP_KEY ", outside %llu layers x %llu experts",
		       l, e, role, (unsigned long long)c->outside, o->layer, o->expert,
		       o->role_id, (unsigned long long)ep->num_layers,
		       (unsigned long long)ep->num_experts);
}

/* Step 12: every (layer, expert, role) present, exactly where it belongs. */
static enum mp_err check_layout(const struct mp_epcheck *c, struct mp_error *err)
{
	const struct mp_ep *ep = c->ep;

	for (uint64_t k = 0; k < ep->object_count; k++)
		for (unsigned r = 0; r < MP_EP_ROLES; r++) {
			uint64_t slot = k * MP_EP_ROLES + r, want, n;

			if (c->where[slot] == MP_EP_NONE)
				return missing(c, k, r, err);
			mp_ep_role_range(ep, k, r, &want, &n);
			if (c->offset[slot] != want)
				return mp_fail(err, MP_E_EP_LAYOUT,
					       "expert-pack object layout mismatch at " MP_EP_KEY
					       ": entry %llu pack_offset is %llu, must be %llu",
					       (unsigned)(k / ep->num_experts),
					       (unsigned)(k % ep->num_experts), r,
					       (unsigned long long)c->where[slot],
					       (unsigned long long)c->offset[slot],
					       (unsigned long long)want);
		}
	return MP_OK;
}

/* What the loader's direct I/O will refuse (it is the runtime's default
 * for DeepSeek): a warning here, since buffered reads work. */
static void note_alignment(struct mp_epcheck *c)
{
	struct mp_ep *ep = c->ep;
	unsigned __int128 payload = (unsigned __int128)ep->role_bytes * MP_EP_ROLES;
	bool start = ep->data_start % MP_EP_PAGE == 0;
	bool stride = ep->object_count < 2 || ep->object_stride % MP_EP_PAGE == 0;
	bool size = payload % MP_EP_PAGE == 0;

	ep->page_aligned = start && stride && size;
	if (!ep->page_aligned)
		mp_epcheck_warn(c, "objects are not %d-byte aligned (data_start %llu, "
				"object_stride %llu, 3 roles of %llu bytes): the loader's direct "
				"I/O refuses this pack",
				MP_EP_PAGE, (unsigned long long)ep->data_start,
				(unsigned long long)ep->object_stride,
				(unsigned long long)ep->role_bytes);
}

enum mp_err mp_epcheck_layout(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_ep *ep = c->ep;
	enum mp_err rc;

	/* Step 9: the runtime asserts there is an entry at all. */
	if (ep->index_count == 0)
		return mp_fail(err, MP_E_EP_EMPTY,
			       "expert-pack has no entries: header num_layers is %llu and "
			       "num_experts %llu",
			       (unsigned long long)ep->num_layers,
			       (unsigned long long)ep->num_experts);
	if ((rc = check_stride(c, err)) || (rc = check_size(c, err)) ||
	    (rc = check_layout(c, err)))
		return rc;
	note_alignment(c);
	return MP_OK;
}
