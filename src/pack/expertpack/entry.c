/*
 * epentry.c - the stricter checks of each entry: the offline validator's
 * (role shape, tensor_name room, a routed tensor, checksum = slice digest,
 * the source tensor's range and digest as the manifest gives them, the
 * slice inside the tensor at its expert's place) and moepack's own (the
 * canonical tensor name, dtype_id 39, a shape whose MXFP4 blocks fill the
 * role, a source tensor of exactly num_experts slices).
 *
 * The offline validator walks objects in (layer, expert) order and each
 * object's roles in turn, checking first that the object is aligned; the
 * entries are streamed here in file order, so the failure kept is the one
 * it would reach first: the least (object, stage, role).  moepack's own
 * checks come after all of the validator's: one of theirs is reported only
 * when the validator finds nothing in any entry.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "pack/expertpack/check.h"

/* Where a failure sits in the offline validator's walk. */
static uint64_t walk_pos(uint64_t object, bool object_level, unsigned role)
{
	return (object * 2 + (object_level ? 0 : 1)) * 4 + role;
}

/* The first failure in the validator's walk, of its checks or of ours. */
struct first {
	uint64_t pos;        /* walk position, or NONE */
	struct mp_error err;
};

struct strict {
	const struct mp_eptensors *t;
	struct first ref, ours;
};

/* An entry as the messages name it. */
struct at {
	unsigned l, e, r;
	unsigned long long i;
};

#define AT_FMT MP_EP_KEY " entry %llu"
#define AT_ARGS(a) (a)->l, (a)->e, (a)->r, (a)->i

static enum mp_err check_shape_room(const struct at *a, const struct mp_ep_entry *e,
				    struct mp_error *err)
{
	for (unsigned d = 0; d < e->rank; d++)
		if (e->shape[d] == 0)
			return mp_fail(err, MP_E_EP_SHAPE,
				       "invalid role shape for " AT_FMT ": shape[%u] is 0", AT_ARGS(a),
				       d);
	if (!memchr(e->tensor_name, 0, MP_EP_NAME_LEN))
		return mp_fail(err, MP_E_EP_NAME,
			       "entry does not name its routed tensor: " AT_FMT " tensor_name "
			       "fills its %d bytes and has no NUL",
			       AT_ARGS(a), MP_EP_NAME_LEN);
	return MP_OK;
}

/* The manifest's tensor the entry names, which must be routed. */
static enum mp_err find_tensor(const struct mp_eptensors *t, const struct at *a,
			       const struct mp_ep_entry *e, uint64_t *idx, struct mp_error *err)
{
	size_t n = mp_ep_text_len(e->tensor_name, MP_EP_NAME_LEN);
	uint64_t k = t->canon[a->l * MP_EP_ROLES + a->r];
	json_t *v;

	/* most entries name their canonical tensor: no hash lookup for them */
	if (k != MP_EP_NONE && strlen(t->t[k].name) == n &&
	    memcmp(t->t[k].name, e->tensor_name, n) == 0) {
		*idx = k;
	} else if ((v = json_object_getn(t->by_name, (const char *)e->tensor_name, n))) {
		*idx = (uint64_t)json_integer_value(v);
	} else {
		return mp_fail(err, MP_E_EP_TENSOR,
			       "entry does not map to a routed tensor: " AT_FMT " tensor_name "
			       "\"%.*s\" is not in tensors",
			       AT_ARGS(a), (int)n, (const char *)e->tensor_name);
	}
	if (!t->t[*idx].routed)
		return mp_fail(err, MP_E_EP_TENSOR,
			       "entry does not map to a routed tensor: " AT_FMT " tensor_name "
			       "\"%.*s\" is tensors[%llu], not of category routed_expert",
			       AT_ARGS(a), (int)n, (const char *)e->tensor_name,
			       (unsigned long long)*idx);
	return MP_OK;
}

static enum mp_err source_field(const struct at *a, const char *field, uint64_t have,
				uint64_t idx, const char *key, uint64_t want, struct mp_error *err)
{
	if (have == want)
		return MP_OK;
	return mp_fail(err, MP_E_EP_SOURCE,
		       "entry source tensor does not match manifest: " AT_FMT " %s is %llu, "
		       "tensors[%llu].%s is %llu",
		       AT_ARGS(a), field, (unsigned long long)have, (unsigned long long)idx, key,
		       (unsigned long long)want);
}

/* Checksum, then the source tensor and slice the entry claims. */
static enum mp_err check_source(const struct mp_eptensor *t, uint64_t idx, const struct at *a,
				const struct mp_ep_entry *e, struct mp_error *err)
{
	unsigned __int128 slice = e->source_tensor_offset +
				  (unsigned __int128)a->e * e->source_slice_nbytes;
	char buf[40];
	enum mp_err rc;

	if (memcmp(e->checksum, e->source_slice_sha256, 32) != 0)
		return mp_fail(err, MP_E_EP_CHECKSUM,
			       "entry is not an auditable identity transform: " AT_FMT " checksum "
			       "differs from source_slice_sha256",
			       AT_ARGS(a));
	if ((rc = source_field(a, "source_tensor_offset", e->source_tensor_offset, idx,
			       "source_offset", t->offset, err)) ||
	    (rc = source_field(a, "source_tensor_nbytes", e->source_tensor_nbytes, idx,
			       "source_nbytes", t->nbytes, err)))
		return rc;
	if (memcmp(e->source_tensor_sha256, t->sha256, 32) != 0)
		return mp_fail(err, MP_E_EP_SOURCE,
			       "entry source tensor does not match manifest: " AT_FMT
			       " source_tensor_sha256 differs from tensors[%llu].source_payload_sha256",
			       AT_ARGS(a), (unsigned long long)idx);
	if (e->source_slice_offset != slice)
		return mp_fail(err, MP_E_EP_SLICE,
			       "entry source slice is misplaced: " AT_FMT " source_slice_offset is "
			       "%llu, source_tensor_offset + expert x source_slice_nbytes is %s",
			       AT_ARGS(a), (unsigned long long)e->source_slice_offset,
			       mp_epcheck_u128(slice, buf));
	if ((unsigned __int128)e->source_slice_offset + e->source_slice_nbytes >
	    (unsigned __int128)e->source_tensor_offset + e->source_tensor_nbytes)
		return mp_fail(err, MP_E_EP_SLICE,
			       "entry source slice is misplaced: " AT_FMT " slice ends past its "
			       "tensor (%llu + %llu bytes)",
			       AT_ARGS(a), (unsigned long long)e->source_tensor_offset,
			       (unsigned long long)e->source_tensor_nbytes);
	return MP_OK;
}

/* Weights in the shape; 0 when the product does not fit in 128 bits. */
static unsigned __int128 shape_weights(const struct mp_ep_entry *e)
{
	unsigned __int128 w = 1;

	for (unsigned d = 0; d < e->rank; d++)
		if (__builtin_mul_overflow(w, (unsigned __int128)e->shape[d], &w))
			return 0;
	return w;
}

/* Ours: the canonical name, MXFP4's type id, a shape that fills the role,
 * a tensor of exactly num_experts slices. */
static enum mp_err check_ours(const struct mp_ep *ep, const struct mp_eptensors *t,
			      const struct at *a, const struct mp_ep_entry *e,
			      struct mp_error *err)
{
	const char *want = t->canon_name[a->l * MP_EP_ROLES + a->r];
	size_t n = strlen(want), have = mp_ep_text_len(e->tensor_name, MP_EP_NAME_LEN);
	unsigned __int128 w = shape_weights(e), tensor = (unsigned __int128)ep->num_experts *
							  ep->role_bytes;
	char buf[40];

	if (have != n || memcmp(e->tensor_name, want, n) != 0)
		return mp_fail(err, MP_E_EP_NAME,
			       "entry does not name its routed tensor: " AT_FMT " tensor_name is "
			       "\"%.*s\", must be \"%s\"",
			       AT_ARGS(a), (int)have, (const char *)e->tensor_name, want);
	if (e->dtype_id != MP_EP_DTYPE_ID)
		return mp_fail(err, MP_E_EP_DTYPE,
			       "unsupported expert dtype for " AT_FMT ": dtype_id is %u, MXFP4 is %d",
			       AT_ARGS(a), e->dtype_id, MP_EP_DTYPE_ID);
	if (e->shape[0] % MP_EP_BLOCK_WEIGHTS != 0 || w == 0 ||
	    w / MP_EP_BLOCK_WEIGHTS * MP_EP_BLOCK_BYTES != e->pack_nbytes)
		return mp_fail(err, MP_E_EP_SHAPE,
			       "invalid role shape for " AT_FMT ": its row of %llu weights must be "
			       "whole blocks of 32 and its blocks of 17 bytes fill pack_nbytes %llu",
			       AT_ARGS(a), (unsigned long long)e->shape[0],
			       (unsigned long long)e->pack_nbytes);
	if (e->source_tensor_nbytes != tensor)
		return mp_fail(err, MP_E_EP_SOURCE,
			       "entry source tensor does not match manifest: " AT_FMT
			       " source_tensor_nbytes is %llu, num_experts x role_bytes is %s",
			       AT_ARGS(a), (unsigned long long)e->source_tensor_nbytes,
			       mp_epcheck_u128(tensor, buf));
	return MP_OK;
}

static enum mp_err strict_entry(struct mp_epcheck *c, uint64_t i, const unsigned char *raw,
				void *arg, struct mp_error *err)
{
	struct strict *s = arg;
	struct mp_ep_entry e;
	struct mp_error mine;
	struct at a;
	uint64_t pos, idx = 0;

	(void)err;
	mp_ep_entry_decode(raw, &e);
	pos = walk_pos(mp_ep_object(c->ep, e.layer, e.expert), false, e.role_id);
	if (pos >= s->ref.pos)
		return MP_OK; /* the walk reaches a failure of the validator's first */
	a = (struct at){e.layer, e.expert, e.role_id, (unsigned long long)i};
	if (check_shape_room(&a, &e, &mine) || find_tensor(s->t, &a, &e, &idx, &mine) ||
	    check_source(&s->t->t[idx], idx, &a, &e, &mine))
		s->ref = (struct first){pos, mine};
	else if (pos < s->ours.pos && check_ours(c->ep, s->t, &a, &e, &mine))
		s->ours = (struct first){pos, mine};
	return MP_OK;
}

enum mp_err mp_epcheck_strict_entries(struct mp_epcheck *c, const struct mp_eptensors *t,
				      struct mp_error *err)
{
	const struct mp_ep *ep = c->ep;
	struct strict s = {.t = t, .ref.pos = MP_EP_NONE, .ours.pos = MP_EP_NONE};
	const struct first *f;
	enum mp_err rc;

	/* data_start is aligned (step 4): object 1 is the first that is not,
	 * if any is */
	if (ep->object_count > 1 && ep->object_stride % ep->alignment != 0) {
		s.ref.pos = walk_pos(1, true, 0);
		mp_fail(&s.ref.err, MP_E_EP_OBJECT_ALIGN,
			"expert object is not aligned: object (%llu, %llu) starts at byte %llu, "
			"not a multiple of the alignment %llu (object_stride %llu)",
			(unsigned long long)(1 / ep->num_experts),
			(unsigned long long)(1 % ep->num_experts),
			(unsigned long long)mp_ep_object_offset(ep, 1),
			(unsigned long long)ep->alignment, (unsigned long long)ep->object_stride);
	}
	if ((rc = mp_epcheck_stream(c, 0, ep->index_count, strict_entry, &s, err)))
		return rc;
	f = s.ref.pos != MP_EP_NONE ? &s.ref : &s.ours;
	if (f->pos == MP_EP_NONE)
		return MP_OK;
	if (err)
		*err = f->err;
	return f->err.code;
}
