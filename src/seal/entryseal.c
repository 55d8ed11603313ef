/* entryseal.c - a seal from the index's per-role digests (entryseal.h). */
#include "config.h"

#include "seal/entryseal.h"
#include "seal/seal_internal.h"

#include "base/file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes read at once while hashing the head and the gaps. */
#define ENTRY_SEAL_WINDOW (1u << 20)

bool mp_entry_seal_possible(const struct mp_pack *pack)
{
	return pack->object_count > 0 && mp_pack_role_sha256(pack, 0, MP_ROLE_UP) != NULL;
}

static uint64_t largest_role(const struct mp_pack *pack)
{
	uint64_t most = 0;

	for (int r = 0; r < MP_ROLE_COUNT; r++)
		if (pack->m.roles[r].expert_bytes > most)
			most = pack->m.roles[r].expert_bytes;
	return most;
}

enum mp_err mp_entry_seal_mountable(const struct mp_pack *pack, struct mp_error *err)
{
	uint64_t most = largest_role(pack);

	if (most <= MP_ENTRY_SEAL_MOUNT_ROLE_MAX)
		return MP_OK;
	return mp_fail(err, MP_E_USAGE, "invalid usage: a role of %" PRIu64 " bytes is "
		       "larger than verify=entries checks on a read (%u bytes: each read "
		       "would read and hash whole roles); 'moepack seal' makes a seal of "
		       "smaller chunks for verify=seal", most, MP_ENTRY_SEAL_MOUNT_ROLE_MAX);
}

/* The smallest chunk size that holds any role whole, or 0 if none can. */
static uint64_t whole_role_chunk(const struct mp_pack *pack)
{
	uint64_t most = largest_role(pack), c = MP_SEAL_MIN_CHUNK;

	while (c < most && c <= MP_SEAL_MAX_CHUNK / 2)
		c <<= 1;
	return c >= most ? c : 0;
}

/* SHA-256 of [ch->offset, +len) of the pack, read through buf. */
static enum mp_err hash_range(const struct mp_pack *pack, const struct mp_seal_chunk *ch,
			      struct mp_sha256 *h, unsigned char *buf,
			      unsigned char out[MP_SHA256_LEN], struct mp_error *err)
{
	for (uint64_t done = 0; done < ch->len;) {
		size_t n = ch->len - done < ENTRY_SEAL_WINDOW ? (size_t)(ch->len - done)
							      : ENTRY_SEAL_WINDOW;
		enum mp_err rc = mp_pread_full(pack->file.fd, buf, n, ch->offset + done, "pack",
					       pack->file.path, MP_E_PACK_IO, err);
		if (rc)
			return rc;
		mp_sha256_update(h, buf, n);
		done += n;
	}
	mp_sha256_final(h, out);
	return MP_OK;
}

/* Every chunk's digest: the index's for a role, hashed here for the rest. */
static enum mp_err fill_digests(struct mp_seal *s, const struct mp_seal_layout *l,
				const struct mp_pack *pack, struct mp_error *err)
{
	unsigned char *buf = malloc(ENTRY_SEAL_WINDOW);
	struct mp_sha256 *h = mp_sha256_new();
	struct mp_seal_zeros zeros = {0};
	enum mp_err rc = MP_OK;

	if (!buf || !h)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory for the index's seal");
	for (uint64_t k = 0; rc == MP_OK && k < l->chunk_count; k++) {
		struct mp_seal_chunk ch;
		const unsigned char *d;

		mp_seal_chunk_get(l, k, &ch);
		if (ch.part != MP_SEAL_ROLE &&
		    ch.offset + ch.len <= mp_file_hole_end(pack->file.fd, ch.offset)) {
			mp_seal_zeros_digest(&zeros, h, buf, ENTRY_SEAL_WINDOW, ch.len,
					     s->digests[k]);
			continue;
		}
		if (ch.part != MP_SEAL_ROLE) {
			rc = hash_range(pack, &ch, h, buf, s->digests[k], err);
			continue;
		}
		d = mp_pack_role_sha256(pack, ch.object, ch.role);
		if (!d)
			rc = mp_fail(err, MP_E_USAGE, "invalid usage: the index records no "
				     "SHA-256 for object %" PRIu64 " role %s", ch.object,
				     mp_role_name(ch.role));
		else
			memcpy(s->digests[k], d, MP_SHA256_LEN);
	}
	mp_sha256_free(h);
	free(buf);
	return rc;
}

static enum mp_err new_seal(struct mp_seal **out, const struct mp_seal_layout *l,
			    const struct mp_pack *pack, struct mp_error *err)
{
	struct mp_seal *s = calloc(1, sizeof *s);

	if (s)
		s->digests = malloc((size_t)l->chunk_count * MP_SHA256_LEN);
	if (!s || !s->digests) {
		mp_seal_free(s);
		return mp_fail(err, MP_E_NOMEM, "out of memory for the index's seal");
	}
	s->flags = MP_SEAL_FLAG_UNANCHORED;
	s->chunk_size = l->chunk_size;
	s->chunk_count = l->chunk_count;
	s->pack_size = pack->file.size;
	memcpy(s->index_sha256, pack->index_digest, MP_SHA256_LEN);
	*out = s;
	return MP_OK;
}

/*
 * The table's bound: one chunk for each role, whatever their number (the
 * index, in the file, bounds it), a chunk for each gap, and for the head
 * and what of the gaps is longer than a chunk, MP_ENTRY_SEAL_MAX_EXTRA.
 */
static uint64_t max_chunks(const struct mp_pack *pack)
{
	return MP_ENTRY_SEAL_MAX_EXTRA + (MP_ROLE_COUNT + 1) * pack->object_count;
}

enum mp_err mp_entry_seal_make(struct mp_seal **out, struct mp_seal_layout *l,
			       const struct mp_pack *pack, struct mp_error *err)
{
	uint64_t c = whole_role_chunk(pack);
	enum mp_err rc;

	*out = NULL;
	memset(l, 0, sizeof *l);
	if (!mp_entry_seal_possible(pack))
		return mp_fail(err, MP_E_USAGE, "invalid usage: a %s pack's index records no "
			       "SHA-256 of its roles to check them against (a seal does: "
			       "'moepack seal')", pack->format->name);
	if (!c)
		return mp_fail(err, MP_E_USAGE, "invalid usage: a role of %" PRIu64
			       " bytes is larger than a checked chunk can be (%u bytes)",
			       largest_role(pack), MP_SEAL_MAX_CHUNK);
	rc = mp_seal_layout_of_pack_max(l, pack, c, max_chunks(pack), err);
	if (rc == MP_OK)
		rc = new_seal(out, l, pack, err);
	if (rc == MP_OK)
		rc = fill_digests(*out, l, pack, err);
	if (rc != MP_OK) {
		mp_seal_free(*out);
		*out = NULL;
		mp_seal_layout_free(l);
	}
	return rc;
}

/* The bad chunks of a check: how many, and the first in file order. */
struct entry_misses {
	uint64_t count, first;
};

static void entry_miss(uint64_t chunk, void *arg)
{
	struct entry_misses *m = arg;

	if (m->count++ == 0 || chunk < m->first)
		m->first = chunk;
}

enum mp_err mp_entry_seal_check(const struct mp_pack *pack, unsigned jobs,
				mp_progress_fn progress, void *progress_arg,
				struct mp_error *err)
{
	struct mp_seal *seal;
	struct mp_seal_layout l;
	struct entry_misses m = {0, 0};
	enum mp_err rc = mp_entry_seal_make(&seal, &l, pack, err);

	if (rc != MP_OK)
		return rc;
	rc = mp_seal_check_part(pack->file.fd, pack->file.path, seal, &l, jobs, true, progress,
				progress_arg, entry_miss, &m, err);
	if (rc == MP_E_SEAL_CHUNK) {
		struct mp_seal_chunk ch;
		char where[160];

		mp_seal_chunk_get(&l, m.first, &ch);
		mp_seal_chunk_describe(pack, &l, m.first, where, sizeof where);
		rc = mp_fail(err, MP_E_SEAL_CHUNK, "%s: bytes %" PRIu64 "..%" PRIu64 " do not "
			     "match the SHA-256 of its index entry (%" PRIu64 " of %" PRIu64
			     " roles differ)", where, ch.offset, ch.offset + ch.len - 1,
			     m.count, pack->index_count);
	}
	mp_seal_free(seal);
	mp_seal_layout_free(&l);
	return rc;
}
