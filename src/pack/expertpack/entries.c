/*
 * entries.c - the reference runtime's step 8: every entry of the index
 * keyed by layer, expert and role, in file order, after the per-slot
 * arrays are allocated (the whole index is known to lie in the file).
 *
 * Entries whose layer or expert lies outside the header's dimensions are
 * kept, as the runtime keeps them, in a hash map: they can still repeat a
 * key or mix generations, and they are reported where the runtime fails on
 * them, at step 12 (layout.c), as the in-range entry they displace.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "base/u64map.h"
#include "pack/expertpack/check.h"
#include "pack/mjson.h"

/* The per-slot arrays, once the whole index is known to lie in the file. */
static enum mp_err allocate(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_ep *ep = c->ep;
	size_t n = (size_t)ep->index_count + 1, objects = (size_t)ep->object_count + 1;

	ep->role = calloc(n, sizeof *ep->role);
	ep->generation = calloc(objects, sizeof *ep->generation);
	c->where = malloc(n * sizeof *c->where);
	c->offset = calloc(n, sizeof *c->offset);
	if (!ep->role || !ep->generation || !c->where || !c->offset)
		return mp_fail(err, MP_E_NOMEM, "out of memory for the index of %s", ep->file.path);
	for (size_t i = 0; i < n; i++)
		c->where[i] = MP_EP_NONE;
	return MP_OK;
}

/* What step 8 carries from one entry to the next. */
struct keyed {
	struct mp_u64map outside;  /* keys and objects beyond the dimensions */
	uint64_t prev_key;         /* for the order warning */
	bool have_role_bytes, warned_order;
};

/* Map keys of entries outside the dimensions: one per (layer, expert,
 * role) to catch repeats, one per object (high bit set) for its generation. */
#define ROLE_KEY(e) (((uint64_t)(e)->layer << 18) | ((uint64_t)(e)->expert << 2) | (e)->role_id)
#define OBJECT_KEY(e) ((1ull << 63) | ((uint64_t)(e)->layer << 16) | (e)->expert)

/* The key was seen before (a duplicate)?  *seen gets the earlier entry. */
static enum mp_err seen_before(struct mp_epcheck *c, struct keyed *k, const struct mp_ep_entry *e,
			       uint64_t slot, uint64_t *seen, struct mp_error *err)
{
	uint64_t *v;
	bool fresh;

	if (slot != MP_EP_NONE) {
		*seen = c->where[slot];
		return MP_OK;
	}
	if (!(v = mp_u64map_put(&k->outside, ROLE_KEY(e), &fresh)))
		return mp_fail(err, MP_E_NOMEM, "out of memory reading the index of %s",
			       c->ep->file.path);
	*seen = fresh ? MP_EP_NONE : *v;
	return MP_OK;
}

/* dtype, then quant_scheme: MXFP4 both. */
static enum mp_err check_dtype(uint64_t i, const struct mp_ep_entry *e, struct mp_error *err)
{
	const char *field = "dtype";
	const unsigned char *text = e->dtype;

	if (mp_epcheck_text_is(e->dtype, MP_EP_DTYPE_LEN, MP_EP_DTYPE)) {
		if (mp_epcheck_text_is(e->quant_scheme, MP_EP_DTYPE_LEN, MP_EP_DTYPE))
			return MP_OK;
		field = "quant_scheme";
		text = e->quant_scheme;
	}
	return mp_fail(err, MP_E_EP_DTYPE,
		       "unsupported expert dtype for " MP_EP_KEY ": entry %llu %s is \"%.*s\", "
		       "must be " MP_EP_DTYPE,
		       e->layer, e->expert, e->role_id, (unsigned long long)i, field,
		       (int)mp_ep_text_len(text, MP_EP_DTYPE_LEN), (const char *)text);
}

/* The runtime's per-entry checks, but for the generation. */
static enum mp_err check_kind(const struct mp_epcheck *c, const struct keyed *k, uint64_t i,
			      const struct mp_ep_entry *e, struct mp_error *err)
{
	enum mp_err rc = check_dtype(i, e, err);

	if (rc)
		return rc;
	if (!mp_epcheck_text_is(e->transform_id, MP_EP_DTYPE_LEN, MP_EP_TRANSFORM))
		return mp_fail(err, MP_E_EP_TRANSFORM,
			       "unsupported expert transform for " MP_EP_KEY ": entry %llu "
			       "transform_id is \"%.*s\", must be " MP_EP_TRANSFORM,
			       e->layer, e->expert, e->role_id, (unsigned long long)i,
			       (int)mp_ep_text_len(e->transform_id, MP_EP_DTYPE_LEN),
			       (const char *)e->transform_id);
	if (e->block_size != MP_EP_BLOCK_WEIGHTS)
		return mp_fail(err, MP_E_EP_TRANSFORM,
			       "unsupported expert transform for " MP_EP_KEY ": entry %llu "
			       "block_size is %llu, must be %d",
			       e->layer, e->expert, e->role_id, (unsigned long long)i,
			       (unsigned long long)e->block_size, MP_EP_BLOCK_WEIGHTS);
	if (e->pack_nbytes != e->source_slice_nbytes)
		return mp_fail(err, MP_E_EP_IDENTITY_SIZE,
			       "non-identity expert payload size for " MP_EP_KEY ": entry %llu "
			       "pack_nbytes is %llu, source_slice_nbytes %llu",
			       e->layer, e->expert, e->role_id, (unsigned long long)i,
			       (unsigned long long)e->pack_nbytes,
			       (unsigned long long)e->source_slice_nbytes);
	if (k->have_role_bytes && e->pack_nbytes != c->ep->role_bytes)
		return mp_fail(err, MP_E_EP_ROLE_SIZE,
			       "expert-pack roles are not fixed size: entry %llu " MP_EP_KEY
			       " has pack_nbytes %llu, entry 0 has %llu",
			       (unsigned long long)i, e->layer, e->expert, e->role_id,
			       (unsigned long long)e->pack_nbytes,
			       (unsigned long long)c->ep->role_bytes);
	return MP_OK;
}

/* The object's generation: the first of its entries sets it. */
static enum mp_err check_generation(struct mp_epcheck *c, struct keyed *k, uint64_t i,
				    const struct mp_ep_entry *e, uint64_t slot,
				    struct mp_error *err)
{
	uint64_t *gen = NULL, obj = slot == MP_EP_NONE ? 0 : slot / MP_EP_ROLES;
	bool fresh = true;

	if (slot != MP_EP_NONE) {
		gen = &c->ep->generation[obj];
		for (unsigned r = 0; r < MP_EP_ROLES; r++)
			fresh &= c->where[obj * MP_EP_ROLES + r] == MP_EP_NONE;
	} else if (!(gen = mp_u64map_put(&k->outside, OBJECT_KEY(e), &fresh))) {
		return mp_fail(err, MP_E_NOMEM, "out of memory reading the index of %s",
			       c->ep->file.path);
	}
	if (fresh)
		*gen = e->generation;
	else if (*gen != e->generation)
		return mp_fail(err, MP_E_EP_GENERATION,
			       "mixed generation in expert object (%u, %u): entry %llu (%s) has "
			       "generation %llu, the object's first entry has %llu",
			       e->layer, e->expert, (unsigned long long)i,
			       mp_ep_role_name(e->role_id), (unsigned long long)e->generation,
			       (unsigned long long)*gen);
	return MP_OK;
}

/* Keep what the pack answers later, and where the entry was. */
static void keep(struct mp_epcheck *c, uint64_t i, const struct mp_ep_entry *e, uint64_t slot)
{
	struct mp_ep_role_info *r = &c->ep->role[slot];
	size_t n = mp_ep_text_len(e->tensor_name, MP_EP_NAME_LEN);

	c->where[slot] = i;
	c->offset[slot] = e->pack_offset;
	memcpy(r->checksum, e->checksum, sizeof r->checksum);
	memcpy(r->shape, e->shape, sizeof r->shape);
	r->dtype_id = e->dtype_id;
	r->rank = e->rank;
	memcpy(r->tensor_name, e->tensor_name, n);
	r->tensor_name[n] = '\0';
}

static void note_order(struct mp_epcheck *c, struct keyed *k, uint64_t i,
		       const struct mp_ep_entry *e)
{
	uint64_t key = ((uint64_t)e->layer << 34) | ((uint64_t)e->expert << 2) | e->role_id;

	if (i > 0 && key <= k->prev_key && !k->warned_order) {
		k->warned_order = true;
		mp_epcheck_warn(c, "index entries are not in (layer, expert, role) order: entry "
				"%llu is " MP_EP_KEY " after (%u, %u, %u)",
				(unsigned long long)i, e->layer, e->expert, e->role_id,
				(unsigned)(k->prev_key >> 34), (unsigned)(k->prev_key >> 2) & 0xffff,
				(unsigned)(k->prev_key & 3));
	}
	k->prev_key = key;
}

static enum mp_err key_entry(struct mp_epcheck *c, uint64_t i, const unsigned char *raw,
			     void *arg, struct mp_error *err)
{
	struct keyed *k = arg;
	struct mp_ep *ep = c->ep;
	struct mp_ep_entry e;
	uint64_t slot = MP_EP_NONE, seen = MP_EP_NONE;
	enum mp_err rc;

	mp_ep_entry_decode(raw, &e);
	if (e.layer < ep->num_layers && e.expert < ep->num_experts)
		slot = mp_ep_object(ep, e.layer, e.expert) * MP_EP_ROLES + e.role_id;
	if ((rc = seen_before(c, k, &e, slot, &seen, err)))
		return rc;
	if (seen != MP_EP_NONE)
		return mp_fail(err, MP_E_EP_DUPLICATE,
			       "duplicate expert-pack entry " MP_EP_KEY ": entry %llu repeats "
			       "entry %llu",
			       e.layer, e.expert, e.role_id, (unsigned long long)i,
			       (unsigned long long)seen);
	if ((rc = check_kind(c, k, i, &e, err)) ||
	    (rc = check_generation(c, k, i, &e, slot, err)))
		return rc;
	if (!k->have_role_bytes) {
		k->have_role_bytes = true;
		ep->role_bytes = e.pack_nbytes;
	}
	note_order(c, k, i, &e);
	if (slot != MP_EP_NONE) {
		keep(c, i, &e, slot);
	} else {
		*mp_u64map_find(&k->outside, ROLE_KEY(&e)) = i;
		if (c->outside == MP_EP_NONE) {
			c->outside = i;
			c->outside_entry = e;
		}
	}
	return MP_OK;
}

enum mp_err mp_epcheck_entries(struct mp_epcheck *c, struct mp_error *err)
{
	struct keyed k = {.outside = MP_U64MAP_INIT};
	enum mp_err rc = allocate(c, err);

	if (rc)
		return rc;
	rc = mp_epcheck_stream(c, 0, c->ep->index_count, key_entry, &k, err);

	mp_u64map_free(&k.outside);
	return rc;
}

