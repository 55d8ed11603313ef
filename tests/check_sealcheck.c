/*
 * check_sealcheck.c - the chunk state machine of -o verify=seal
 * (src/seal/sealcheck.c): first reads hash and fill, later reads are good, a
 * bad chunk stays bad and fails only the reads that touch it, concurrent
 * first reads hash a chunk once, a read error leaves the chunk for the
 * next read, and the ahead thread checks the chunks after a read (and
 * leaves a bad one for the first read to report).  No FUSE, no root.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "pack/digest.h"
#include "fixture.h"
#include "seal/seal.h"
#include "seal/sealcheck.h"

#define CHUNK (64u << 10)
#define HEAD 8192u
#define NOBJ 3u
#define STRIDE 322000u /* 320,000 bytes of roles and a 2,000-byte gap */
#define FILE_SIZE (HEAD + NOBJ * STRIDE)

struct sc_fixture {
	char path[PATH_MAX];
	int fd;
	unsigned char *bytes;
	uint64_t offsets[NOBJ];
	struct mp_seal_layout layout;
	struct mp_seal seal;
	struct mp_sealcheck sc;
};

static void setup(struct sc_fixture *f, bool short_file)
{
	const uint64_t roles[MP_ROLE_COUNT] = {100000, 70000, 150000};
	struct mp_error err = {0};

	memset(f, 0, sizeof *f);
	f->bytes = malloc(FILE_SIZE);
	ck_assert_ptr_nonnull(f->bytes);
	srand(7);
	for (size_t i = 0; i < FILE_SIZE; i++)
		f->bytes[i] = (unsigned char)rand();
	f->fd = fx_mkstemp(f->path);
	/* a short file: the layout says more than the file has */
	ck_assert_int_eq(write(f->fd, f->bytes, short_file ? FILE_SIZE - 5000 : FILE_SIZE),
			 (ssize_t)(short_file ? FILE_SIZE - 5000 : FILE_SIZE));
	for (unsigned i = 0; i < NOBJ; i++)
		f->offsets[i] = HEAD + (uint64_t)i * STRIDE;
	ck_assert_int_eq(mp_seal_layout_init(&f->layout, FILE_SIZE, NOBJ, f->offsets, roles,
					     CHUNK, &err), MP_OK);
	f->seal.chunk_size = CHUNK;
	f->seal.chunk_count = f->layout.chunk_count;
	f->seal.pack_size = FILE_SIZE;
	f->seal.digests = calloc(f->layout.chunk_count, MP_SHA256_LEN);
	ck_assert_ptr_nonnull(f->seal.digests);
	for (uint64_t c = 0; c < f->layout.chunk_count; c++) {
		struct mp_seal_chunk ch;

		mp_seal_chunk_get(&f->layout, c, &ch);
		mp_sha256_buf(f->bytes + ch.offset, ch.len, f->seal.digests[c]);
	}
	ck_assert_int_eq(mp_sealcheck_init(&f->sc, &f->seal, &f->layout, f->fd, &err), MP_OK);
}

static void teardown(struct sc_fixture *f)
{
	mp_sealcheck_free(&f->sc);
	free(f->seal.digests);
	mp_seal_layout_free(&f->layout);
	close(f->fd);
	unlink(f->path);
	free(f->bytes);
}

static uint64_t counter(_Atomic uint64_t *c)
{
	return atomic_load(c);
}

/* The chunks of [pos, pos + len) and their total length. */
static uint64_t span_bytes(struct sc_fixture *f, uint64_t pos, size_t len, uint64_t *n)
{
	uint64_t first = mp_seal_chunk_at(&f->layout, pos);
	uint64_t last = mp_seal_chunk_at(&f->layout, pos + len - 1), sum = 0;

	for (uint64_t c = first; c <= last; c++) {
		struct mp_seal_chunk ch;

		mp_seal_chunk_get(&f->layout, c, &ch);
		sum += ch.len;
	}
	*n = last - first + 1;
	return sum;
}

START_TEST(test_first_then_good)
{
	struct sc_fixture f;
	/* mid-chunk to mid-chunk, across a role boundary (up -> gate) */
	uint64_t pos = HEAD + 90000, nchunks, bytes;
	size_t len = 50000;
	unsigned char *buf = malloc(len);
	uint64_t bad;
	bool found;

	setup(&f, false);
	bytes = span_bytes(&f, pos, len, &nchunks);
	ck_assert(!mp_sealcheck_all_good(&f.sc, pos, len));
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, pos, len, buf, &bad, &found),
			 MP_SEALREAD_FILLED);
	ck_assert(memcmp(buf, f.bytes + pos, len) == 0);
	ck_assert_uint_eq(counter(&f.sc.count.checked), nchunks);
	ck_assert_uint_eq(counter(&f.sc.count.bytes_hashed), bytes);
	ck_assert(mp_sealcheck_all_good(&f.sc, pos, len));
	/* the second read: nothing hashed, nothing filled */
	memset(buf, 0, len);
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, pos, len, buf, &bad, &found),
			 MP_SEALREAD_GOOD);
	ck_assert_uint_eq(counter(&f.sc.count.checked), nchunks);
	/* a read overlapping checked and unchecked chunks: filled, right bytes */
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, pos + 60000, len, buf, &bad, &found),
			 MP_SEALREAD_FILLED);
	ck_assert(memcmp(buf, f.bytes + pos + 60000, len) == 0);
	ck_assert_uint_eq(counter(&f.sc.count.failed), 0);
	free(buf);
	teardown(&f);
}
END_TEST

START_TEST(test_bad_chunk)
{
	struct sc_fixture f;
	unsigned char buf[4096];
	uint64_t bad = 0, target, other;
	bool found;
	struct mp_seal_chunk ch;

	setup(&f, false);
	target = mp_seal_chunk_at(&f.layout, HEAD + STRIDE + 100000 + 5); /* object 1 gate */
	f.seal.digests[target][0] ^= 1;
	mp_seal_chunk_get(&f.layout, target, &ch);
	ck_assert_int_eq(ch.part, MP_SEAL_ROLE);
	ck_assert_uint_eq(ch.object, 1);
	ck_assert_int_eq(ch.role, MP_ROLE_GATE);
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, ch.offset + 10, sizeof buf, buf, &bad, &found),
			 MP_SEALREAD_BAD);
	ck_assert_uint_eq(bad, target);
	ck_assert(found);
	ck_assert_int_eq(mp_sealcheck_state(&f.sc, target), MP_CHUNK_BAD);
	/* from then on: bad, not found again, not hashed again */
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, ch.offset, 1, buf, &bad, &found),
			 MP_SEALREAD_BAD);
	ck_assert(!found);
	ck_assert_uint_eq(counter(&f.sc.count.checked), 1);
	ck_assert_uint_eq(counter(&f.sc.count.failed), 1);
	/* a range that ends just before it reads right */
	other = ch.offset - sizeof buf;
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, other, sizeof buf, buf, &bad, &found),
			 MP_SEALREAD_FILLED);
	ck_assert(memcmp(buf, f.bytes + other, sizeof buf) == 0);
	/* one that spans into it fails */
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, other + 1, sizeof buf, buf, &bad, &found),
			 MP_SEALREAD_BAD);
	teardown(&f);
}
END_TEST

struct racer {
	struct sc_fixture *f;
	pthread_barrier_t *go;
	int rc;
	bool same;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	size_t len = 3 * CHUNK;
	uint64_t pos = HEAD + 1000, bad;
	unsigned char *buf = malloc(len);
	bool found;

	pthread_barrier_wait(r->go);
	r->rc = mp_sealcheck_read(&r->f->sc, pos, len, buf, &bad, &found);
	/* GOOD: served from the file by the caller, which is the same bytes */
	r->same = r->rc == MP_SEALREAD_GOOD || memcmp(buf, r->f->bytes + pos, len) == 0;
	free(buf);
	return NULL;
}

START_TEST(test_concurrent_once)
{
	struct sc_fixture f;
	struct racer r[8];
	pthread_barrier_t go;
	uint64_t nchunks;

	setup(&f, false);
	span_bytes(&f, HEAD + 1000, 3 * CHUNK, &nchunks);
	pthread_barrier_init(&go, NULL, 8);
	for (int i = 0; i < 8; i++)
		r[i] = (struct racer){.f = &f, .go = &go};
	fx_run_threads(8, race, r, sizeof r[0]);
	for (int i = 0; i < 8; i++) {
		ck_assert(r[i].rc == MP_SEALREAD_GOOD || r[i].rc == MP_SEALREAD_FILLED);
		ck_assert(r[i].same);
	}
	pthread_barrier_destroy(&go);
	/* eight readers, each chunk hashed once */
	ck_assert_uint_eq(counter(&f.sc.count.checked), nchunks);
	teardown(&f);
}
END_TEST

START_TEST(test_read_error_retries)
{
	struct sc_fixture f;
	unsigned char buf[100];
	uint64_t bad, last;
	bool found;

	setup(&f, true);
	last = f.layout.chunk_count - 1;
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, FILE_SIZE - 100, sizeof buf, buf, &bad, &found),
			 MP_SEALREAD_IO);
	/* not the chunk's fault: unchecked again, not counted as failed */
	ck_assert_int_eq(mp_sealcheck_state(&f.sc, last), MP_CHUNK_UNCHECKED);
	ck_assert_uint_eq(counter(&f.sc.count.failed), 0);
	/* the file grows back: the next read checks it */
	ck_assert_int_eq(pwrite(f.fd, f.bytes + FILE_SIZE - 5000, 5000, FILE_SIZE - 5000), 5000);
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, FILE_SIZE - 100, sizeof buf, buf, &bad, &found),
			 MP_SEALREAD_FILLED);
	ck_assert(memcmp(buf, f.bytes + FILE_SIZE - 100, sizeof buf) == 0);
	teardown(&f);
}
END_TEST

struct chunk_wait {
	struct sc_fixture *f;
	uint64_t chunk;
	enum mp_chunk_state state;
};

static bool chunk_reached(void *arg)
{
	struct chunk_wait *w = arg;

	return mp_sealcheck_state(&w->f->sc, w->chunk) == w->state;
}

/* Wait (a condition, with a generous ceiling) for chunk c to reach state s. */
static bool wait_state(struct sc_fixture *f, uint64_t c, enum mp_chunk_state s)
{
	struct chunk_wait w = {f, c, s};

	return fx_wait_until(chunk_reached, &w);
}

START_TEST(test_ahead_checks_the_window)
{
	struct sc_fixture f;
	struct mp_error err = {0};
	struct mp_seal_chunk ch;
	unsigned char buf[4096];
	uint64_t bad;
	bool found;

	setup(&f, false);
	ck_assert_uint_ge(f.layout.chunk_count, 6);
	ck_assert_int_eq(mp_sealcheck_ahead_start(&f.sc, 3, 2, &err), MP_OK);
	/* a read of chunk 0, then its hint: chunks 1, 2 and 3 are checked */
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, 0, sizeof buf, buf, &bad, &found),
			 MP_SEALREAD_FILLED);
	mp_sealcheck_ahead_hint(&f.sc, 0, sizeof buf);
	for (uint64_t c = 1; c <= 3; c++)
		ck_assert_msg(wait_state(&f, c, MP_CHUNK_GOOD), "chunk %llu not checked ahead",
			      (unsigned long long)c);
	mp_sealcheck_ahead_stop(&f.sc);
	/* nothing past the window; each chunk hashed once */
	ck_assert_int_eq(mp_sealcheck_state(&f.sc, 4), MP_CHUNK_UNCHECKED);
	ck_assert_uint_eq(counter(&f.sc.count.checked_ahead), 3);
	ck_assert_uint_eq(counter(&f.sc.count.checked), 4);
	/* a read of chunks 1-3 is served from the file, nothing hashed */
	mp_seal_chunk_get(&f.layout, 1, &ch);
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, ch.offset, sizeof buf, buf, &bad, &found),
			 MP_SEALREAD_GOOD);
	ck_assert_uint_eq(counter(&f.sc.count.checked), 4);
	teardown(&f);
}
END_TEST

START_TEST(test_ahead_bad_reported_by_first_reader)
{
	struct sc_fixture f;
	struct mp_error err = {0};
	struct mp_seal_chunk ch;
	unsigned char buf[512];
	uint64_t bad = 0;
	bool found;

	setup(&f, false);
	f.seal.digests[2][5] ^= 0x10;
	ck_assert_int_eq(mp_sealcheck_ahead_start(&f.sc, 4, 2, &err), MP_OK);
	mp_sealcheck_ahead_hint(&f.sc, 0, 1);
	ck_assert(wait_state(&f, 2, MP_CHUNK_BAD));
	ck_assert(wait_state(&f, 4, MP_CHUNK_GOOD));
	ck_assert_uint_eq(counter(&f.sc.count.failed), 1);
	mp_seal_chunk_get(&f.layout, 2, &ch);
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, ch.offset, sizeof buf, buf, &bad, &found),
			 MP_SEALREAD_BAD);
	ck_assert_uint_eq(bad, 2);
	ck_assert_msg(found, "the first read of a chunk found bad ahead reports it");
	ck_assert_int_eq(mp_sealcheck_read(&f.sc, ch.offset, sizeof buf, buf, &bad, &found),
			 MP_SEALREAD_BAD);
	ck_assert(!found);
	ck_assert_uint_eq(counter(&f.sc.count.failed), 1);
	teardown(&f);
}
END_TEST

START_TEST(test_ahead_off_and_hint_at_the_end)
{
	struct sc_fixture f;
	struct mp_error err = {0};
	uint64_t last_chunk;

	setup(&f, false);
	/* window 0: no thread, a hint does nothing */
	ck_assert_int_eq(mp_sealcheck_ahead_start(&f.sc, 0, 1, &err), MP_OK);
	mp_sealcheck_ahead_hint(&f.sc, 0, 1);
	ck_assert(!atomic_load(&f.sc.ahead.running));
	/* a hint for the file's last byte has nothing after it */
	ck_assert_int_eq(mp_sealcheck_ahead_start(&f.sc, 8, 0, &err), MP_E_USAGE);
	ck_assert_int_eq(mp_sealcheck_ahead_start(&f.sc, 8, 1, &err), MP_OK);
	mp_sealcheck_ahead_hint(&f.sc, FILE_SIZE - 1, 1);
	last_chunk = f.layout.chunk_count - 1;
	mp_sealcheck_ahead_stop(&f.sc);
	ck_assert_int_eq(mp_sealcheck_state(&f.sc, last_chunk), MP_CHUNK_UNCHECKED);
	ck_assert_uint_eq(counter(&f.sc.count.checked), 0);
	teardown(&f);
}
END_TEST

static Suite *sealcheck_suite(void)
{
	Suite *s = suite_create("sealcheck");
	TCase *tc = tcase_create("chunks");

	tcase_add_test(tc, test_first_then_good);
	tcase_add_test(tc, test_bad_chunk);
	tcase_add_test(tc, test_concurrent_once);
	tcase_add_test(tc, test_read_error_retries);
	tcase_add_test(tc, test_ahead_checks_the_window);
	tcase_add_test(tc, test_ahead_bad_reported_by_first_reader);
	tcase_add_test(tc, test_ahead_off_and_hint_at_the_end);
	suite_add_tcase(s, tc);
	return s;
}

const struct fx_suite_def fx_suite = {.make = sealcheck_suite};
