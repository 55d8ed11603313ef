/*
 * buildsource.c - the bytes a Kimi build expects, which its phases compare
 * and copy: the pack's first data_start bytes, and the GGUF slice of each
 * entry.  A file of its own below build.c and the phases it runs
 * (buildcopy.c, buildcompare.c), so that they call it and not the file
 * that calls them: no call goes back up.
 */
#include "config.h"

#include <string.h>

#include "pack/kimi/index.h"
#include "writer/kimi/build_internal.h"

/* Bytes [pos, pos + n) of the pack's first data_start bytes: header,
 * entries, zeros. */
void mp_build_prefix_bytes(const struct mp_layout *l, uint64_t pos, unsigned char *out,
			   size_t n)
{
	unsigned char raw[MP_ENTRY_SIZE > MP_HEADER_SIZE ? MP_ENTRY_SIZE : MP_HEADER_SIZE];

	memset(out, 0, n);
	if (pos < MP_HEADER_SIZE) {
		size_t take = MP_HEADER_SIZE - pos < n ? MP_HEADER_SIZE - (size_t)pos : n;

		mp_header_encode(raw, l->index_count, l->data_start);
		memcpy(out, raw + pos, take);
	}
	for (uint64_t at = pos < MP_HEADER_SIZE ? MP_HEADER_SIZE : pos;
	     at < pos + n && at < l->index_end;) {
		uint64_t i = (at - MP_HEADER_SIZE) / MP_ENTRY_SIZE;
		uint64_t start = MP_HEADER_SIZE + i * MP_ENTRY_SIZE;
		uint64_t skip = at - start;
		uint64_t take = MP_ENTRY_SIZE - skip;

		if (take > pos + n - at)
			take = pos + n - at;
		mp_layout_entry(l, i, raw);
		memcpy(out + (at - pos), raw + skip, (size_t)take);
		at += take;
	}
}

/* The GGUF slice entry i comes from. */
void mp_build_entry_source(const struct build *b, uint64_t i, const struct mp_shard **shard,
			   uint64_t *offset, uint64_t *nbytes, uint64_t *pack_offset)
{
	uint64_t object = i / 3;
	int role = (int)(i % 3);
	uint64_t layer = MP_ACTIVE_FIRST + object / b->l.experts;
	uint64_t expert = object % b->l.experts;
	const struct mp_shard_tensor *t = b->ex->tensor[layer][role];

	*shard = &b->set->shards[t->shard];
	*nbytes = b->l.role_bytes[role];
	*offset = t->data_offset + expert * *nbytes;
	*pack_offset = mp_layout_object_offset(&b->l, object);
	for (int r = 0; r < role; r++)
		*pack_offset += b->l.role_bytes[r];
}
