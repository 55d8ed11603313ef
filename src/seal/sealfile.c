/*
 * sealfile.c - the PACK.seal file of seal.h: its header checked field by
 * field, parsed, read, bound to a pack, encoded and written atomically;
 * and a chunk named for a message.  The chunk layout is seal.c's.
 */
#include "config.h"

#include "seal/seal.h"
#include "seal/seal_internal.h"

#include "base/file.h"
#include "base/le.h"
#include "base/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the file ---- */

/* Field offsets inside the 128-byte header (the magic is at 0). */
#define SEAL_VERSION_AT 16
#define SEAL_HEADER_SIZE_AT 20
#define SEAL_FLAGS_AT 24
#define SEAL_RESERVED_AT 28
#define SEAL_CHUNK_SIZE_AT 32
#define SEAL_CHUNK_COUNT_AT 40
#define SEAL_PACK_SIZE_AT 48
#define SEAL_PACK_SHA256_AT 56
#define SEAL_INDEX_SHA256_AT 88
#define SEAL_RESERVED_TAIL_AT 120

/* Size of a seal file with n chunk digests (n <= MP_SEAL_MAX_CHUNKS). */
static uint64_t seal_file_size(uint64_t n)
{
	return MP_SEAL_HEADER_SIZE + (uint64_t)MP_SHA256_LEN * n + MP_SHA256_LEN;
}

/*
 * Check the header fields, in the documented order, from the first
 * min(len, 128) bytes; file_size is the whole file's length.
 */
static enum mp_err parse_header(const unsigned char *b, uint64_t file_size, const char *what,
				struct mp_error *err)
{
	static const unsigned char magic[MP_SEAL_MAGIC_LEN] = MP_SEAL_MAGIC;
	uint64_t cs, n;
	uint32_t v;

	if (file_size < MP_SEAL_HEADER_SIZE)
		return mp_fail(err, MP_E_SEAL_FORMAT,
			       "seal file is malformed: %s is %" PRIu64
			       " bytes, shorter than the %u-byte header",
			       what, file_size, MP_SEAL_HEADER_SIZE);
	if (memcmp(b, magic, MP_SEAL_MAGIC_LEN) != 0)
		return mp_fail(err, MP_E_SEAL_FORMAT,
			       "seal file is malformed: %s: magic is not \"%s\"", what,
			       MP_SEAL_MAGIC);
	if ((v = mp_le32(b + SEAL_VERSION_AT)) != MP_SEAL_VERSION)
		return mp_fail(err, MP_E_SEAL_FORMAT,
			       "seal file is malformed: %s: version is %" PRIu32 ", not %u",
			       what, v, MP_SEAL_VERSION);
	if ((v = mp_le32(b + SEAL_HEADER_SIZE_AT)) != MP_SEAL_HEADER_SIZE)
		return mp_fail(err, MP_E_SEAL_FORMAT,
			       "seal file is malformed: %s: header_size is %" PRIu32
			       ", not %u", what, v, MP_SEAL_HEADER_SIZE);
	if ((v = mp_le32(b + SEAL_FLAGS_AT)) & ~MP_SEAL_FLAG_UNANCHORED)
		return mp_fail(err, MP_E_SEAL_FORMAT,
			       "seal file is malformed: %s: flags 0x%" PRIx32
			       " has unknown bits set", what, v);
	if (mp_le32(b + SEAL_RESERVED_AT) != 0 || mp_le64(b + SEAL_RESERVED_TAIL_AT) != 0)
		return mp_fail(err, MP_E_SEAL_FORMAT,
			       "seal file is malformed: %s: reserved field at offset %d is not 0",
			       what, mp_le32(b + SEAL_RESERVED_AT) != 0 ? SEAL_RESERVED_AT
								       : SEAL_RESERVED_TAIL_AT);
	cs = mp_le64(b + SEAL_CHUNK_SIZE_AT);
	if (!mp_seal_chunk_size_ok(cs))
		return mp_fail(err, MP_E_SEAL_FORMAT,
			       "seal file is malformed: %s: chunk_size %" PRIu64
			       " is not a power of two from %u to %u",
			       what, cs, MP_SEAL_MIN_CHUNK, MP_SEAL_MAX_CHUNK);
	n = mp_le64(b + SEAL_CHUNK_COUNT_AT);
	if (n < 1 || n > MP_SEAL_MAX_CHUNKS)
		return mp_fail(err, MP_E_SEAL_FORMAT,
			       "seal file is malformed: %s: chunk_count %" PRIu64
			       " is not from 1 to %u", what, n, MP_SEAL_MAX_CHUNKS);
	if (file_size != seal_file_size(n))
		return mp_fail(err, MP_E_SEAL_FORMAT,
			       "seal file is malformed: %s is %" PRIu64
			       " bytes, but chunk_count %" PRIu64 " needs exactly %" PRIu64
			       " (%s)",
			       what, file_size, n, seal_file_size(n),
			       file_size < seal_file_size(n) ? "truncated" : "extended");
	return MP_OK;
}

enum mp_err mp_seal_parse(struct mp_seal **out, const unsigned char *buf, size_t len,
			  const char *what, struct mp_error *err)
{
	unsigned char d[MP_SHA256_LEN];
	struct mp_seal *s;
	enum mp_err rc;
	uint64_t n;

	*out = NULL;
	rc = parse_header(buf, len, what, err);
	if (rc != MP_OK)
		return rc;
	n = mp_le64(buf + SEAL_CHUNK_COUNT_AT);
	mp_sha256_buf(buf, len - MP_SHA256_LEN, d);
	if (memcmp(d, buf + len - MP_SHA256_LEN, MP_SHA256_LEN) != 0)
		return mp_fail(err, MP_E_SEAL_FORMAT,
			       "seal file is malformed: %s: seal digest does not match its contents",
			       what);
	s = calloc(1, sizeof *s);
	if (s)
		s->digests = malloc(n * MP_SHA256_LEN);
	if (!s || !s->digests) {
		mp_seal_free(s);
		return mp_fail(err, MP_E_NOMEM, "out of memory reading seal %s", what);
	}
	s->flags = mp_le32(buf + SEAL_FLAGS_AT);
	s->chunk_size = mp_le64(buf + SEAL_CHUNK_SIZE_AT);
	s->chunk_count = n;
	s->pack_size = mp_le64(buf + SEAL_PACK_SIZE_AT);
	memcpy(s->pack_sha256, buf + SEAL_PACK_SHA256_AT, MP_SHA256_LEN);
	memcpy(s->index_sha256, buf + SEAL_INDEX_SHA256_AT, MP_SHA256_LEN);
	memcpy(s->digests, buf + MP_SEAL_HEADER_SIZE, n * MP_SHA256_LEN);
	memcpy(s->seal_digest, d, MP_SHA256_LEN);
	*out = s;
	return MP_OK;
}

enum mp_err mp_seal_read(struct mp_seal **out, const char *path, struct mp_error *err)
{
	unsigned char head[MP_SEAL_HEADER_SIZE], extra;
	unsigned char *buf = NULL;
	struct stat st;
	enum mp_err rc;
	uint64_t size;
	int fd;

	*out = NULL;
	rc = mp_open_regular(path, "seal", MP_E_SEAL_IO, &fd, &st, err);
	if (rc != MP_OK)
		return rc;
	size = (uint64_t)st.st_size;
	if (size >= MP_SEAL_HEADER_SIZE &&
	    (rc = mp_pread_full(fd, head, sizeof head, 0, "seal", path, MP_E_SEAL_IO, err)))
		goto out;
	rc = parse_header(head, size, path, err);
	if (rc != MP_OK)
		goto out;
	/* size is now 128 + 32 * chunk_count + 32 with chunk_count bounded */
	buf = malloc((size_t)size);
	if (!buf) {
		rc = mp_fail(err, MP_E_NOMEM, "out of memory reading seal %s", path);
		goto out;
	}
	if ((rc = mp_pread_full(fd, buf, (size_t)size, 0, "seal", path, MP_E_SEAL_IO, err)))
		goto out;
	if (mp_pread_all(fd, &extra, 1, size, NULL) != MP_READ_EOF) {
		rc = mp_fail(err, MP_E_SEAL_FORMAT,
			     "seal file is malformed: %s grew while it was read", path);
		goto out;
	}
	rc = mp_seal_parse(out, buf, (size_t)size, path, err);
out:
	free(buf);
	close(fd);
	return rc;
}

void mp_seal_free(struct mp_seal *s)
{
	if (!s)
		return;
	free(s->digests);
	free(s);
}

enum mp_err mp_seal_bind(const struct mp_seal *s, const struct mp_pack *pack,
			 const struct mp_seal_layout *l, struct mp_error *err)
{
	const char *key = pack->format->sha256_key;
	char have[MP_SHA256_HEX];

	if (s->pack_size != pack->file.size)
		return mp_fail(err, MP_E_SEAL_MISMATCH,
			       "seal is not this pack's: it seals %" PRIu64
			       " bytes, the pack is %" PRIu64,
			       s->pack_size, pack->file.size);
	if (memcmp(s->index_sha256, pack->index_digest, MP_SHA256_LEN) != 0) {
		mp_sha256_hex(s->index_sha256, have);
		return mp_fail(err, MP_E_SEAL_MISMATCH,
			       "seal is not this pack's: its index_sha256 %s is not the pack's %s",
			       have, pack->m.index_sha256);
	}
	if (pack->m.sha256[0]) {
		if (mp_seal_unanchored(s))
			return mp_fail(err, MP_E_SEAL_MISMATCH,
				       "seal is not this pack's: the seal is unanchored but the "
				       "manifest has %s; reseal the pack", key);
		mp_sha256_hex(s->pack_sha256, have);
		if (strcmp(have, pack->m.sha256) != 0)
			return mp_fail(err, MP_E_SEAL_MISMATCH,
				       "seal is not this pack's: its pack_sha256 %s is not the "
				       "manifest's %s %s",
				       have, key, pack->m.sha256);
	} else if (!mp_seal_unanchored(s)) {
		return mp_fail(err, MP_E_SEAL_MISMATCH,
			       "seal is not this pack's: the seal is anchored but the manifest "
			       "has no %s", key);
	}
	if (l->chunk_size != s->chunk_size || l->chunk_count != s->chunk_count) {
		return mp_fail(err, MP_E_SEAL_MISMATCH,
			       "seal is not this pack's: chunk_count %" PRIu64
			       " is not the %" PRIu64 " chunks of %" PRIu64
			       " bytes the pack's layout has",
			       s->chunk_count, l->chunk_count, s->chunk_size);
	}
	return MP_OK;
}

bool mp_seal_has_pack_sha256(const struct mp_seal *s)
{
	static const unsigned char none[MP_SHA256_LEN];

	return memcmp(s->pack_sha256, none, MP_SHA256_LEN) != 0;
}

bool mp_seal_digest_ok(const struct mp_seal *s, uint64_t chunk,
		       const unsigned char digest[MP_SHA256_LEN])
{
	return chunk < s->chunk_count &&
	       memcmp(digest, s->digests[chunk], MP_SHA256_LEN) == 0;
}

/* ---- writing ---- */

unsigned char *mp_seal_encode(struct mp_seal *s, size_t *len)
{
	static const unsigned char magic[MP_SEAL_MAGIC_LEN] = MP_SEAL_MAGIC;
	size_t n;
	unsigned char *b;

	if (s->chunk_count < 1 || s->chunk_count > MP_SEAL_MAX_CHUNKS)
		return NULL;
	n = (size_t)seal_file_size(s->chunk_count);
	b = calloc(1, n);
	if (!b)
		return NULL;
	memcpy(b, magic, MP_SEAL_MAGIC_LEN);
	mp_put_le32(b + SEAL_VERSION_AT, MP_SEAL_VERSION);
	mp_put_le32(b + SEAL_HEADER_SIZE_AT, MP_SEAL_HEADER_SIZE);
	mp_put_le32(b + SEAL_FLAGS_AT, s->flags);
	mp_put_le64(b + SEAL_CHUNK_SIZE_AT, s->chunk_size);
	mp_put_le64(b + SEAL_CHUNK_COUNT_AT, s->chunk_count);
	mp_put_le64(b + SEAL_PACK_SIZE_AT, s->pack_size);
	memcpy(b + SEAL_PACK_SHA256_AT, s->pack_sha256, MP_SHA256_LEN);
	memcpy(b + SEAL_INDEX_SHA256_AT, s->index_sha256, MP_SHA256_LEN);
	memcpy(b + MP_SEAL_HEADER_SIZE, s->digests, s->chunk_count * MP_SHA256_LEN);
	mp_sha256_buf(b, n - MP_SHA256_LEN, s->seal_digest);
	memcpy(b + n - MP_SHA256_LEN, s->seal_digest, MP_SHA256_LEN);
	*len = n;
	return b;
}

enum mp_err mp_seal_write(struct mp_seal *s, const char *path, struct mp_error *err)
{
	size_t len;
	unsigned char *b;
	enum mp_err rc;

	if (s->chunk_count < 1 || s->chunk_count > MP_SEAL_MAX_CHUNKS ||
	    !mp_seal_chunk_size_ok(s->chunk_size) || (s->flags & ~MP_SEAL_FLAG_UNANCHORED))
		return mp_fail(err, MP_E_USAGE, "invalid usage: seal for %s has bad fields", path);
	b = mp_seal_encode(s, &len);
	if (!b)
		return mp_fail(err, MP_E_NOMEM, "out of memory writing %s", path);
	rc = mp_output_write_atomic(path, MP_TMP_PRIVATE, MP_E_SEAL_IO, b, len, err);
	free(b);
	return rc;
}

void mp_seal_chunk_describe(const struct mp_pack *pack, const struct mp_seal_layout *l,
			    uint64_t chunk, char *buf, size_t size)
{
	struct mp_seal_chunk ch;
	uint64_t li, expert;

	if (size == 0)
		return;
	if (chunk >= l->chunk_count) {
		snprintf(buf, size, "chunk %" PRIu64 " (past the last)", chunk);
		return;
	}
	mp_seal_chunk_get(l, chunk, &ch);
	if (ch.part == MP_SEAL_HEAD) {
		snprintf(buf, size, "header and index");
		return;
	}
	li = pack->m.num_experts ? ch.object / pack->m.num_experts : 0;
	expert = pack->m.num_experts ? ch.object % pack->m.num_experts : ch.object;
	if (li >= pack->m.layer_count) {
		snprintf(buf, size, "object %" PRIu64, ch.object);
		return;
	}
	if (ch.part == MP_SEAL_ROLE)
		snprintf(buf, size, "layer %" PRIu32 " expert %" PRIu64 " role %s",
			 pack->m.layer_ids[li], expert, mp_role_name(ch.role));
	else
		snprintf(buf, size, "padding after layer %" PRIu32 " expert %" PRIu64,
			 pack->m.layer_ids[li], expert);
}
