/*
 * check_seal.c - the seal: chunk layout arithmetic, the file's parser and
 * every refusal, binding to a pack, hashing and checking on many threads.
 * Expected digests are computed by the fixture with OpenSSL directly, and
 * expected layouts by walking the objects here, not by seal.c.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "pack/digest.h"
#include "base/errors.h"
#include "fixture.h"
#include "pack/pack.h"
#include "seal/seal.h"

#define KB64 (64u << 10)

/*
 * Walk every chunk of l: they must tile [0, file_size) in order, each at
 * most chunk_size long and not empty, never cross a region (head, role,
 * gap) boundary, and chunk_at must find each at its first and last byte.
 */
static void check_tiling(const struct mp_seal_layout *l)
{
	uint64_t pos = 0;
	for (uint64_t c = 0; c < l->chunk_count; c++) {
		struct mp_seal_chunk ch;
		mp_seal_chunk_get(l, c, &ch);
		ck_assert_msg(ch.offset == pos, "chunk %" PRIu64 " at %" PRIu64 ", want %" PRIu64,
			      c, ch.offset, pos);
		ck_assert(ch.len > 0 && ch.len <= l->chunk_size);
		ck_assert_uint_eq(mp_seal_chunk_at(l, ch.offset), c);
		ck_assert_uint_eq(mp_seal_chunk_at(l, ch.offset + ch.len - 1), c);
		if (ch.part == MP_SEAL_HEAD) {
			ck_assert(l->object_count == 0 || ch.offset + ch.len <= l->object_offset[0]);
		} else {
			uint64_t base = l->object_offset[ch.object], rs = base;
			ck_assert_uint_lt(ch.object, l->object_count);
			ck_assert(c >= l->object_first[ch.object] && c < l->object_first[ch.object + 1]);
			if (ch.part == MP_SEAL_ROLE) {
				for (int r = 0; r < (int)ch.role; r++)
					rs += l->role_bytes[r];
				ck_assert(ch.offset >= rs);
				ck_assert(ch.offset + ch.len <= rs + l->role_bytes[ch.role]);
				ck_assert_uint_eq((ch.offset - rs) % l->chunk_size, 0);
			} else {
				uint64_t gs = base + l->role_bytes[0] + l->role_bytes[1] +
					      l->role_bytes[2];
				uint64_t ge = ch.object + 1 < l->object_count
						      ? l->object_offset[ch.object + 1]
						      : l->file_size;
				ck_assert(ch.offset >= gs && ch.offset + ch.len <= ge);
				ck_assert_uint_eq((ch.offset - gs) % l->chunk_size, 0);
			}
		}
		pos += ch.len;
	}
	ck_assert_uint_eq(pos, l->file_size);
	ck_assert_uint_eq(l->object_first[l->object_count], l->chunk_count);
}

/* Odd layout: a head of 70000 bytes, roles of 100000, 65536 and 1 bytes,
 * gaps of 0, 1, 131073 bytes and a tail gap of 5. */
START_TEST(test_layout_odd)
{
	const uint64_t rb[3] = {100000, 65536, 1};
	const uint64_t ob = 165537;
	uint64_t off[4];
	struct mp_seal_layout l;
	struct mp_error err;
	struct mp_seal_chunk ch;

	off[0] = 70000;
	off[1] = off[0] + ob;          /* gap 0 */
	off[2] = off[1] + ob + 1;      /* gap 1 */
	off[3] = off[2] + ob + 131073; /* gap 131073: 3 chunks */
	ck_assert_int_eq(mp_seal_layout_init(&l, off[3] + ob + 5, 4, off, rb, KB64, &err), MP_OK);
	/* head 2 chunks; each object 2 + 1 + 1 role chunks plus its gap */
	ck_assert_uint_eq(l.head_chunks, 2);
	ck_assert_uint_eq(l.role_chunks[0], 2);
	ck_assert_uint_eq(l.role_chunks[1], 1);
	ck_assert_uint_eq(l.role_chunks[2], 1);
	ck_assert_uint_eq(l.object_first[0], 2);
	ck_assert_uint_eq(l.object_first[1], 6);
	ck_assert_uint_eq(l.object_first[2], 11);
	ck_assert_uint_eq(l.object_first[3], 18);
	ck_assert_uint_eq(l.chunk_count, 23);
	check_tiling(&l);

	/* the boundaries, one by one */
	ck_assert_uint_eq(mp_seal_chunk_at(&l, 0), 0);
	ck_assert_uint_eq(mp_seal_chunk_at(&l, KB64 - 1), 0);
	ck_assert_uint_eq(mp_seal_chunk_at(&l, KB64), 1);
	ck_assert_uint_eq(mp_seal_chunk_at(&l, 69999), 1);
	ck_assert_uint_eq(mp_seal_chunk_at(&l, 70000), 2); /* up of object 0 */
	ck_assert_uint_eq(mp_seal_chunk_at(&l, 70000 + KB64), 3);
	ck_assert_uint_eq(mp_seal_chunk_at(&l, 70000 + 99999), 3);
	ck_assert_uint_eq(mp_seal_chunk_at(&l, 70000 + 100000), 4); /* gate */
	ck_assert_uint_eq(mp_seal_chunk_at(&l, 70000 + 165536), 5); /* down: 1 byte */
	ck_assert_uint_eq(mp_seal_chunk_at(&l, off[1]), 6);       /* no gap before */
	ck_assert_uint_eq(mp_seal_chunk_at(&l, off[2] - 1), 10);  /* 1-byte gap */
	mp_seal_chunk_get(&l, 10, &ch);
	ck_assert_int_eq(ch.part, MP_SEAL_GAP);
	ck_assert_uint_eq(ch.object, 1);
	ck_assert_uint_eq(ch.len, 1);
	mp_seal_chunk_get(&l, 5, &ch);
	ck_assert_int_eq(ch.part, MP_SEAL_ROLE);
	ck_assert_int_eq(ch.role, MP_ROLE_DOWN);
	ck_assert_uint_eq(ch.len, 1);
	mp_seal_chunk_get(&l, 17, &ch); /* last gap chunk of object 2 */
	ck_assert_int_eq(ch.part, MP_SEAL_GAP);
	ck_assert_uint_eq(ch.len, 1);
	mp_seal_chunk_get(&l, 22, &ch); /* the tail gap */
	ck_assert_int_eq(ch.part, MP_SEAL_GAP);
	ck_assert_uint_eq(ch.object, 3);
	ck_assert_uint_eq(ch.len, 5);
	ck_assert_uint_eq(mp_seal_chunk_at(&l, l.file_size - 1), 22);
	mp_seal_layout_free(&l);
}
END_TEST

/* A pack whose first object sits at 0 has no head; no objects: all head. */
START_TEST(test_layout_no_head_no_objects)
{
	const uint64_t rb[3] = {KB64, KB64, KB64};
	uint64_t off[2] = {0, 3 * KB64};
	struct mp_seal_layout l;
	struct mp_error err;

	ck_assert_int_eq(mp_seal_layout_init(&l, 6 * KB64, 2, off, rb, KB64, &err), MP_OK);
	ck_assert_uint_eq(l.head_chunks, 0);
	ck_assert_uint_eq(l.chunk_count, 6);
	check_tiling(&l);
	mp_seal_layout_free(&l);

	ck_assert_int_eq(mp_seal_layout_init(&l, 3 * KB64 + 7, 0, NULL, rb, KB64, &err), MP_OK);
	ck_assert_uint_eq(l.head_chunks, 4);
	ck_assert_uint_eq(l.chunk_count, 4);
	check_tiling(&l);
	mp_seal_layout_free(&l);
}
END_TEST

START_TEST(test_layout_refusals)
{
	const uint64_t rb[3] = {KB64, KB64, KB64};
	uint64_t off[2] = {0, 3 * KB64};
	uint64_t bad_off[2] = {0, KB64}; /* objects overlap */
	struct mp_seal_layout l;
	struct mp_error err;

	ck_assert_int_eq(mp_seal_layout_init(&l, 6 * KB64, 2, off, rb, KB64 + 1, &err), MP_E_USAGE);
	fx_assert_err(&err, MP_E_USAGE, "chunk size");
	ck_assert_int_eq(mp_seal_layout_init(&l, 6 * KB64, 2, off, rb, KB64 / 2, &err), MP_E_USAGE);
	ck_assert_int_eq(mp_seal_layout_init(&l, 6 * KB64, 2, off, rb, 2ull << 30, &err), MP_E_USAGE);
	ck_assert_int_eq(mp_seal_layout_init(&l, 6 * KB64, 2, bad_off, rb, KB64, &err), MP_E_USAGE);
	ck_assert_int_eq(mp_seal_layout_init(&l, 6 * KB64 - 1, 2, off, rb, KB64, &err), MP_E_USAGE);
	ck_assert_int_eq(mp_seal_layout_init(&l, 0, 0, NULL, rb, KB64, &err), MP_E_USAGE);
}
END_TEST

/* The Kimi-K3 geometry: 82,432 objects of 3.61 + 3.61 + 4.73 MB. */
START_TEST(test_layout_k3)
{
	const uint64_t rb[3] = {3612672, 3612672, 4730880};
	const uint64_t n = 92 * 896, ob = rb[0] + rb[1] + rb[2];
	const uint64_t head = 40 + 152 * 3 * n;
	uint64_t *off = malloc(n * sizeof *off), start = (head + 4095) / 4096 * 4096;
	struct mp_seal_layout l;
	struct mp_error err;

	ck_assert_ptr_nonnull(off);
	for (uint64_t i = 0; i < n; i++)
		off[i] = start + i * ob;
	ck_assert_uint_eq(mp_seal_pick_chunk_size(start + n * ob, n, off, rb), 2u << 20);
	ck_assert_int_eq(mp_seal_layout_init(&l, start + n * ob, n, off, rb, 1u << 20, &err),
			 MP_E_SEAL_LIMIT);
	fx_assert_err(&err, MP_E_SEAL_LIMIT, "chunk size 1048576");
	ck_assert_int_eq(mp_seal_layout_init(&l, start + n * ob, n, off, rb, 2u << 20, &err),
			 MP_OK);
	ck_assert_uint_eq(l.chunk_count - l.head_chunks, 577024);
	ck_assert_uint_le(l.chunk_count * 32, MP_SEAL_MAX_TABLE);
	/* spot checks of chunk_at against chunk_get at role boundaries */
	for (uint64_t i = 0; i < n; i += 4999) {
		uint64_t c = mp_seal_chunk_at(&l, off[i] + rb[0]);
		struct mp_seal_chunk ch;
		mp_seal_chunk_get(&l, c, &ch);
		ck_assert_int_eq(ch.part, MP_SEAL_ROLE);
		ck_assert_int_eq(ch.role, MP_ROLE_GATE);
		ck_assert_uint_eq(ch.object, i);
		ck_assert_uint_eq(ch.offset, off[i] + rb[0]);
	}
	mp_seal_layout_free(&l);
	free(off);
}
END_TEST

/* ---- the file ---------------------------------------------------------- */

static struct mp_seal *sample_seal(uint64_t n)
{
	struct mp_seal *s = calloc(1, sizeof *s);
	ck_assert_ptr_nonnull(s);
	s->digests = malloc(n * 32);
	ck_assert_ptr_nonnull(s->digests);
	s->chunk_size = KB64;
	s->chunk_count = n;
	s->pack_size = 12345;
	memset(s->pack_sha256, 0xaa, 32);
	memset(s->index_sha256, 0xbb, 32);
	for (uint64_t i = 0; i < n; i++)
		memset(s->digests[i], (int)i, 32);
	return s;
}

/* Re-seal the trailer so that only the field under test is wrong. */
static void reseal(unsigned char *b, size_t len)
{
	fx_sha256_of(b, len - 32, b + len - 32);
}

START_TEST(test_encode_layout)
{
	struct mp_seal *s = sample_seal(3), *back;
	struct mp_error err;
	size_t len;
	unsigned char *b = mp_seal_encode(s, &len), d[32];

	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(len, 128 + 3 * 32 + 32);
	ck_assert_mem_eq(b, "MOEPACKSEALv1\0\0\0", 16);
	ck_assert_uint_eq(b[16], 1);
	ck_assert_uint_eq(b[20], 128);
	ck_assert_uint_eq(b[32 + 2], 1); /* 65536 little-endian */
	ck_assert_uint_eq(b[40], 3);
	ck_assert_uint_eq(b[48] | b[49] << 8, 12345);
	ck_assert_uint_eq(b[56], 0xaa);
	ck_assert_uint_eq(b[88], 0xbb);
	ck_assert_uint_eq(b[128 + 32 * 2], 2);
	fx_sha256_of(b, len - 32, d);
	ck_assert_mem_eq(b + len - 32, d, 32);
	ck_assert_mem_eq(s->seal_digest, d, 32);
	ck_assert_int_eq(mp_seal_parse(&back, b, len, "x", &err), MP_OK);
	ck_assert_uint_eq(back->chunk_count, 3);
	ck_assert_uint_eq(back->chunk_size, KB64);
	ck_assert_uint_eq(back->pack_size, 12345);
	ck_assert(!mp_seal_unanchored(back));
	ck_assert_mem_eq(back->digests, s->digests, 3 * 32);
	ck_assert_mem_eq(back->seal_digest, d, 32);
	mp_seal_free(back);
	free(b);
	mp_seal_free(s);
}
END_TEST

/* One refusal per field, each with the others intact and the trailer right. */
START_TEST(test_parse_refusals)
{
	static const struct {
		size_t off;
		unsigned width; /* 1: a byte; 4, 8: the field's new value */
		uint64_t value;
		const char *needle;
	} cases[] = {
		{0, 1, 'X', "magic"},
		{13, 1, 'x', "magic"},
		{16, 4, 2, "version is 2"},
		{20, 4, 127, "header_size is 127"},
		{24, 4, 2, "flags 0x2"},
		{24, 4, 0x80000001u, "flags"},
		{28, 4, 1, "reserved field at offset 28"},
		{120, 8, 1, "reserved field at offset 120"},
		{32, 8, 0, "chunk_size 0"},
		{32, 8, 65537, "chunk_size 65537"},
		{32, 8, 32768, "chunk_size 32768"},
		{32, 8, 1ull << 31, "chunk_size 2147483648"},
		{32, 8, UINT64_MAX, "chunk_size"},
		{40, 8, 0, "chunk_count 0"},
		{40, 8, MP_SEAL_MAX_CHUNKS + 1ull, "chunk_count 1048577"},
		{40, 8, UINT64_MAX, "chunk_count 18446744073709551615"},
		{40, 8, 1ull << 59, "chunk_count"},
		{40, 8, 2, "needs exactly 224 (extended)"},
		{40, 8, 4, "needs exactly 288 (truncated)"},
	};
	struct mp_seal *s = sample_seal(3), *back;
	struct mp_error err;
	size_t len;
	unsigned char *good = mp_seal_encode(s, &len), *b = malloc(len);

	ck_assert_ptr_nonnull(good);
	ck_assert_ptr_nonnull(b);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char label[64];
		memcpy(b, good, len);
		if (cases[i].width == 1)
			b[cases[i].off] = (unsigned char)cases[i].value;
		else if (cases[i].width == 4)
			fx_put_le(b + cases[i].off, (uint32_t)cases[i].value, 4);
		else
			fx_put_le(b + cases[i].off, cases[i].value, 8);
		reseal(b, len);
		snprintf(label, sizeof label, "case %zu", i);
		back = (struct mp_seal *)1;
		ck_assert_int_eq(mp_seal_parse(&back, b, len, "S", &err), MP_E_SEAL_FORMAT);
		ck_assert_ptr_null(back);
		fx_assert_err_labeled(label, &err, MP_E_SEAL_FORMAT, "seal file is malformed",
				      cases[i].needle);
	}
	/* the trailer itself, and a changed digest under a stale trailer */
	memcpy(b, good, len);
	b[len - 1] ^= 1;
	ck_assert_int_eq(mp_seal_parse(&back, b, len, "S", &err), MP_E_SEAL_FORMAT);
	fx_assert_err(&err, MP_E_SEAL_FORMAT, "seal digest does not match");
	memcpy(b, good, len);
	b[128 + 40] ^= 1;
	ck_assert_int_eq(mp_seal_parse(&back, b, len, "S", &err), MP_E_SEAL_FORMAT);
	fx_assert_err(&err, MP_E_SEAL_FORMAT, "seal digest does not match");
	/* truncated and extended buffers, down to nothing */
	for (size_t n = 0; n < len; n += (n < 140 ? 1 : 29)) {
		ck_assert_int_eq(mp_seal_parse(&back, good, n, "S", &err), MP_E_SEAL_FORMAT);
		ck_assert_ptr_null(back);
	}
	ck_assert_int_eq(mp_seal_parse(&back, good, 127, "S", &err), MP_E_SEAL_FORMAT);
	fx_assert_err(&err, MP_E_SEAL_FORMAT, "127 bytes, shorter than the 128-byte header");
	{
		unsigned char *ext = calloc(1, len + 32);
		ck_assert_ptr_nonnull(ext);
		memcpy(ext, good, len);
		ck_assert_int_eq(mp_seal_parse(&back, ext, len + 32, "S", &err), MP_E_SEAL_FORMAT);
		fx_assert_err(&err, MP_E_SEAL_FORMAT, "extended");
		free(ext);
	}
	/* flag bit 0 is the one allowed */
	memcpy(b, good, len);
	fx_put_le(b + 24, 1, 4);
	reseal(b, len);
	ck_assert_int_eq(mp_seal_parse(&back, b, len, "S", &err), MP_OK);
	ck_assert(mp_seal_unanchored(back));
	mp_seal_free(back);
	free(b);
	free(good);
	mp_seal_free(s);
}
END_TEST

/* How many entries of dir start with prefix. */
static int entries_named(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

START_TEST(test_read_write)
{
	struct fx f;
	char path[PATH_MAX];
	struct mp_seal *s = sample_seal(5), *back;
	struct mp_error err;
	unsigned char *raw;
	size_t len;

	fx_init(&f);
	fx_path(&f, "x.seal", path, sizeof path);
	ck_assert_int_eq(mp_seal_write(s, path, &err), MP_OK);
	ck_assert_uint_eq(fx_file_size(path), 128 + 5 * 32 + 32);
	ck_assert_int_eq(entries_named(f.dir, ".x.seal.tmp-"), 0);
	ck_assert_int_eq(mp_seal_read(&back, path, &err), MP_OK);
	ck_assert_mem_eq(back->digests, s->digests, 5 * 32);
	ck_assert_mem_eq(back->seal_digest, s->seal_digest, 32);
	ck_assert_mem_eq(back->pack_sha256, s->pack_sha256, 32);
	ck_assert_mem_eq(back->index_sha256, s->index_sha256, 32);
	mp_seal_free(back);

	/* truncated and extended files */
	raw = (unsigned char *)fx_read_file(path, &len);
	fx_write_file(path, raw, len - 1);
	ck_assert_int_eq(mp_seal_read(&back, path, &err), MP_E_SEAL_FORMAT);
	fx_assert_err(&err, MP_E_SEAL_FORMAT, "truncated");
	fx_write_file(path, raw, 100);
	ck_assert_int_eq(mp_seal_read(&back, path, &err), MP_E_SEAL_FORMAT);
	fx_assert_err(&err, MP_E_SEAL_FORMAT, "shorter than the 128-byte header");
	{
		int fd = open(path, O_WRONLY | O_TRUNC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, raw, len), (ssize_t)len);
		ck_assert_int_eq(ftruncate(fd, 1ll << 40), 0); /* sparse, huge */
		close(fd);
	}
	ck_assert_int_eq(mp_seal_read(&back, path, &err), MP_E_SEAL_FORMAT);
	fx_assert_err(&err, MP_E_SEAL_FORMAT, "extended");
	free(raw);

	/* the temporary is private to this process: a link planted at its
	 * first name is neither followed nor removed, nor is one at the seal's
	 * name; every failure keeps the seal's error code */
	{
		char target[PATH_MAX], planted[PATH_MAX + 64], missing[PATH_MAX];
		struct stat st;

		fx_path(&f, "target", target, sizeof target);
		/* where the old scheme (.NAME.tmp-PID-N) would have written */
		snprintf(planted, sizeof planted, "%s/.x.seal.tmp-%ld-0", f.dir, (long)getpid());
		ck_assert_int_eq(symlink(target, planted), 0);
		ck_assert_int_eq(mp_seal_write(s, path, &err), MP_OK);
		ck_assert_int_eq(access(target, F_OK), -1);
		ck_assert_int_eq(lstat(planted, &st), 0);
		ck_assert(S_ISLNK(st.st_mode));
		unlink(planted);
		unlink(path);
		ck_assert_int_eq(symlink(target, path), 0);
		ck_assert_int_eq(mp_seal_write(s, path, &err), MP_OK);
		ck_assert_int_eq(access(target, F_OK), -1);
		ck_assert_int_eq(lstat(path, &st), 0);
		ck_assert(S_ISREG(st.st_mode));
		fx_path(&f, "no/x.seal", missing, sizeof missing);
		ck_assert_int_eq(mp_seal_write(s, missing, &err), MP_E_SEAL_IO);
		fx_assert_err(&err, MP_E_SEAL_IO, "cannot write file ");
	}

	/* missing, a directory, a FIFO (must not block) */
	unlink(path);
	ck_assert_int_eq(mp_seal_read(&back, path, &err), MP_E_SEAL_IO);
	ck_assert_int_eq(mp_seal_read(&back, f.dir, &err), MP_E_SEAL_IO);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(mp_seal_read(&back, path, &err), MP_E_SEAL_IO);
	fx_assert_err(&err, MP_E_SEAL_IO, "FIFO");
	mp_seal_free(s);
	fx_cleanup(&f);
}
END_TEST

/* ---- hashing, binding, checking ------------------------------------------ */

/* Expected digests of every chunk of a file, by the fixture. */
static void expect_digests(const char *path, const struct mp_seal_layout *l,
			   unsigned char (*d)[MP_SHA256_LEN])
{
	for (uint64_t c = 0; c < l->chunk_count; c++) {
		struct mp_seal_chunk ch;
		char hex[MP_SHA256_HEX], got[MP_SHA256_HEX];
		mp_seal_chunk_get(l, c, &ch);
		fx_sha256_file_range(path, ch.offset, ch.len, hex);
		mp_sha256_hex(d[c], got);
		ck_assert_msg(strcmp(hex, got) == 0, "chunk %" PRIu64 " digest %s, want %s", c, got,
			      hex);
	}
}

/*
 * A synthetic 13 MiB file with chunks that cross the 4 MiB windows of the
 * one-pass hasher, in every chunk size from 64 KiB to 8 MiB (larger than a
 * window), on 1 to 3 threads, with and without the whole-file digest.
 */
START_TEST(test_hash_file_windows)
{
	const uint64_t rb[3] = {1000001, 777777, 1234567};
	const uint64_t ob = rb[0] + rb[1] + rb[2];
	uint64_t off[4] = {12345, 0, 0, 0}, size;
	struct fx f;
	char path[PATH_MAX], whole[MP_SHA256_HEX], got[MP_SHA256_HEX];
	unsigned char *data;
	int fd;

	off[1] = off[0] + ob + 3;
	off[2] = off[1] + ob + 65536 * 3 + 11;
	off[3] = off[2] + ob;
	size = off[3] + ob + 999;
	data = malloc(size);
	ck_assert_ptr_nonnull(data);
	for (uint64_t i = 0; i < size; i++)
		data[i] = (unsigned char)(i * 2654435761u >> 13);
	fx_init(&f);
	fx_path(&f, "file", path, sizeof path);
	fx_write_file(path, data, size);
	fx_sha256_file(path, whole);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	for (uint64_t c = KB64; c <= (8u << 20); c <<= 1) {
		struct mp_seal_layout l;
		struct mp_error err;
		unsigned char(*d)[MP_SHA256_LEN];
		unsigned char p[MP_SHA256_LEN];
		ck_assert_int_eq(mp_seal_layout_init(&l, size, 4, off, rb, c, &err), MP_OK);
		check_tiling(&l);
		d = calloc(l.chunk_count, MP_SHA256_LEN);
		ck_assert_ptr_nonnull(d);
		for (unsigned jobs = 1; jobs <= 3; jobs++) {
			memset(d, 0, l.chunk_count * MP_SHA256_LEN);
			ck_assert_int_eq(mp_seal_hash_file(fd, path, &l, jobs, NULL, NULL, d, p, &err),
					 MP_OK);
			expect_digests(path, &l, d);
			mp_sha256_hex(p, got);
			ck_assert_str_eq(got, whole);
			memset(d, 0, l.chunk_count * MP_SHA256_LEN);
			ck_assert_int_eq(mp_seal_hash_file(fd, path, &l, jobs, NULL, NULL, d, NULL,
							   &err),
					 MP_OK);
			expect_digests(path, &l, d);
		}
		/* a file shorter than the layout */
		{
			struct mp_seal_layout l2;
			unsigned char (*d2)[MP_SHA256_LEN];
			ck_assert_int_eq(mp_seal_layout_init(&l2, size + 5000, 4, off, rb, c, &err),
					 MP_OK);
			d2 = calloc(l2.chunk_count, MP_SHA256_LEN);
			ck_assert_int_eq(mp_seal_hash_file(fd, path, &l2, 2, NULL, NULL, d2, p, &err),
					 MP_E_PACK_IO);
			fx_assert_err(&err, MP_E_PACK_IO, path);
			ck_assert_int_eq(mp_seal_hash_file(fd, path, &l2, 2, NULL, NULL, d2, NULL,
							   &err),
					 MP_E_PACK_IO);
			free(d2);
			mp_seal_layout_free(&l2);
		}
		free(d);
		mp_seal_layout_free(&l);
	}
	close(fd);
	free(data);
	fx_cleanup(&f);
}
END_TEST

/* Seal a real pack; returns the seal (anchored unless the manifest has no sha256). */
static struct mp_seal *seal_pack(struct mp_pack *pack, struct mp_seal_layout *l, unsigned jobs)
{
	struct mp_error err;
	struct fx_progress prog = {0};
	struct mp_seal *s = calloc(1, sizeof *s);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(mp_seal_layout_of_pack(l, pack, MP_SEAL_MIN_CHUNK, &err), MP_OK);
	s->digests = calloc(l->chunk_count, MP_SHA256_LEN);
	ck_assert_ptr_nonnull(s->digests);
	s->chunk_size = l->chunk_size;
	s->chunk_count = l->chunk_count;
	s->pack_size = pack->file.size;
	s->flags = pack->m.sha256[0] ? 0 : MP_SEAL_FLAG_UNANCHORED;
	memcpy(s->index_sha256, pack->index_digest, 32);
	ck_assert_int_eq(mp_seal_hash_file(pack->file.fd, pack->file.path, l, jobs, fx_progress_log, &prog,
					   s->digests, s->pack_sha256, &err),
			 MP_OK);
	ck_assert_uint_eq(prog.done, pack->file.size);
	ck_assert_uint_eq(prog.total, pack->file.size);
	ck_assert(!prog.backwards && !prog.past_total);
	free(mp_seal_encode(s, &(size_t){0}));
	return s;
}

struct bad_list {
	uint64_t n, chunks[16];
};

static void note_bad(uint64_t chunk, void *arg)
{
	struct bad_list *b = arg;
	if (b->n < 16)
		b->chunks[b->n] = chunk;
	b->n++;
}

/* A seal of the digests d for layout l, enough for mp_seal_check_file(). */
static struct mp_seal *seal_of(const struct mp_seal_layout *l, unsigned char (*d)[MP_SHA256_LEN])
{
	struct mp_seal *s = calloc(1, sizeof *s);

	ck_assert_ptr_nonnull(s);
	s->digests = malloc(l->chunk_count * MP_SHA256_LEN);
	ck_assert_ptr_nonnull(s->digests);
	memcpy(s->digests, d, l->chunk_count * MP_SHA256_LEN);
	s->chunk_size = l->chunk_size;
	s->chunk_count = l->chunk_count;
	s->pack_size = l->file_size;
	s->flags = MP_SEAL_FLAG_UNANCHORED;
	return s;
}

static void pwrite_at(int fd, const void *data, size_t len, uint64_t at)
{
	ck_assert_int_eq(pwrite(fd, data, len, (off_t)at), (ssize_t)len);
}

/*
 * Holes read as zeros: without the whole-file digest, a chunk in a hole
 * (SEEK_DATA) is given the digest of zeros without being read.  The same
 * layout as above over a sparse file (data in the head, in the middle of
 * a role and at the end of a gap) must give every chunk the digest of a
 * dense copy of the same bytes, whatever the chunk size and threads; the
 * seal made of them checks the sparse file, and a byte written into a
 * former hole fails its chunk alone.
 */
START_TEST(test_hash_file_holes)
{
	const uint64_t rb[3] = {1000001, 777777, 1234567};
	const uint64_t ob = rb[0] + rb[1] + rb[2];
	uint64_t off[4] = {12345, 0, 0, 0}, size, poke;
	unsigned char head[12345], bits[100], one = 0x5a, *data;
	char sparse[PATH_MAX], dense[PATH_MAX];
	struct fx f;
	int fd, fdd;

	off[1] = off[0] + ob + 3;
	off[2] = off[1] + ob + 65536 * 3 + 11;
	off[3] = off[2] + ob;
	size = off[3] + ob + 999;
	poke = off[2] + 4096 * 3 + 17; /* a hole, in object 2's first role */
	for (size_t i = 0; i < sizeof head; i++)
		head[i] = (unsigned char)(i * 2654435761u >> 13);
	memset(bits, 0xa5, sizeof bits);
	fx_init(&f);
	fx_path(&f, "sparse", sparse, sizeof sparse);
	fx_path(&f, "dense", dense, sizeof dense);
	fd = open(sparse, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	pwrite_at(fd, head, sizeof head, 0);
	pwrite_at(fd, bits, sizeof bits, off[1] + rb[0] + 500000);
	pwrite_at(fd, &one, 1, off[2] - 1);
	data = malloc(size);
	ck_assert_ptr_nonnull(data);
	ck_assert_int_eq(pread(fd, data, size, 0), (ssize_t)size);
	fx_write_file(dense, data, size);
	free(data);
	fdd = open(dense, O_RDONLY);
	ck_assert_int_ge(fdd, 0);
	for (uint64_t c = KB64; c <= (8u << 20); c <<= 1) {
		struct mp_seal_layout l;
		struct mp_error err;
		unsigned char(*d)[MP_SHA256_LEN], (*dd)[MP_SHA256_LEN];
		struct bad_list bad = {0};
		struct mp_seal *s;

		ck_assert_int_eq(mp_seal_layout_init(&l, size, 4, off, rb, c, &err), MP_OK);
		d = calloc(l.chunk_count, MP_SHA256_LEN);
		dd = calloc(l.chunk_count, MP_SHA256_LEN);
		ck_assert(d && dd);
		ck_assert_int_eq(mp_seal_hash_file(fdd, dense, &l, 1, NULL, NULL, dd, NULL, &err),
				 MP_OK);
		for (unsigned jobs = 1; jobs <= 3; jobs++) {
			memset(d, 0, l.chunk_count * MP_SHA256_LEN);
			ck_assert_int_eq(mp_seal_hash_file(fd, sparse, &l, jobs, NULL, NULL, d, NULL,
							   &err),
					 MP_OK);
			ck_assert(memcmp(d, dd, l.chunk_count * MP_SHA256_LEN) == 0);
		}
		expect_digests(sparse, &l, d);
		s = seal_of(&l, d);
		ck_assert_int_eq(mp_seal_check_file(fd, sparse, s, &l, 2, NULL, NULL, note_bad, &bad,
						    &err),
				 MP_OK);
		ck_assert_uint_eq(bad.n, 0);
		/* a byte in a hole, then the hole back */
		pwrite_at(fd, &one, 1, poke);
		ck_assert_int_eq(mp_seal_check_file(fd, sparse, s, &l, 2, NULL, NULL, note_bad, &bad,
						    &err),
				 MP_E_SEAL_CHUNK);
		ck_assert_uint_eq(bad.n, 1);
		ck_assert_uint_eq(bad.chunks[0], mp_seal_chunk_at(&l, poke));
		pwrite_at(fd, &(unsigned char){0}, 1, poke);
		mp_seal_free(s);
		free(d);
		free(dd);
		mp_seal_layout_free(&l);
	}
	close(fd);
	close(fdd);
	fx_cleanup(&f);
}
END_TEST

/* [a, a + n) and [b, b + m) share a byte. */
static bool overlap(uint64_t a, uint64_t n, uint64_t b, uint64_t m)
{
	return a < b + m && b < a + n;
}

/*
 * A 1 TiB sparse file (4 objects of about 250 GiB, 64 MiB chunks) seals
 * in the time of its few data blocks: reading its holes would take this
 * machine many minutes, past the case's timeout.  Chunks in a hole have
 * the digest of as many zeros, the two with data that of their bytes.
 */
START_TEST(test_hash_file_huge_hole)
{
	const uint64_t rb[3] = {(100ull << 30) + 1, 80ull << 30, (70ull << 30) + 12345};
	const uint64_t ob = rb[0] + rb[1] + rb[2];
	uint64_t off[4] = {1u << 20, 0, 0, 0}, size, lens[8] = {0}, mid;
	char path[PATH_MAX], hexes[8][MP_SHA256_HEX], got[MP_SHA256_HEX], want[MP_SHA256_HEX];
	unsigned char block[4096];
	unsigned char(*d)[MP_SHA256_LEN];
	struct mp_seal_layout l;
	struct mp_error err;
	unsigned nlens = 0;
	struct fx f;
	int fd;

	off[1] = off[0] + ob;
	off[2] = off[1] + ob + 4096;
	off[3] = off[2] + ob;
	size = off[3] + ob + 77;
	mid = off[2] + rb[0] + (rb[1] / 2);
	memset(block, 0x3c, sizeof block);
	fx_init(&f);
	fx_path(&f, "huge", path, sizeof path);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	pwrite_at(fd, block, sizeof block, 0);
	pwrite_at(fd, block, sizeof block, mid);
	/* a file system that reports no holes (SEEK_DATA finds data
	 * everywhere) would have every byte read: the case is not for it */
	if (lseek(fd, 1 << 20, SEEK_DATA) == (off_t)(1 << 20)) {
		fprintf(stderr, "check_seal: %s reports no holes; the 1 TiB case is not run\n",
			path);
		close(fd);
		fx_cleanup(&f);
		return;
	}
	ck_assert_int_eq(mp_seal_layout_init(&l, size, 4, off, rb, 64u << 20, &err), MP_OK);
	d = calloc(l.chunk_count, MP_SHA256_LEN);
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(mp_seal_hash_file(fd, path, &l, 2, NULL, NULL, d, NULL, &err), MP_OK);
	for (uint64_t c = 0; c < l.chunk_count; c++) {
		struct mp_seal_chunk ch;
		unsigned i;

		mp_seal_chunk_get(&l, c, &ch);
		mp_sha256_hex(d[c], got);
		if (overlap(ch.offset, ch.len, 0, sizeof block) ||
		    overlap(ch.offset, ch.len, mid, sizeof block)) {
			fx_sha256_file_range(path, ch.offset, ch.len, want);
			ck_assert_str_eq(got, want);
			continue;
		}
		for (i = 0; i < nlens && lens[i] != ch.len; i++)
			;
		if (i == nlens) { /* the first hole chunk of this length: read it */
			ck_assert_uint_lt(nlens, 8);
			fx_sha256_file_range(path, ch.offset, ch.len, hexes[nlens]);
			lens[nlens++] = ch.len;
		}
		ck_assert_msg(strcmp(got, hexes[i]) == 0, "chunk %" PRIu64 ": %s, want %s", c, got,
			      hexes[i]);
	}
	free(d);
	mp_seal_layout_free(&l);
	close(fd);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_pack_bind_check)
{
	struct fx_pack_opts o = {.full_sha256 = true, .hidden = 1024, .inter = 512, .gap = 4096,
				 .alignment = 4096, .experts = 3};
	struct fx f;
	struct mp_pack *pack;
	struct mp_seal_layout l, l2;
	struct mp_seal *s;
	struct mp_error err;
	struct bad_list bad = {0};
	char hex[MP_SHA256_HEX], desc[128];
	uint64_t off, nb, c, gapc;
	struct mp_seal_chunk gch;
	int fd;

	fx_setup(&f, &o);
	ck_assert_int_eq(fx_open_pack(&f, NULL, &pack, &err), MP_OK);
	s = seal_pack(pack, &l, 2);
	mp_sha256_hex(s->pack_sha256, hex);
	ck_assert_str_eq(hex, pack->m.sha256);
	check_tiling(&l);
	expect_digests(f.pack, &l, s->digests);
	ck_assert_int_eq(mp_seal_bind(s, pack, &l, &err), MP_OK);
	ck_assert_int_eq(mp_seal_check_file(pack->file.fd, f.pack, s, &l, 2, NULL, NULL, note_bad, &bad,
					    &err),
			 MP_OK);
	ck_assert_uint_eq(bad.n, 0);
	/* a stop asked (a resumed build's signal) ends the check, naming the file */
	{
		struct mp_cancel stop = {.sig = 15};

		ck_assert_int_eq(mp_seal_check_file_until(pack->file.fd, f.pack, s, &l, 2, NULL, NULL,
							  note_bad, &bad, &stop, &err),
				 MP_E_INTERRUPTED);
		fx_assert_err(&err, MP_E_INTERRUPTED, "build interrupted by signal 15 while "
			      "checking ", f.pack, " against its seal");
		ck_assert_uint_eq(bad.n, 0);
	}

	/* describe: head, a role, a gap */
	mp_seal_chunk_describe(pack, &l, 0, desc, sizeof desc);
	ck_assert_str_eq(desc, "header and index");
	mp_pack_role_range(pack, mp_pack_object(pack, 1, 2), MP_ROLE_GATE, &off, &nb);
	c = mp_seal_chunk_at(&l, off + nb - 1);
	mp_seal_chunk_describe(pack, &l, c, desc, sizeof desc);
	snprintf(hex, sizeof hex, "layer %" PRIu32 " expert 2 role gate", pack->m.layer_ids[1]);
	ck_assert_str_eq(desc, hex);
	gapc = l.object_first[1] - 1;
	mp_seal_chunk_get(&l, gapc, &gch);
	ck_assert_int_eq(gch.part, MP_SEAL_GAP);
	mp_seal_chunk_describe(pack, &l, gapc, desc, sizeof desc);
	snprintf(hex, sizeof hex, "padding after layer %" PRIu32 " expert 0",
		 pack->m.layer_ids[0]);
	ck_assert_str_eq(desc, hex);

	/* bind mismatches, each alone */
	s->pack_size++;
	ck_assert_int_eq(mp_seal_bind(s, pack, &l, &err), MP_E_SEAL_MISMATCH);
	fx_assert_err(&err, MP_E_SEAL_MISMATCH, "seals");
	s->pack_size--;
	s->index_sha256[3] ^= 1;
	ck_assert_int_eq(mp_seal_bind(s, pack, &l, &err), MP_E_SEAL_MISMATCH);
	fx_assert_err(&err, MP_E_SEAL_MISMATCH, "index_sha256");
	s->index_sha256[3] ^= 1;
	s->pack_sha256[0] ^= 1;
	ck_assert_int_eq(mp_seal_bind(s, pack, &l, &err), MP_E_SEAL_MISMATCH);
	fx_assert_err(&err, MP_E_SEAL_MISMATCH, "pack_sha256", pack->m.sha256);
	s->pack_sha256[0] ^= 1;
	s->flags = MP_SEAL_FLAG_UNANCHORED;
	ck_assert_int_eq(mp_seal_bind(s, pack, &l, &err), MP_E_SEAL_MISMATCH);
	fx_assert_err(&err, MP_E_SEAL_MISMATCH, "unanchored");
	s->flags = 0;
	ck_assert_int_eq(mp_seal_layout_of_pack(&l2, pack, 2 * MP_SEAL_MIN_CHUNK, &err), MP_OK);
	if (l2.chunk_count != l.chunk_count) {
		ck_assert_int_eq(mp_seal_bind(s, pack, &l2, &err), MP_E_SEAL_MISMATCH);
		fx_assert_err(&err, MP_E_SEAL_MISMATCH, "chunk_count");
	}
	mp_seal_layout_free(&l2);
	s->chunk_count--;
	ck_assert_int_eq(mp_seal_bind(s, pack, &l, &err), MP_E_SEAL_MISMATCH);
	fx_assert_err(&err, MP_E_SEAL_MISMATCH, "chunk_count");
	s->chunk_count++;
	ck_assert_int_eq(mp_seal_bind(s, pack, &l, &err), MP_OK);

	/* the digest of a chunk's bytes, and of them with one byte changed */
	{
		struct mp_seal_chunk ch;
		unsigned char *buf, d[MP_SHA256_LEN];

		mp_seal_chunk_get(&l, c, &ch);
		buf = malloc(ch.len);
		fx_pread(&f, ch.offset, buf, ch.len);
		mp_sha256_buf(buf, ch.len, d);
		ck_assert(mp_seal_digest_ok(s, c, d));
		ck_assert(!mp_seal_digest_ok(s, s->chunk_count, d));
		buf[ch.len / 2] ^= 0x10;
		mp_sha256_buf(buf, ch.len, d);
		ck_assert(!mp_seal_digest_ok(s, c, d));
		free(buf);
	}

	/* one flipped byte in the gate of layer index 1 expert 2, one in a gap */
	fd = open(f.pack, O_RDWR);
	ck_assert_int_ge(fd, 0);
	{
		unsigned char b;
		ck_assert_int_eq(pread(fd, &b, 1, (off_t)(off + nb - 1)), 1);
		b ^= 0x80;
		ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)(off + nb - 1)), 1);
		ck_assert_int_eq(pread(fd, &b, 1, (off_t)gch.offset), 1);
		b ^= 0x01;
		ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)gch.offset), 1);
	}
	close(fd);
	for (unsigned jobs = 1; jobs <= 3; jobs++) {
		bad.n = 0;
		ck_assert_int_eq(mp_seal_check_file(pack->file.fd, f.pack, s, &l, jobs, NULL, NULL,
						    note_bad, &bad, &err),
				 MP_E_SEAL_CHUNK);
		fx_assert_err(&err, MP_E_SEAL_CHUNK, "2 of");
		ck_assert_uint_eq(bad.n, 2);
		ck_assert(bad.chunks[0] == c || bad.chunks[1] == c);
		ck_assert(bad.chunks[0] == gapc || bad.chunks[1] == gapc);
		/* the roles alone: the gate, not the gap, which is not read */
		bad.n = 0;
		ck_assert_int_eq(mp_seal_check_part(pack->file.fd, f.pack, s, &l, jobs, true, NULL,
						    NULL, note_bad, &bad, &err),
				 MP_E_SEAL_CHUNK);
		fx_assert_err(&err, MP_E_SEAL_CHUNK, "1 of");
		ck_assert_uint_eq(bad.n, 1);
		ck_assert_uint_eq(bad.chunks[0], c);
	}
	mp_seal_free(s);
	mp_seal_layout_free(&l);
	mp_pack_close(pack);
	fx_cleanup(&f);
}
END_TEST

/* A manifest without expert_pack.sha256 takes an unanchored seal only. */
START_TEST(test_pack_unanchored)
{
	struct fx f;
	struct mp_pack *pack;
	struct mp_seal_layout l;
	struct mp_seal *s;
	struct mp_error err;

	fx_setup(&f, NULL);
	ck_assert_int_eq(fx_open_pack(&f, NULL, &pack, &err), MP_OK);
	ck_assert_str_eq(pack->m.sha256, "");
	s = seal_pack(pack, &l, 1);
	ck_assert(mp_seal_unanchored(s));
	ck_assert_int_eq(mp_seal_bind(s, pack, &l, &err), MP_OK);
	s->flags = 0;
	ck_assert_int_eq(mp_seal_bind(s, pack, &l, &err), MP_E_SEAL_MISMATCH);
	fx_assert_err(&err, MP_E_SEAL_MISMATCH, "anchored", "no expert_pack.sha256");
	mp_seal_free(s);
	mp_seal_layout_free(&l);
	mp_pack_close(pack);
	fx_cleanup(&f);
}
END_TEST

/* A pack file cut short under its seal: every missing chunk is bad. */
START_TEST(test_check_short_file)
{
	struct fx f;
	struct mp_pack *pack;
	struct mp_seal_layout l;
	struct mp_seal *s;
	struct mp_error err;
	struct bad_list bad = {0};
	int fd;

	fx_setup(&f, NULL);
	ck_assert_int_eq(fx_open_pack(&f, NULL, &pack, &err), MP_OK);
	s = seal_pack(pack, &l, 2);
	fd = open(f.pack, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	fx_truncate(&f, pack->file.size - 1);
	ck_assert_int_eq(mp_seal_check_file(fd, f.pack, s, &l, 2, NULL, NULL, note_bad, &bad, &err),
			 MP_E_SEAL_CHUNK);
	ck_assert_uint_ge(bad.n, 1);
	fx_truncate(&f, 0);
	bad.n = 0;
	ck_assert_int_eq(mp_seal_check_file(fd, f.pack, s, &l, 2, NULL, NULL, note_bad, &bad, &err),
			 MP_E_PACK_IO);
	ck_assert_uint_eq(bad.n, l.chunk_count);
	close(fd);
	mp_seal_free(s);
	mp_seal_layout_free(&l);
	mp_pack_close(pack);
	fx_cleanup(&f);
}
END_TEST

static Suite *seal_suite(void)
{
	Suite *s = suite_create("seal");
	TCase *tc = tcase_create("layout");
	tcase_add_test(tc, test_layout_odd);
	tcase_add_test(tc, test_layout_no_head_no_objects);
	tcase_add_test(tc, test_layout_refusals);
	tcase_add_test(tc, test_layout_k3);
	suite_add_tcase(s, tc);
	tc = tcase_create("file");
	tcase_add_test(tc, test_encode_layout);
	tcase_add_test(tc, test_parse_refusals);
	tcase_add_test(tc, test_read_write);
	suite_add_tcase(s, tc);
	tc = tcase_create("hash");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_hash_file_windows);
	tcase_add_test(tc, test_hash_file_holes);
	tcase_add_test(tc, test_hash_file_huge_hole);
	tcase_add_test(tc, test_pack_bind_check);
	tcase_add_test(tc, test_pack_unanchored);
	tcase_add_test(tc, test_check_short_file);
	suite_add_tcase(s, tc);
	return s;
}

const struct fx_suite_def fx_suite = {.make = seal_suite};
