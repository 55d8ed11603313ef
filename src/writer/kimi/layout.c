/* layout.c - the arithmetic of a pack's file layout (layout.h). */
#include "config.h"

#include "writer/kimi/layout.h"

#include <inttypes.h>

#include "pack/kimi/index.h"

#define LAYER_COUNT (MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1)

/* Round v up to a multiple of the power of two a; -1 on overflow. */
static int round_up(uint64_t v, uint64_t a, uint64_t *out)
{
	uint64_t t;

	if (__builtin_add_overflow(v, a - 1, &t))
		return -1;
	*out = t & ~(a - 1);
	return 0;
}

void mp_layout_set_shapes(struct mp_layout *l, uint64_t hidden, uint64_t inter)
{
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		l->role_shape[r][0] = r == MP_ROLE_DOWN ? inter : hidden;
		l->role_shape[r][1] = r == MP_ROLE_DOWN ? hidden : inter;
	}
}

/* data_start + objects * object_bytes + (objects - 1) * gap, bounded. */
static enum mp_err total_size(struct mp_layout *l, struct mp_error *err)
{
	uint64_t payload, gaps, t;

	if (__builtin_mul_overflow(l->objects, l->object_bytes, &payload) ||
	    __builtin_mul_overflow(l->objects - 1, l->gap, &gaps) ||
	    __builtin_add_overflow(payload, gaps, &t) ||
	    __builtin_add_overflow(t, l->data_start, &l->size) || l->size > MP_LAYOUT_MAX_SIZE)
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: the pack would be larger than %llu bytes "
			       "(check --experts, --hidden, --inter and --gap)",
			       (unsigned long long)MP_LAYOUT_MAX_SIZE);
	return MP_OK;
}

enum mp_err mp_layout_compute(struct mp_layout *l, uint64_t experts, uint64_t alignment,
			      uint64_t gap, struct mp_error *err)
{
	l->experts = experts;
	l->alignment = alignment;
	l->object_bytes = 0;
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		if (__builtin_add_overflow(l->object_bytes, l->role_bytes[r], &l->object_bytes))
			return mp_fail(err, MP_E_USAGE, "invalid usage: an expert is larger "
				       "than 2^64 bytes");
	if (round_up(gap, alignment, &l->gap))
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: --gap %" PRIu64 " is too large", gap);
	l->objects = (uint64_t)LAYER_COUNT * experts;
	l->index_count = l->objects * 3;
	l->index_end = MP_HEADER_SIZE + (uint64_t)MP_ENTRY_SIZE * l->index_count;
	if (round_up(l->index_end, alignment, &l->data_start))
		return mp_fail(err, MP_E_USAGE, "invalid usage: --alignment %" PRIu64
			       " is too large", alignment);
	return total_size(l, err);
}

uint64_t mp_layout_object_offset(const struct mp_layout *l, uint64_t object)
{
	return l->data_start + object * (l->object_bytes + l->gap);
}

void mp_layout_entry(const struct mp_layout *l, uint64_t i, unsigned char raw[MP_ENTRY_SIZE])
{
	uint64_t object = i / 3;
	enum mp_role role = (enum mp_role)(i % 3);
	uint64_t layer = MP_ACTIVE_FIRST + object / l->experts;
	uint64_t offset = mp_layout_object_offset(l, object);
	char name[MP_ENTRY_NAME_LEN];

	for (int r = 0; r < (int)role; r++)
		offset += l->role_bytes[r];
	mp_tensor_name(name, sizeof name, layer, role);
	mp_entry_encode(raw, name, (int32_t)(object % l->experts), offset, l->role_bytes[role]);
}
