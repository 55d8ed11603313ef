/* buildseal.c - chunk digests while building, for --resume and PACK.seal
 * (buildseal.h). */
#include "config.h"

#include "writer/kimi/buildseal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "base/outfile.h"
#include "pack/pack.h"

enum mp_err mp_build_seal_init(struct mp_build_seal *s, const struct mp_layout *l,
			       struct mp_error *err)
{
	uint64_t chunk_size;
	enum mp_err rc;

	memset(s, 0, sizeof *s);
	s->fd = -1;
	s->offsets = malloc((l->objects + 1) * sizeof *s->offsets);
	if (!s->offsets)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (uint64_t o = 0; o <= l->objects; o++)
		s->offsets[o] = o < l->objects ? mp_layout_object_offset(l, o) : l->size;
	chunk_size = mp_seal_pick_chunk_size(l->size, l->objects, s->offsets, l->role_bytes);
	if (chunk_size == 0)
		return mp_fail(err, MP_E_SEAL_LIMIT, "%s: no chunk size keeps the table of a "
			       "%" PRIu64 "-byte pack under %u bytes",
			       mp_err_summary(MP_E_SEAL_LIMIT), l->size, MP_SEAL_MAX_TABLE);
	rc = mp_seal_layout_init(&s->l, l->size, l->objects, s->offsets, l->role_bytes,
				 chunk_size, err);
	if (rc)
		return rc;
	s->digests = calloc(s->l.chunk_count, sizeof *s->digests);
	s->h = mp_sha256_new();
	if (!s->digests || !s->h)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	mp_build_seal_seek(s, 0);
	return MP_OK;
}

void mp_build_seal_free(struct mp_build_seal *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->offsets)
		mp_seal_layout_free(&s->l);
	mp_sha256_free(s->h);
	free(s->digests);
	free(s->offsets);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}

void mp_build_seal_seek(struct mp_build_seal *s, uint64_t pos)
{
	unsigned char scratch[MP_SHA256_LEN];
	struct mp_seal_chunk c;

	mp_sha256_final(s->h, scratch); /* drop whatever was being hashed */
	s->pos = pos;
	if (pos >= s->l.file_size) {
		s->chunk = s->l.chunk_count;
		s->chunk_end = pos;
		return;
	}
	s->chunk = mp_seal_chunk_at(&s->l, pos);
	mp_seal_chunk_get(&s->l, s->chunk, &c);
	s->chunk_end = c.offset + c.len;
}

void mp_build_seal_feed(struct mp_build_seal *s, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	while (n && s->chunk < s->l.chunk_count) {
		uint64_t room = s->chunk_end - s->pos;
		size_t take = n < room ? n : (size_t)room;

		mp_sha256_update(s->h, p, take);
		p += take;
		n -= take;
		s->pos += take;
		if (s->pos == s->chunk_end) {
			struct mp_seal_chunk c;

			mp_sha256_final(s->h, s->digests[s->chunk]);
			if (++s->chunk < s->l.chunk_count) {
				mp_seal_chunk_get(&s->l, s->chunk, &c);
				s->chunk_end = c.offset + c.len;
			}
		}
	}
}

uint64_t mp_build_seal_chunks_before(const struct mp_build_seal *s, uint64_t object)
{
	return object >= s->l.object_count ? s->l.chunk_count : s->l.object_first[object];
}

enum mp_err mp_build_seal_open_record(struct mp_build_seal *s, const char *path,
				      const struct stat *expect, struct stat *st,
				      struct mp_error *err)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->saved = 0;
	return mp_open_output(path, expect ? O_RDWR : O_RDWR | O_CREAT | O_EXCL, expect,
			      "chunk digests", MP_E_PACK_IO, &s->fd, st, err);
}

enum mp_err mp_build_seal_load(struct mp_build_seal *s, const char *path, uint64_t chunks,
			       struct mp_error *err)
{
	enum mp_err rc;

	if (chunks > s->l.chunk_count)
		return mp_fail(err, MP_E_PACK_IO, "cannot read chunk digests %s: %" PRIu64
			       " chunks, the layout has %" PRIu64, path, chunks, s->l.chunk_count);
	rc = mp_pread_full(s->fd, s->digests, (size_t)chunks * MP_SHA256_LEN, 0, "chunk digests",
			   path, MP_E_PACK_IO, err);
	if (rc)
		return rc;
	s->saved = chunks;
	return MP_OK;
}

enum mp_err mp_build_seal_save(struct mp_build_seal *s, const char *path, uint64_t chunks,
			       struct mp_error *err)
{
	const unsigned char *p;
	uint64_t pos;
	size_t n;
	enum mp_err rc;

	if (chunks <= s->saved)
		return MP_OK;
	p = s->digests[s->saved];
	pos = s->saved * MP_SHA256_LEN;
	n = (size_t)(chunks - s->saved) * MP_SHA256_LEN;
	rc = mp_pwrite_full(s->fd, p, n, pos, path, err);
	if (rc)
		return rc;
	if (fdatasync(s->fd) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", path, strerror(errno));
	s->saved = chunks;
	return MP_OK;
}

void mp_build_seal_unsave(struct mp_build_seal *s, uint64_t from)
{
	if (from < s->saved)
		s->saved = from;
}

enum mp_err mp_build_seal_check(const struct mp_build_seal *s, int fd, const char *what,
				uint64_t objects, mp_seal_bad_fn bad, void *bad_arg,
				const struct mp_cancel *cancel, struct mp_error *err)
{
	struct mp_seal_layout done;
	struct mp_seal sofar;
	uint64_t end = objects < s->l.object_count ? s->offsets[objects] : s->l.file_size;
	enum mp_err rc;

	/* the done part is itself a pack-shaped prefix whose chunks are
	 * numbered as the whole layout's */
	rc = mp_seal_layout_init(&done, end, objects, s->offsets, s->l.role_bytes,
				 s->l.chunk_size, err);
	if (rc)
		return rc;
	memset(&sofar, 0, sizeof sofar);
	sofar.chunk_size = s->l.chunk_size;
	sofar.chunk_count = done.chunk_count;
	sofar.pack_size = end;
	sofar.digests = s->digests;
	rc = mp_seal_check_file_until(fd, what, &sofar, &done, 0, NULL, NULL, bad, bad_arg, cancel,
				      err);
	mp_seal_layout_free(&done);
	return rc;
}

enum mp_err mp_build_seal_write(struct mp_build_seal *s, const char *path,
				const unsigned char index_sha256[MP_SHA256_LEN],
				const unsigned char *pack_sha256, char seal_hex[MP_SHA256_HEX],
				struct mp_error *err)
{
	struct mp_seal seal;
	char *tmp = mp_path_with_suffix(path, ".tmp");
	enum mp_err rc;

	if (!tmp)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	/* a temporary left by a crash is this build's own, under its lock */
	unlink(tmp);
	free(tmp);
	memset(&seal, 0, sizeof seal);
	seal.flags = pack_sha256 ? 0 : MP_SEAL_FLAG_UNANCHORED;
	seal.chunk_size = s->l.chunk_size;
	seal.chunk_count = s->l.chunk_count;
	seal.pack_size = s->l.file_size;
	if (pack_sha256)
		memcpy(seal.pack_sha256, pack_sha256, MP_SHA256_LEN);
	memcpy(seal.index_sha256, index_sha256, MP_SHA256_LEN);
	seal.digests = s->digests;
	rc = mp_seal_write(&seal, path, err);
	if (!rc)
		mp_sha256_hex(seal.seal_digest, seal_hex);
	return rc;
}
