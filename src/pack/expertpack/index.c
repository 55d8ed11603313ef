/*
 * epindex.c - the reference runtime's checks of the index: step 5 (every
 * entry read in turn), step 8 (the entries keyed by layer, expert and role,
 * in file order) and steps 9 to 12 (stride, file size, object layout).
 *
 * Entries whose layer or expert lies outside the header's dimensions are
 * kept, as the runtime keeps them, in a hash map: they can still repeat a
 * key or mix generations, and they are reported where the runtime fails on
 * them, at step 12, as the in-range entry they displace.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/text.h"
#include "base/u64map.h"
#include "pack/expertpack/check.h"
#include "pack/mjson.h"

/* Entries read per pread: about 1.3 MB. */
#define ENTRIES_PER_CHUNK 4096

enum mp_err mp_epcheck_stream(struct mp_epcheck *c, uint64_t first, uint64_t count,
			      mp_epcheck_entry_fn fn, void *arg, struct mp_error *err)
{
	enum mp_err rc = MP_OK;
	unsigned char *buf;

	/* one buffer for every pass, freed with the rest of c */
	if (!c->chunk && !(c->chunk = malloc((size_t)ENTRIES_PER_CHUNK * MP_EP_ENTRY_SIZE)))
		return mp_fail(err, MP_E_NOMEM, "out of memory reading the index of %s",
			       c->ep->path);
	buf = c->chunk;
	for (uint64_t i = 0; i < count && !rc; i += ENTRIES_PER_CHUNK) {
		uint64_t n = count - i < ENTRIES_PER_CHUNK ? count - i : ENTRIES_PER_CHUNK;

		rc = mp_pread_full(c->ep->fd, buf, (size_t)n * MP_EP_ENTRY_SIZE,
				   MP_EP_HEADER_SIZE + (first + i) * MP_EP_ENTRY_SIZE, "pack",
				   c->ep->path, MP_E_PACK_IO, err);
		for (uint64_t k = 0; k < n && !rc; k++)
			rc = fn(c, first + i + k, buf + k * MP_EP_ENTRY_SIZE, arg, err);
	}
	return rc;
}

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
			       (unsigned long long)ep->file_size);
	return MP_OK;
}

/* ---- step 8 ------------------------------------------------------------- */

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
			       c->ep->path);
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
			       c->ep->path);
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
	enum mp_err rc = mp_epcheck_stream(c, 0, c->ep->index_count, key_entry, &k, err);

	mp_u64map_free(&k.outside);
	return rc;
}

/* ---- steps 9 to 12 ------------------------------------------------------ */

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

	if (want == ep->file_size)
		return MP_OK;
	return mp_fail(err, MP_E_EP_FILE_SIZE,
		       "expert-pack file size does not match its index: the pack has %llu "
		       "bytes, data_start %llu + %llu objects x object_stride %llu is %s",
		       (unsigned long long)ep->file_size, (unsigned long long)ep->data_start,
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
