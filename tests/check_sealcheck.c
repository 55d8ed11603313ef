/*
 * check_sealcheck.c - the read path from storage: the three ways of
 * reading the pack (src/pack/storage.c), the buffer pool
 * (src/base/bufpool.c), the cache of checked chunks
 * (src/seal/chunkcache.c) and -o verify=seal's check of every fill
 * (src/seal/sealcheck.c): a fill serves the bytes it hashed, a byte
 * changed on storage after a check fails the next fill, a bad chunk stays
 * bad and fails only the reads that touch it and is reported once,
 * concurrent fills of one chunk read and hash it once, a read error
 * leaves the chunk for the next read, the workers share a request's loads,
 * and checking ahead follows sequential readers only, within their file.
 * No FUSE, no root.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "base/bufpool.h"
#include "pack/digest.h"
#include "pack/storage.h"
#include "fixture.h"
#include "seal/chunkcache.h"
#include "seal/seal.h"
#include "seal/sealcheck.h"

#define CHUNK (64u << 10)
#define HEAD 8192u
#define NOBJ 3u
#define STRIDE 322000u /* 320,000 bytes of roles and a 2,000-byte gap */
#define FILE_SIZE (HEAD + NOBJ * STRIDE)
#define BUDGET (4u << 20)

struct sc_fixture {
	char path[PATH_MAX];
	int fd;
	unsigned char *bytes;
	uint64_t offsets[NOBJ];
	struct mp_seal_layout layout;
	struct mp_seal seal;
	struct mp_storage storage;
	struct mp_sealcheck sc;
};

/* A random file, its layout and a seal of it; `written` bytes on disk. */
static void setup_n(struct sc_fixture *f, size_t written, size_t budget)
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
	ck_assert_int_eq(write(f->fd, f->bytes, written), (ssize_t)written);
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
	ck_assert_int_eq(mp_storage_open(&f->storage, f->fd, FILE_SIZE, 4096, &err), MP_OK);
	ck_assert_int_eq(mp_sealcheck_init(&f->sc, &f->seal, &f->layout, &f->storage, budget,
					   &err), MP_OK);
}

static void setup(struct sc_fixture *f, size_t budget)
{
	setup_n(f, FILE_SIZE, budget);
}

static void teardown(struct sc_fixture *f)
{
	mp_sealcheck_free(&f->sc);
	mp_storage_close(&f->storage);
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

/* Fill [pos, pos + len) and compare what it serves with the file's bytes. */
static enum mp_sealread fill_check(struct sc_fixture *f, uint64_t pos, size_t len,
				   enum mp_fill_mode mode, uint64_t *bad, bool *found)
{
	struct mp_sealfill fl;
	enum mp_sealread rc = mp_sealcheck_fill(&f->sc, pos, len, mode, &fl, bad, found);
	size_t at = 0;

	if (rc != MP_SEALREAD_FILLED)
		return rc;
	for (unsigned i = 0; i < fl.niov; i++) {
		ck_assert_int_eq(memcmp(fl.iov[i].iov_base, f->bytes + pos + at,
					fl.iov[i].iov_len), 0);
		at += fl.iov[i].iov_len;
	}
	ck_assert_uint_eq(at, len);
	mp_sealcheck_release(&f->sc, &fl);
	return rc;
}

static void fill_ok(struct sc_fixture *f, uint64_t pos, size_t len, enum mp_fill_mode mode)
{
	uint64_t bad = 0;
	bool found;

	ck_assert_int_eq(fill_check(f, pos, len, mode, &bad, &found), MP_SEALREAD_FILLED);
}

/* Change one byte of the file on disk (not in f->bytes: the sealed copy). */
static void rot_byte(struct sc_fixture *f, uint64_t at)
{
	unsigned char b = (unsigned char)(f->bytes[at] ^ 0x40);

	ck_assert_int_eq(pwrite(f->fd, &b, 1, (off_t)at), 1);
}

/* ---- storage and buffers ---------------------------------------------------- */

START_TEST(test_storage_reads_each_way)
{
	struct sc_fixture f;
	unsigned char *buf;
	const unsigned char *data;
	uint64_t pos = HEAD + 12345;
	size_t len = 100001;

	setup(&f, 0);
	ck_assert_uint_ge(mp_storage_span(pos, len), len);
	ck_assert_uint_eq(mp_storage_span(pos, len) % 4096, 0);
	ck_assert_int_eq(posix_memalign((void **)&buf, 4096, mp_storage_span(pos, len)), 0);
	for (unsigned m = 0; m < MP_FILL_MODES; m++) {
		ck_assert_int_eq(mp_storage_read(&f.storage, m, pos, len, buf, &data), 0);
		ck_assert_int_eq(memcmp(data, f.bytes + pos, len), 0);
	}
	/* the last byte of the file, a direct read short of its page */
	ck_assert_int_eq(mp_storage_read(&f.storage, MP_FILL_DIRECT, FILE_SIZE - 1, 1, buf,
					 &data), 0);
	ck_assert_uint_eq(*data, f.bytes[FILE_SIZE - 1]);
	/* each way that works said nothing; one that does not said why */
	ck_assert(f.storage.direct_fd >= 0 ? !f.storage.direct_why[0]
					   : strlen(f.storage.direct_why) > 0);
	ck_assert(f.storage.uncached ? !f.storage.uncached_why[0]
				     : strlen(f.storage.uncached_why) > 0);
	ck_assert_uint_eq(mp_storage_mode(&f.storage, true),
			  f.storage.direct_fd >= 0 ? MP_FILL_DIRECT
			  : f.storage.uncached ? MP_FILL_UNCACHED : MP_FILL_BUFFERED);
	ck_assert_uint_ne(mp_storage_mode(&f.storage, false), MP_FILL_DIRECT);
	free(buf);
	teardown(&f);
}
END_TEST

START_TEST(test_storage_short_file)
{
	struct sc_fixture f;
	unsigned char *buf;
	const unsigned char *data;

	setup_n(&f, FILE_SIZE - 5000, 0);
	ck_assert_int_eq(posix_memalign((void **)&buf, 4096, 3 * 4096), 0);
	for (unsigned m = 0; m < MP_FILL_MODES; m++)
		ck_assert_int_eq(mp_storage_read(&f.storage, m, FILE_SIZE - 100, 100, buf,
						 &data), EIO);
	free(buf);
	teardown(&f);
}
END_TEST

START_TEST(test_storage_low_alignment_is_buffered)
{
	struct sc_fixture f;
	struct mp_storage st;
	struct mp_error err = {0};

	setup(&f, 0);
	ck_assert_int_eq(mp_storage_open(&st, f.fd, FILE_SIZE, 64, &err), MP_OK);
	ck_assert_int_eq(st.direct_fd, -1);
	ck_assert_ptr_nonnull(strstr(st.direct_why, "alignment is 64"));
	ck_assert_uint_ne(mp_storage_mode(&st, true), MP_FILL_DIRECT);
	mp_storage_close(&st);
	teardown(&f);
}
END_TEST

START_TEST(test_bufpool_reuses_and_bounds)
{
	struct mp_bufpool p;
	void *a, *b, *c;

	ck_assert(mp_bufpool_init(&p, 5000, 1));
	ck_assert_uint_eq(p.size, 8192);
	a = mp_bufpool_get(&p);
	b = mp_bufpool_get(&p);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq((uintptr_t)a % MP_BUF_ALIGN, 0);
	ck_assert_uint_eq(mp_bufpool_bytes(&p), 2 * 8192);
	mp_bufpool_put(&p, a);
	mp_bufpool_put(&p, b);          /* past `keep`: freed */
	ck_assert_uint_eq(mp_bufpool_bytes(&p), 8192);
	c = mp_bufpool_get(&p);
	ck_assert_ptr_eq(c, a);         /* the kept one again */
	mp_bufpool_put(&p, c);
	mp_bufpool_put(&p, NULL);
	mp_bufpool_destroy(&p);
}
END_TEST

/* ---- the cache ------------------------------------------------------------ */

START_TEST(test_cache_claim_share_evict)
{
	struct mp_chunkcache cc;
	struct mp_error err = {0};
	struct mp_chunk_entry *a, *b, *c;

	/* room for two idle chunks of 4 KiB */
	ck_assert_int_eq(mp_chunkcache_init(&cc, 4096, 2 * 4096, &err), MP_OK);
	ck_assert_int_eq(mp_chunkcache_get(&cc, 7, false, &a), MP_CHUNK_NOMEM);
	ck_assert_int_eq(mp_chunkcache_get(&cc, 7, true, &a), MP_CHUNK_CLAIMED);
	ck_assert_int_eq(mp_chunkcache_get(&cc, 7, true, &b), MP_CHUNK_PENDING);
	ck_assert_ptr_eq(a, b);
	a->len = 4096;
	mp_chunkcache_settle(&cc, a, MP_CE_READY);
	ck_assert_int_eq(mp_chunkcache_wait(&cc, b), MP_CE_READY);
	mp_chunkcache_put(&cc, a, 0);
	mp_chunkcache_put(&cc, b, 100);
	/* idle now, still there */
	ck_assert_int_eq(mp_chunkcache_get(&cc, 7, false, &c), MP_CHUNK_HIT);
	mp_chunkcache_put(&cc, c, 0);
	/* two more chunks: 7 was least recently used, and goes */
	for (uint64_t k = 8; k <= 9; k++) {
		ck_assert_int_eq(mp_chunkcache_get(&cc, k, true, &a), MP_CHUNK_CLAIMED);
		a->len = 4096;
		mp_chunkcache_settle(&cc, a, MP_CE_READY);
		mp_chunkcache_put(&cc, a, 0);
	}
	ck_assert_int_eq(mp_chunkcache_get(&cc, 7, false, &c), MP_CHUNK_NOMEM);
	ck_assert_int_eq(mp_chunkcache_get(&cc, 9, false, &c), MP_CHUNK_HIT);
	mp_chunkcache_put(&cc, c, 0);
	/* a bad chunk leaves the table at once: the next get starts afresh */
	ck_assert_int_eq(mp_chunkcache_get(&cc, 11, true, &a), MP_CHUNK_CLAIMED);
	mp_chunkcache_settle(&cc, a, MP_CE_BAD);
	ck_assert_int_eq(mp_chunkcache_get(&cc, 11, false, &c), MP_CHUNK_NOMEM);
	mp_chunkcache_put(&cc, a, 0);
	mp_chunkcache_destroy(&cc);
}
END_TEST

START_TEST(test_cache_served_out_goes_first)
{
	struct mp_chunkcache cc;
	struct mp_error err = {0};
	struct mp_chunk_entry *e;

	ck_assert_int_eq(mp_chunkcache_init(&cc, 4096, 2 * 4096, &err), MP_OK);
	for (uint64_t k = 1; k <= 2; k++) {
		ck_assert_int_eq(mp_chunkcache_get(&cc, k, true, &e), MP_CHUNK_CLAIMED);
		e->len = 4096;
		mp_chunkcache_settle(&cc, e, MP_CE_READY);
		/* chunk 2 is served whole; chunk 1 only in part */
		mp_chunkcache_put(&cc, e, k == 2 ? 4096 : 10);
	}
	ck_assert_int_eq(mp_chunkcache_get(&cc, 3, true, &e), MP_CHUNK_CLAIMED);
	e->len = 4096;
	mp_chunkcache_settle(&cc, e, MP_CE_READY);
	mp_chunkcache_put(&cc, e, 0);
	/* the served-out chunk went, though the other is older */
	ck_assert_int_eq(mp_chunkcache_get(&cc, 2, false, &e), MP_CHUNK_NOMEM);
	ck_assert_int_eq(mp_chunkcache_get(&cc, 1, false, &e), MP_CHUNK_HIT);
	mp_chunkcache_put(&cc, e, 0);
	mp_chunkcache_destroy(&cc);
}
END_TEST

/* Chunks of 8 MiB (a verify=entries role), no budget: once nothing is held
 * the cache keeps at most 16 MiB of free buffers, not eight of them. */
START_TEST(test_cache_keeps_few_large_buffers)
{
	struct mp_chunkcache cc;
	struct mp_error err = {0};
	struct mp_chunk_entry *e[8];

	ck_assert_int_eq(mp_chunkcache_init(&cc, (8u << 20) + 8192, 0, &err), MP_OK);
	for (uint64_t k = 0; k < 8; k++)
		ck_assert_int_eq(mp_chunkcache_get(&cc, k, true, &e[k]), MP_CHUNK_CLAIMED);
	ck_assert_uint_eq(mp_bufpool_bytes(&cc.pool), 8 * cc.pool.size);
	for (uint64_t k = 0; k < 8; k++) {
		e[k]->len = 4096;
		mp_chunkcache_settle(&cc, e[k], MP_CE_READY);
		mp_chunkcache_put(&cc, e[k], 4096);
	}
	ck_assert_uint_le(mp_bufpool_bytes(&cc.pool), 16u << 20);
	mp_chunkcache_destroy(&cc);
}
END_TEST

/* ---- fills ---------------------------------------------------------------- */

START_TEST(test_fill_serves_the_hashed_bytes)
{
	struct sc_fixture f;
	uint64_t n, bytes, pos = HEAD + 1000;
	size_t len = 200000;

	setup(&f, 0);
	bytes = span_bytes(&f, pos, len, &n);
	for (unsigned m = 0; m < MP_FILL_MODES; m++)
		fill_ok(&f, pos, len, m);
	/* budget 0: nothing kept, so every fill read and hashed it all again */
	ck_assert_uint_eq(counter(&f.sc.count.checked), 3 * n);
	ck_assert_uint_eq(counter(&f.sc.count.bytes_hashed), 3 * bytes);
	ck_assert_uint_eq(counter(&f.sc.count.bytes_served), 3 * len);
	/* one byte, anywhere */
	fill_ok(&f, FILE_SIZE - 1, 1, MP_FILL_BUFFERED);
	fill_ok(&f, 0, 1, MP_FILL_DIRECT);
	teardown(&f);
}
END_TEST

START_TEST(test_every_fill_is_checked)
{
	struct sc_fixture f;
	uint64_t pos = HEAD + 100000 + 5, bad = 0, chunk;
	bool found;

	setup(&f, 0);
	fill_ok(&f, pos, 1000, MP_FILL_UNCACHED);
	/* bit rot after the check: the next fill reads it again and sees it */
	rot_byte(&f, pos + 10);
	chunk = mp_seal_chunk_at(&f.layout, pos + 10);
	ck_assert_int_eq(fill_check(&f, pos, 1000, MP_FILL_DIRECT, &bad, &found),
			 MP_SEALREAD_BAD);
	ck_assert_uint_eq(bad, chunk);
	ck_assert(found);
	ck_assert_uint_eq(counter(&f.sc.count.failed), 1);
	/* bad for good, reported once, whatever the way of reading */
	for (unsigned m = 0; m < MP_FILL_MODES; m++) {
		ck_assert_int_eq(fill_check(&f, pos, 1, m, &bad, &found), MP_SEALREAD_BAD);
		ck_assert(!found);
	}
	ck_assert(mp_sealcheck_is_bad(&f.sc, chunk));
	/* only the reads that touch it: the chunks around it are fine */
	fill_ok(&f, HEAD, 100000, MP_FILL_BUFFERED);
	fill_ok(&f, HEAD + STRIDE, 5000, MP_FILL_BUFFERED);
	teardown(&f);
}
END_TEST

/* A refetch hook: how often it was called, and whether it mends the file. */
struct refetch_log {
	struct sc_fixture *f;
	unsigned calls;
	uint64_t chunk;
	bool mend, answer;
};

static bool refetch_hook(void *arg, uint64_t chunk)
{
	struct refetch_log *log = arg;
	struct mp_seal_chunk ch;

	log->calls++;
	log->chunk = chunk;
	mp_seal_chunk_get(&log->f->layout, chunk, &ch);
	if (log->mend)
		ck_assert_int_eq(pwrite(log->f->fd, log->f->bytes + ch.offset, ch.len,
					(off_t)ch.offset), (ssize_t)ch.len);
	return log->answer;
}

START_TEST(test_refetch_mends_or_fails_once)
{
	struct sc_fixture f;
	struct refetch_log log = {.f = &f, .mend = true, .answer = true};
	uint64_t pos = HEAD + 100000 + 5, bad = 0, chunk;
	bool found;

	setup(&f, 0);
	f.sc.refetch = refetch_hook;
	f.sc.want_arg = &log;
	chunk = mp_seal_chunk_at(&f.layout, pos + 10);
	/* bytes lost on disk, mended by the hook: served, not bad */
	rot_byte(&f, pos + 10);
	fill_ok(&f, pos, 1000, MP_FILL_DIRECT);
	ck_assert_uint_eq(log.calls, 1);
	ck_assert_uint_eq(log.chunk, chunk);
	ck_assert_uint_eq(counter(&f.sc.count.failed), 0);
	ck_assert(!mp_sealcheck_is_bad(&f.sc, chunk));
	/* a hook that says it mended but did not: asked once, then bad */
	rot_byte(&f, pos + 20);
	log = (struct refetch_log){.f = &f, .mend = false, .answer = true};
	ck_assert_int_eq(fill_check(&f, pos, 1000, MP_FILL_UNCACHED, &bad, &found),
			 MP_SEALREAD_BAD);
	ck_assert_uint_eq(log.calls, 1);
	ck_assert_uint_eq(bad, chunk);
	ck_assert_uint_eq(counter(&f.sc.count.failed), 1);
	teardown(&f);
	/* a hook that cannot: bad at once */
	setup(&f, 0);
	log = (struct refetch_log){.f = &f, .mend = true, .answer = false};
	f.sc.refetch = refetch_hook;
	f.sc.want_arg = &log;
	rot_byte(&f, pos + 10);
	ck_assert_int_eq(fill_check(&f, pos, 1000, MP_FILL_BUFFERED, &bad, &found),
			 MP_SEALREAD_BAD);
	ck_assert_uint_eq(log.calls, 1);
	ck_assert(mp_sealcheck_is_bad(&f.sc, chunk));
	teardown(&f);
}
END_TEST

START_TEST(test_cache_spares_the_rehash)
{
	struct sc_fixture f;
	uint64_t n, bytes, pos = HEAD, len = 300000;

	setup(&f, BUDGET);
	bytes = span_bytes(&f, pos, (size_t)len, &n);
	/* two requests that share chunks, as the kernel cuts one read */
	fill_ok(&f, pos, 150001, MP_FILL_DIRECT);
	fill_ok(&f, pos + 150001, (size_t)(len - 150001), MP_FILL_DIRECT);
	ck_assert_uint_eq(counter(&f.sc.count.checked), n);
	ck_assert_uint_eq(counter(&f.sc.count.bytes_hashed), bytes);
	ck_assert_uint_ge(f.sc.cache.hits, 1);
	teardown(&f);
}
END_TEST

struct racer {
	struct sc_fixture *f;
	pthread_barrier_t *go;
	uint64_t pos;
	size_t len;
};

static void *race_fill(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->go);
	fill_ok(r->f, r->pos, r->len, MP_FILL_BUFFERED);
	return NULL;
}

START_TEST(test_concurrent_fills_hash_once)
{
	struct sc_fixture f;
	pthread_t t[8];
	pthread_barrier_t go;
	struct racer r[8];
	uint64_t n;

	setup(&f, BUDGET);
	span_bytes(&f, HEAD, 300000, &n);
	pthread_barrier_init(&go, NULL, 8);
	for (unsigned i = 0; i < 8; i++) {
		/* overlapping pieces of one range, in every order */
		r[i] = (struct racer){&f, &go, HEAD + (i % 4) * 50000, 150000};
		ck_assert_int_eq(pthread_create(&t[i], NULL, race_fill, &r[i]), 0);
	}
	for (unsigned i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	/* every chunk of [HEAD, HEAD + 300000) once, however they met */
	ck_assert_uint_eq(counter(&f.sc.count.checked), n);
	teardown(&f);
}
END_TEST

START_TEST(test_read_error_retries)
{
	struct sc_fixture f;
	uint64_t bad = 0;
	bool found;

	setup_n(&f, FILE_SIZE - 5000, BUDGET);
	ck_assert_int_eq(fill_check(&f, FILE_SIZE - 10, 10, MP_FILL_BUFFERED, &bad, &found),
			 MP_SEALREAD_IO);
	ck_assert(!mp_sealcheck_is_bad(&f.sc, f.layout.chunk_count - 1));
	ck_assert_uint_eq(counter(&f.sc.count.failed), 0);
	/* the file grows back: the chunk is read again, and is good */
	ck_assert_int_eq(pwrite(f.fd, f.bytes + FILE_SIZE - 5000, 5000, FILE_SIZE - 5000), 5000);
	fill_ok(&f, FILE_SIZE - 10, 10, MP_FILL_BUFFERED);
	teardown(&f);
}
END_TEST

START_TEST(test_workers_share_a_request)
{
	struct sc_fixture f;
	struct mp_error err = {0};
	uint64_t n, bytes;

	setup(&f, 0);
	ck_assert_int_eq(mp_sealcheck_start(&f.sc, 0, 0, &err), MP_E_USAGE);
	ck_assert_int_eq(mp_sealcheck_start(&f.sc, 3, 0, &err), MP_OK);
	bytes = span_bytes(&f, 0, FILE_SIZE, &n);
	ck_assert_uint_gt(n, 10);
	for (int i = 0; i < 20; i++)
		fill_ok(&f, 0, FILE_SIZE, MP_FILL_DIRECT);
	ck_assert_uint_eq(counter(&f.sc.count.checked), 20 * n);
	ck_assert_uint_eq(counter(&f.sc.count.bytes_hashed), 20 * bytes);
	/* a bad chunk in the middle of a many-chunk request */
	rot_byte(&f, HEAD + STRIDE + 200000);
	{
		uint64_t bad = 0;
		bool found;

		ck_assert_int_eq(fill_check(&f, 0, FILE_SIZE, MP_FILL_DIRECT, &bad, &found),
				 MP_SEALREAD_BAD);
		ck_assert(found);
		ck_assert_uint_eq(bad, mp_seal_chunk_at(&f.layout, HEAD + STRIDE + 200000));
	}
	mp_sealcheck_stop(&f.sc);
	mp_sealcheck_stop(&f.sc);
	teardown(&f);
}
END_TEST

/* Wait (for a condition, not a time) until a counter reaches `want`. */
static void wait_count(_Atomic uint64_t *c, uint64_t want)
{
	while (counter(c) < want)
		sched_yield();
}

START_TEST(test_ahead_follows_sequential_readers)
{
	struct sc_fixture f;
	struct mp_error err = {0};
	uint64_t role_end = HEAD + 100000, c1;

	setup(&f, BUDGET);
	ck_assert_int_eq(mp_sealcheck_start(&f.sc, 2, 8, &err), MP_OK);
	/* a first read: nothing ahead, it may be a random one */
	mp_sealcheck_ahead_hint(&f.sc, HEAD, 4096, role_end, MP_FILL_BUFFERED);
	fill_ok(&f, HEAD, 4096, MP_FILL_BUFFERED);
	ck_assert_uint_eq(counter(&f.sc.count.checked_ahead), 0);
	/* the next one where it ended: the rest of the role file, not past it */
	mp_sealcheck_ahead_hint(&f.sc, HEAD + 4096, 4096, role_end, MP_FILL_BUFFERED);
	c1 = mp_seal_chunk_at(&f.layout, role_end - 1);
	wait_count(&f.sc.count.checked_ahead, c1 - mp_seal_chunk_at(&f.layout, HEAD + 8191));
	ck_assert_uint_eq(counter(&f.sc.count.checked_ahead),
			  c1 - mp_seal_chunk_at(&f.layout, HEAD + 8191));
	/* what was checked ahead is served without another check */
	fill_ok(&f, HEAD + 8192, (size_t)(role_end - HEAD - 8192), MP_FILL_BUFFERED);
	ck_assert_uint_eq(counter(&f.sc.count.checked), 1 + c1 - mp_seal_chunk_at(&f.layout,
										 HEAD + 8191));
	mp_sealcheck_stop(&f.sc);
	teardown(&f);
}
END_TEST

START_TEST(test_ahead_bad_counted_and_reported_once)
{
	struct sc_fixture f;
	struct mp_error err = {0};
	uint64_t end = HEAD + STRIDE, bad = 0, chunk, nahead;
	bool found;

	setup(&f, BUDGET);
	/* in the gate role, past the chunks the reads below touch */
	chunk = mp_seal_chunk_at(&f.layout, HEAD + 110000);
	rot_byte(&f, HEAD + 110000);
	ck_assert_int_eq(mp_sealcheck_start(&f.sc, 1, 16, &err), MP_OK);
	mp_sealcheck_ahead_hint(&f.sc, HEAD, 100, end, MP_FILL_UNCACHED);
	mp_sealcheck_ahead_hint(&f.sc, HEAD + 100, 100, end, MP_FILL_UNCACHED);
	nahead = mp_seal_chunk_at(&f.layout, end - 1) - mp_seal_chunk_at(&f.layout, HEAD + 199);
	wait_count(&f.sc.count.checked_ahead, nahead);
	wait_count(&f.sc.count.failed, 1);
	/* the bad one is among the chunks checked ahead */
	ck_assert_uint_eq(counter(&f.sc.count.checked_ahead), nahead);
	ck_assert_uint_eq(counter(&f.sc.count.failed), 1);
	ck_assert(mp_sealcheck_is_bad(&f.sc, chunk));
	/* found ahead: the first read that meets it reports it, once */
	ck_assert_int_eq(fill_check(&f, HEAD + 109000, 2000, MP_FILL_BUFFERED, &bad, &found),
			 MP_SEALREAD_BAD);
	ck_assert(found);
	ck_assert_uint_eq(bad, chunk);
	ck_assert_int_eq(fill_check(&f, HEAD + 109000, 2000, MP_FILL_BUFFERED, &bad, &found),
			 MP_SEALREAD_BAD);
	ck_assert(!found);
	mp_sealcheck_stop(&f.sc);
	teardown(&f);
}
END_TEST

START_TEST(test_ahead_off)
{
	struct sc_fixture f;
	struct mp_error err = {0};

	/* window 0, or no room to keep what was checked: nothing ahead */
	setup(&f, BUDGET);
	ck_assert_int_eq(mp_sealcheck_start(&f.sc, 1, 0, &err), MP_OK);
	for (uint64_t p = HEAD; p < HEAD + 40000; p += 4096)
		mp_sealcheck_ahead_hint(&f.sc, p, 4096, FILE_SIZE, MP_FILL_BUFFERED);
	mp_sealcheck_stop(&f.sc);
	ck_assert_uint_eq(counter(&f.sc.count.checked), 0);
	teardown(&f);
	setup(&f, 0);
	ck_assert_int_eq(mp_sealcheck_start(&f.sc, 1, 8, &err), MP_OK);
	for (uint64_t p = HEAD; p < HEAD + 40000; p += 4096)
		mp_sealcheck_ahead_hint(&f.sc, p, 4096, FILE_SIZE, MP_FILL_BUFFERED);
	/* and the end of the file has nothing after it */
	mp_sealcheck_ahead_hint(&f.sc, FILE_SIZE - 1, 1, FILE_SIZE, MP_FILL_BUFFERED);
	mp_sealcheck_stop(&f.sc);
	ck_assert_uint_eq(counter(&f.sc.count.checked), 0);
	teardown(&f);
}
END_TEST

static Suite *sealcheck_suite(void)
{
	Suite *s = suite_create("sealcheck");
	TCase *io = tcase_create("storage");
	TCase *cache = tcase_create("cache");
	TCase *fills = tcase_create("fills");

	tcase_add_test(io, test_storage_reads_each_way);
	tcase_add_test(io, test_storage_short_file);
	tcase_add_test(io, test_storage_low_alignment_is_buffered);
	tcase_add_test(io, test_bufpool_reuses_and_bounds);
	tcase_add_test(cache, test_cache_claim_share_evict);
	tcase_add_test(cache, test_cache_served_out_goes_first);
	tcase_add_test(cache, test_cache_keeps_few_large_buffers);
	tcase_add_test(fills, test_fill_serves_the_hashed_bytes);
	tcase_add_test(fills, test_every_fill_is_checked);
	tcase_add_test(fills, test_refetch_mends_or_fails_once);
	tcase_add_test(fills, test_cache_spares_the_rehash);
	tcase_add_test(fills, test_concurrent_fills_hash_once);
	tcase_add_test(fills, test_read_error_retries);
	tcase_add_test(fills, test_workers_share_a_request);
	tcase_add_test(fills, test_ahead_follows_sequential_readers);
	tcase_add_test(fills, test_ahead_bad_counted_and_reported_once);
	tcase_add_test(fills, test_ahead_off);
	suite_add_tcase(s, io);
	suite_add_tcase(s, cache);
	suite_add_tcase(s, fills);
	return s;
}

const struct fx_suite_def fx_suite = {.make = sealcheck_suite};
