/*
 * seal.c - per-chunk SHA-256 digests of a pack file: the chunk layout of
 * seal.h (how a pack splits into chunks, and which chunk holds a byte).
 * The seal file is sealfile.c's; hashing and checking on threads,
 * sealhash.c's.
 */
#include "config.h"

#include "seal/seal.h"
#include "seal/seal_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/search.h"

uint64_t mp_seal_div_up(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

bool mp_seal_chunk_size_ok(uint64_t c)
{
	return c >= MP_SEAL_MIN_CHUNK && c <= MP_SEAL_MAX_CHUNK && (c & (c - 1)) == 0;
}

static uint64_t object_bytes(const uint64_t role_bytes[MP_ROLE_COUNT])
{
	return role_bytes[0] + role_bytes[1] + role_bytes[2];
}

/* End of object i's region (start of the next object, or the file's end). */
static uint64_t region_end(uint64_t file_size, uint64_t object_count,
			   const uint64_t *object_offset, uint64_t i)
{
	return i + 1 < object_count ? object_offset[i + 1] : file_size;
}

/*
 * Count the chunks of a layout, stopping as soon as the count passes
 * `limit`.  Returns false when the layout is not one (an object past its
 * successor or the file's end, offsets not ascending).
 */
static bool count_chunks(uint64_t file_size, uint64_t object_count,
			 const uint64_t *object_offset,
			 const uint64_t role_bytes[MP_ROLE_COUNT], uint64_t c,
			 uint64_t limit, uint64_t *count)
{
	uint64_t ob = object_bytes(role_bytes), per = 0, n;

	if (ob < role_bytes[0] || ob < role_bytes[2] || ob - role_bytes[0] < role_bytes[1])
		return false; /* the sum wrapped */
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		per += mp_seal_div_up(role_bytes[r], c);
	n = mp_seal_div_up(object_count ? object_offset[0] : file_size, c);
	if (object_count && object_offset[0] > file_size)
		return false;
	for (uint64_t i = 0; i < object_count; i++) {
		uint64_t end = region_end(file_size, object_count, object_offset, i);
		if (object_offset[i] > end || end - object_offset[i] < ob)
			return false;
		n += per + mp_seal_div_up(end - object_offset[i] - ob, c);
		if (n > limit) {
			*count = n;
			return true;
		}
	}
	*count = n;
	return true;
}

/* mp_seal_layout_init() with a table of at most max_chunks chunks. */
static enum mp_err layout_init_max(struct mp_seal_layout *l, uint64_t file_size,
				   uint64_t object_count, const uint64_t *object_offset,
				   const uint64_t role_bytes[MP_ROLE_COUNT],
				   uint64_t chunk_size, uint64_t max_chunks, struct mp_error *err)
{
	uint64_t count, c = chunk_size, per = 0, ob = object_bytes(role_bytes);

	memset(l, 0, sizeof *l);
	if (!mp_seal_chunk_size_ok(c))
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: chunk size %" PRIu64
			       " is not a power of two from %u to %u",
			       c, MP_SEAL_MIN_CHUNK, MP_SEAL_MAX_CHUNK);
	if (!count_chunks(file_size, object_count, object_offset, role_bytes, c,
			  max_chunks, &count))
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: object offsets do not fit the file");
	if (count > max_chunks)
		return mp_fail(err, MP_E_SEAL_LIMIT,
			       "seal would exceed its table limit: chunk size %" PRIu64
			       " needs more than %" PRIu64 " chunks (%" PRIu64 " bytes of digests)",
			       c, max_chunks, max_chunks * MP_SHA256_LEN);
	if (count == 0)
		return mp_fail(err, MP_E_USAGE, "invalid usage: an empty file has no seal");
	l->object_first = malloc((object_count + 1) * sizeof *l->object_first);
	if (!l->object_first)
		return mp_fail(err, MP_E_NOMEM, "out of memory for the seal layout");
	l->file_size = file_size;
	l->chunk_size = c;
	l->object_count = object_count;
	l->object_offset = object_offset;
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		l->order[r] = (enum mp_role)r;
		l->role_bytes[r] = role_bytes[r];
		l->role_chunks[r] = mp_seal_div_up(role_bytes[r], c);
		per += l->role_chunks[r];
	}
	l->head_chunks = mp_seal_div_up(object_count ? object_offset[0] : file_size, c);
	count = l->head_chunks;
	for (uint64_t i = 0; i < object_count; i++) {
		uint64_t end = region_end(file_size, object_count, object_offset, i);
		l->object_first[i] = count;
		count += per + mp_seal_div_up(end - object_offset[i] - ob, c);
	}
	l->object_first[object_count] = count;
	l->chunk_count = count;
	return MP_OK;
}

enum mp_err mp_seal_layout_init(struct mp_seal_layout *l, uint64_t file_size,
				uint64_t object_count, const uint64_t *object_offset,
				const uint64_t role_bytes[MP_ROLE_COUNT],
				uint64_t chunk_size, struct mp_error *err)
{
	return layout_init_max(l, file_size, object_count, object_offset, role_bytes,
			       chunk_size, MP_SEAL_MAX_CHUNKS, err);
}

enum mp_err mp_seal_layout_of_pack(struct mp_seal_layout *l, const struct mp_pack *pack,
				   uint64_t chunk_size, struct mp_error *err)
{
	return mp_seal_layout_of_pack_max(l, pack, chunk_size, MP_SEAL_MAX_CHUNKS, err);
}

enum mp_err mp_seal_layout_of_pack_max(struct mp_seal_layout *l, const struct mp_pack *pack,
				       uint64_t chunk_size, uint64_t max_chunks,
				       struct mp_error *err)
{
	uint64_t rb[MP_ROLE_COUNT];
	enum mp_err rc;

	for (int i = 0; i < MP_ROLE_COUNT; i++)
		rb[i] = pack->m.roles[pack->m.order[i]].expert_bytes;
	rc = layout_init_max(l, pack->file.size, pack->object_count, pack->object_offset,
			     rb, chunk_size, max_chunks, err);
	if (rc == MP_OK)
		memcpy(l->order, pack->m.order, sizeof l->order);
	return rc;
}

void mp_seal_layout_free(struct mp_seal_layout *l)
{
	if (!l)
		return;
	free(l->object_first);
	l->object_first = NULL;
}

uint64_t mp_seal_pick_chunk_size(uint64_t file_size, uint64_t object_count,
				 const uint64_t *object_offset,
				 const uint64_t role_bytes[MP_ROLE_COUNT])
{
	for (uint64_t c = MP_SEAL_PREFERRED_CHUNK; c <= MP_SEAL_MAX_CHUNK; c <<= 1) {
		uint64_t n;
		if (!count_chunks(file_size, object_count, object_offset, role_bytes, c,
				  MP_SEAL_MAX_CHUNKS, &n))
			return 0;
		if (n >= 1 && n <= MP_SEAL_MAX_CHUNKS)
			return c;
	}
	return 0;
}

void mp_seal_chunk_get(const struct mp_seal_layout *l, uint64_t chunk,
		       struct mp_seal_chunk *out)
{
	uint64_t c = l->chunk_size, i, k, base;

	memset(out, 0, sizeof *out);
	if (chunk < l->head_chunks) {
		uint64_t head = l->object_count ? l->object_offset[0] : l->file_size;
		out->part = MP_SEAL_HEAD;
		out->offset = chunk * c;
		out->len = head - out->offset < c ? head - out->offset : c;
		return;
	}
	/* the object whose chunks hold it (head_chunks <= chunk < chunk_count) */
	i = mp_last_at_most(l->object_first, l->object_count, chunk);
	k = chunk - l->object_first[i];
	base = l->object_offset[i];
	out->object = i;
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		if (k < l->role_chunks[r]) {
			out->part = MP_SEAL_ROLE;
			out->role = l->order[r];
			out->offset = base + k * c;
			out->len = l->role_bytes[r] - k * c < c ? l->role_bytes[r] - k * c : c;
			return;
		}
		k -= l->role_chunks[r];
		base += l->role_bytes[r];
	}
	{
		uint64_t end = region_end(l->file_size, l->object_count, l->object_offset, i);
		out->part = MP_SEAL_GAP;
		out->offset = base + k * c;
		out->len = end - out->offset < c ? end - out->offset : c;
	}
}

uint64_t mp_seal_chunk_at(const struct mp_seal_layout *l, uint64_t pos)
{
	uint64_t c = l->chunk_size, lo, rel, first;

	if (l->object_count == 0 || pos < l->object_offset[0])
		return pos / c;
	lo = mp_last_at_most(l->object_offset, l->object_count, pos);
	rel = pos - l->object_offset[lo];
	first = l->object_first[lo];
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		if (rel < l->role_bytes[r])
			return first + rel / c;
		rel -= l->role_bytes[r];
		first += l->role_chunks[r];
	}
	return first + rel / c;
}

uint64_t mp_seal_role_chunks(const struct mp_seal_layout *l)
{
	return l->object_count * (l->role_chunks[0] + l->role_chunks[1] + l->role_chunks[2]);
}

static uint64_t at_most(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

uint64_t mp_seal_layout_longest(const struct mp_seal_layout *l)
{
	uint64_t c = l->chunk_size, most, ob = object_bytes(l->role_bytes);

	most = at_most(l->object_count ? l->object_offset[0] : l->file_size, c);
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		most = at_most(c, most > l->role_bytes[r] ? most : l->role_bytes[r]);
	for (uint64_t i = 0; i < l->object_count && most < c; i++) {
		uint64_t gap = region_end(l->file_size, l->object_count, l->object_offset, i) -
			       l->object_offset[i] - ob;
		if (gap > most)
			most = at_most(gap, c);
	}
	return most;
}

