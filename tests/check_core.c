/*
 * check_core.c - the core library's small parts: the error catalogue,
 * SHA-256, quant types and blocks, fp16, names and generation numbers.
 * Expected values come from outside the code under test: published SHA-256
 * vectors, OpenSSL directly, the IEEE half format, ggml's block sizes.
 */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>
#include <openssl/evp.h>

#include "pack/digest.h"
#include "base/errors.h"
#include "base/file.h"
#include "fixture.h"
#include "pack/kimi/index.h"
#include "base/jsonstr.h"
#include "pack/pack.h"
#include "base/quant.h"
#include "pack/readahead.h"
#include "base/text.h"

/* FIPS 180-2 test vectors */
#define SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SHA256_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define MSG_448BIT "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
#define SHA256_448BIT "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"

/* ---- error catalogue ---------------------------------------------------- */

START_TEST(test_err_names_distinct)
{
	for (int a = 0; a < MP_ERR_COUNT; a++) {
		const char *name = mp_err_name(a);

		ck_assert_ptr_nonnull(name);
		ck_assert_msg(name[0], "code %d has an empty name", a);
		/* names are used as --json keys and in the man page */
		for (const char *p = name; *p; p++)
			ck_assert_msg(islower((unsigned char)*p) || *p == '_',
				      "name \"%s\" is not lowercase snake case", name);
		ck_assert_ptr_nonnull(mp_err_summary(a));
		ck_assert_msg(mp_err_summary(a)[0], "code %s has no summary", name);
		for (int b = 0; b < a; b++)
			ck_assert_msg(strcmp(name, mp_err_name(b)) != 0,
				      "codes %d and %d share the name %s", b, a, name);
	}
	ck_assert_str_eq(mp_err_name(MP_OK), "ok");
	ck_assert_str_eq(mp_err_name(MP_E_ENTRY_NAME), "entry_name");
	ck_assert_str_eq(mp_err_name(MP_E_FULL_DIGEST_MISSING), "full_digest_missing");
}
END_TEST

START_TEST(test_err_out_of_range)
{
	/* a stray code must not index past the table */
	ck_assert_ptr_nonnull(mp_err_name(MP_ERR_COUNT));
	ck_assert_ptr_nonnull(mp_err_name((enum mp_err)-1));
	ck_assert_ptr_nonnull(mp_err_summary((enum mp_err)1000000));
	ck_assert_int_ne(mp_err_class(MP_ERR_COUNT), MP_CLASS_OK);
}
END_TEST

START_TEST(test_err_classes)
{
	ck_assert_int_eq(mp_err_class(MP_OK), MP_CLASS_OK);
	for (int c = 1; c < MP_ERR_COUNT; c++) {
		enum mp_err_class cls = mp_err_class(c);

		ck_assert_msg(cls == MP_CLASS_INVALID || cls == MP_CLASS_USAGE ||
				      cls == MP_CLASS_IO,
			      "%s has class %d", mp_err_name(c), cls);
	}

	ck_assert_int_eq(mp_err_class(MP_E_USAGE), MP_CLASS_USAGE);
	ck_assert_int_eq(mp_err_class(MP_E_NOT_FOUND), MP_CLASS_USAGE);
	ck_assert_int_eq(mp_err_class(MP_E_FULL_DIGEST_MISSING), MP_CLASS_USAGE);
	ck_assert_int_eq(mp_err_class(MP_E_PACK_IO), MP_CLASS_IO);
	ck_assert_int_eq(mp_err_class(MP_E_MANIFEST_IO), MP_CLASS_IO);
	ck_assert_int_eq(mp_err_class(MP_E_CONFIG_IO), MP_CLASS_IO);
	/* every check of the pack's contents is an invalid pack, exit 1 */
	for (int c = MP_E_MANIFEST_LIMIT; c <= MP_E_INDEX_DIGEST; c++)
		ck_assert_msg(mp_err_class(c) == MP_CLASS_INVALID, "%s is not invalid",
			      mp_err_name(c));
	ck_assert_int_eq(mp_err_class(MP_E_FULL_DIGEST), MP_CLASS_INVALID);
}
END_TEST

START_TEST(test_err_exit_status)
{
	/* the exit statuses of moepack(1) and moepackfs(1), read from the
	 * one catalogue */
	ck_assert_int_eq(mp_err_exit_status(MP_OK), 0);
	ck_assert_int_eq(mp_err_exit_status(MP_E_INDEX_DIGEST), 1);
	ck_assert_int_eq(mp_err_exit_status(MP_E_USAGE), 2);
	ck_assert_int_eq(mp_err_exit_status(MP_E_NOT_FOUND), 2);
	ck_assert_int_eq(mp_err_exit_status(MP_E_PACK_IO), 3);
	ck_assert_int_eq(mp_err_exit_status(MP_E_NOMEM), 3);
	for (int c = 0; c < MP_ERR_COUNT; c++)
		ck_assert_int_eq(mp_err_exit_status(c), (int)mp_err_class(c));
	ck_assert_int_ne(mp_err_exit_status(MP_ERR_COUNT), 0);
}
END_TEST

START_TEST(test_err_summaries)
{
	/* the validator's messages start with these words; keep them stable */
	ck_assert_str_eq(mp_err_summary(MP_E_ROLE_DTYPE), "quant type is unsupported");
	ck_assert_str_eq(mp_err_summary(MP_E_ENTRY_NAME), "identity mismatch");
	ck_assert_str_eq(mp_err_summary(MP_E_ENTRY_OVERLAP), "range mismatch");
	ck_assert_str_eq(mp_err_summary(MP_E_ENTRY_CONTIGUITY), "not contiguous");
	for (int c = 0; c < MP_ERR_COUNT; c++)
		ck_assert_msg(!strchr(mp_err_summary(c), '\n'),
			      "%s summary has a newline", mp_err_name(c));
}
END_TEST

START_TEST(test_mp_fail_formats)
{
	struct mp_error err = {MP_OK, "old"};

	ck_assert_int_eq(mp_fail(&err, MP_E_ENTRY_NAME, "at index %d: %s", 7, "blk.1"),
			 MP_E_ENTRY_NAME);
	ck_assert_int_eq(err.code, MP_E_ENTRY_NAME);
	ck_assert_str_eq(err.msg, "at index 7: blk.1");
	/* a NULL err is allowed: callers that only want the code */
	ck_assert_int_eq(mp_fail(NULL, MP_E_PACK_IO, "x %s", "y"), MP_E_PACK_IO);
}
END_TEST

START_TEST(test_mp_fail_truncates)
{
	struct {
		struct mp_error err;
		char canary[64];
	} s;
	char *big = malloc(4 * MP_MSG_MAX);

	ck_assert_ptr_nonnull(big);
	memset(big, 'x', 4 * MP_MSG_MAX - 1);
	big[4 * MP_MSG_MAX - 1] = '\0';
	memset(&s, 0x5a, sizeof s);
	mp_fail(&s.err, MP_E_MANIFEST_VALUE, "%s%s", big, "tail");
	ck_assert_int_eq(s.err.code, MP_E_MANIFEST_VALUE);
	ck_assert_uint_eq(strlen(s.err.msg), MP_MSG_MAX - 1);
	for (size_t i = 0; i < sizeof s.canary; i++)
		ck_assert_int_eq((unsigned char)s.canary[i], 0x5a);
	free(big);
}
END_TEST

/* ---- SHA-256 ---------------------------------------------------------- */

static void hex_of(const unsigned char d[MP_SHA256_LEN], char out[MP_SHA256_HEX])
{
	mp_sha256_hex(d, out);
}

START_TEST(test_sha256_vectors)
{
	unsigned char d[MP_SHA256_LEN];
	char hex[MP_SHA256_HEX];

	/* FIPS 180-2 and the empty message */
	mp_sha256_buf("", 0, d);
	hex_of(d, hex);
	ck_assert_str_eq(hex, SHA256_EMPTY);
	mp_sha256_buf("abc", 3, d);
	hex_of(d, hex);
	ck_assert_str_eq(hex, SHA256_ABC);
	mp_sha256_buf(MSG_448BIT, 56, d);
	hex_of(d, hex);
	ck_assert_str_eq(hex, SHA256_448BIT);
}
END_TEST

START_TEST(test_sha256_incremental)
{
	static const char text[] = MSG_448BIT;
	const size_t len = sizeof text - 1;
	struct mp_sha256 *h = mp_sha256_new();
	unsigned char d[MP_SHA256_LEN], one[MP_SHA256_LEN];
	char hex[MP_SHA256_HEX];

	ck_assert_ptr_nonnull(h);
	for (size_t i = 0; i < len; i += 5)
		mp_sha256_update(h, text + i, len - i < 5 ? len - i : 5);
	mp_sha256_final(h, d);
	mp_sha256_buf(text, len, one);
	ck_assert_mem_eq(d, one, MP_SHA256_LEN);
	/* final resets: the same object digests "abc" next */
	mp_sha256_update(h, "a", 1);
	mp_sha256_update(h, "bc", 2);
	mp_sha256_final(h, d);
	hex_of(d, hex);
	ck_assert_str_eq(hex, SHA256_ABC);
	mp_sha256_free(h);
	mp_sha256_free(NULL);
}
END_TEST

START_TEST(test_sha256_hex_check)
{
	static const char good[] =
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char s[80];

	ck_assert(mp_is_sha256_hex(good));
	strcpy(s, good);
	s[10] = 'A';
	ck_assert(!mp_is_sha256_hex(s)); /* uppercase is not the format */
	strcpy(s, good);
	s[63] = 'g';
	ck_assert(!mp_is_sha256_hex(s));
	strcpy(s, good);
	s[63] = '\0';
	ck_assert(!mp_is_sha256_hex(s));
	strcpy(s, good);
	strcat(s, "0");
	ck_assert(!mp_is_sha256_hex(s));
	ck_assert(!mp_is_sha256_hex(""));
}
END_TEST

/* A file of len deterministic bytes, returned too (caller frees). */
static unsigned char *make_file(const char *path, size_t len)
{
	unsigned char *buf = malloc(len ? len : 1);
	uint32_t x = 12345;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (unsigned char)(x >> 16);
	}
	fx_write_file(path, buf, len);
	return buf;
}

START_TEST(test_sha256_fd_matches_buf)
{
	/* more than one of any sane read chunk, and not a round number */
	const size_t len = (17u << 20) + 12345;
	char dir[PATH_MAX], path[PATH_MAX + 16], hex[MP_SHA256_HEX], ref[MP_SHA256_HEX];
	unsigned char d[MP_SHA256_LEN], b[MP_SHA256_LEN];
	struct fx_progress log = {0};
	struct mp_error err = {0};
	unsigned char *data;
	int fd;

	fx_mkdtemp(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/blob", dir);
	data = make_file(path, len);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mp_sha256_fd(fd, len, path, fx_progress_log, &log, NULL, d, &err), MP_OK);
	mp_sha256_buf(data, len, b);
	ck_assert_mem_eq(d, b, MP_SHA256_LEN);
	hex_of(d, hex);
	fx_sha256_hex_of(data, len, ref); /* OpenSSL, not our wrapper */
	ck_assert_str_eq(hex, ref);

	ck_assert_uint_ge(log.calls, 1);
	ck_assert_uint_eq(log.done, len);
	ck_assert_uint_eq(log.total, len);
	ck_assert(!log.backwards);

	/* a prefix is the digest of the prefix; no callback is fine */
	ck_assert_int_eq(mp_sha256_fd(fd, 1000, path, NULL, NULL, NULL, d, &err), MP_OK);
	mp_sha256_buf(data, 1000, b);
	ck_assert_mem_eq(d, b, MP_SHA256_LEN);
	/* the empty prefix */
	ck_assert_int_eq(mp_sha256_fd(fd, 0, path, NULL, NULL, NULL, d, &err), MP_OK);
	hex_of(d, hex);
	ck_assert_str_eq(hex, SHA256_EMPTY);
	close(fd);
	free(data);
	fx_rmtree(dir);
}
END_TEST

/* What a readahead consumer saw: the bytes in order, and where they came from. */
struct ra_log {
	const unsigned char *want;   /* the file's bytes */
	uint64_t next;               /* next expected pos */
	uint64_t calls;
	uint64_t max_len;
	int bad;                     /* a gap, an overlap or a wrong byte */
	uint64_t fail_at;            /* fail when this pos arrives (0: never) */
	struct fx_progress prog;
};

static enum mp_err ra_consume(const unsigned char *buf, size_t len, uint64_t pos,
			      void *arg, struct mp_error *err)
{
	struct ra_log *l = arg;

	if (l->fail_at && pos >= l->fail_at)
		return mp_fail(err, MP_E_NOMEM, "consumer stops at %llu",
			       (unsigned long long)pos);
	if (pos != l->next || len == 0 || memcmp(buf, l->want + pos, len) != 0)
		l->bad = 1;
	l->next = pos + len;
	l->calls++;
	if (len > l->max_len)
		l->max_len = len;
	return MP_OK;
}

static void ra_progress(uint64_t done, uint64_t total, void *arg)
{
	fx_progress_log(done, total, &((struct ra_log *)arg)->prog);
}

START_TEST(test_readahead_ring)
{
	/* many times the small ring below, and more than two default buffers */
	const size_t len = (9u << 20) + 4321;
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct mp_readahead_opts ro = {.buf_size = 4096 + 7, .nbufs = 3,
				       .progress = ra_progress};
	struct mp_error err = {0};
	struct ra_log l = {0};
	unsigned char *data;
	int fd;

	fx_mkdtemp(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/blob", dir);
	data = make_file(path, len);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);

	l.want = data;
	ro.progress_arg = &l;
	ck_assert_int_eq(mp_readahead(fd, 0, len, path, &ro, ra_consume, &l, &err), MP_OK);
	ck_assert_int_eq(l.bad, 0);
	ck_assert_uint_eq(l.next, len);
	ck_assert_uint_eq(l.max_len, 4096 + 7);
	ck_assert_uint_eq(l.calls, (len + 4096 + 6) / (4096 + 7));
	ck_assert_uint_eq(l.prog.done, len);
	ck_assert_uint_eq(l.prog.total, len);
	ck_assert(!l.prog.backwards);

	/* a range inside the file: positions are absolute, progress relative */
	memset(&l, 0, sizeof l);
	l.want = data;
	l.next = 1000;
	ro.progress_arg = &l;
	ck_assert_int_eq(mp_readahead(fd, 1000, 1000 + 50000, path, &ro, ra_consume,
				      &l, &err), MP_OK);
	ck_assert_int_eq(l.bad, 0);
	ck_assert_uint_eq(l.next, 51000);
	ck_assert_uint_eq(l.prog.done, 50000);
	ck_assert_uint_eq(l.prog.total, 50000);

	/* the default ring, and a range that fits one buffer (no thread) */
	memset(&l, 0, sizeof l);
	l.want = data;
	ck_assert_int_eq(mp_readahead(fd, 0, len, path, NULL, ra_consume, &l, &err), MP_OK);
	ck_assert_int_eq(l.bad, 0);
	ck_assert_uint_eq(l.next, len);
	ck_assert_uint_eq(l.max_len, MP_READAHEAD_BUF);
	memset(&l, 0, sizeof l);
	l.want = data;
	ck_assert_int_eq(mp_readahead(fd, 0, 77, path, NULL, ra_consume, &l, &err), MP_OK);
	ck_assert_uint_eq(l.calls, 1);
	ck_assert_int_eq(l.bad, 0);
	/* an empty range calls nothing */
	memset(&l, 0, sizeof l);
	ck_assert_int_eq(mp_readahead(fd, 5, 5, path, NULL, ra_consume, &l, &err), MP_OK);
	ck_assert_uint_eq(l.calls, 0);

	/* a consumer that fails stops the read with its own error, at once */
	memset(&l, 0, sizeof l);
	l.want = data;
	l.fail_at = 100000;
	ck_assert_int_eq(mp_readahead(fd, 0, len, path, &ro, ra_consume, &l, &err),
			 MP_E_NOMEM);
	fx_assert_err(&err, MP_E_NOMEM, "consumer stops at");
	ck_assert_int_eq(l.bad, 0);
	ck_assert_uint_lt(l.next, 100000 + 4096 + 7);

	/* a file shorter than the range: the bytes before are consumed, then
	 * an I/O error naming the path and where the read stopped */
	memset(&l, 0, sizeof l);
	l.want = data;
	ck_assert_int_eq(mp_readahead(fd, 0, len + 10, path, &ro, ra_consume, &l, &err),
			 MP_E_PACK_IO);
	fx_assert_err(&err, MP_E_PACK_IO, path);
	ck_assert_ptr_nonnull(strstr(err.msg, "the file is shorter (ends before byte"));
	ck_assert_int_eq(l.bad, 0);
	ck_assert_uint_eq(l.next, len / (4096 + 7) * (4096 + 7));
	close(fd);
	free(data);
	fx_rmtree(dir);
}
END_TEST

/* A writer's side of the ring: bytes made from their position. */
struct ring_src {
	uint64_t fail_at;           /* fail when this pos is asked for (0: never) */
	uint64_t filled;            /* bytes made */
	uint64_t next;
	int out_of_order;
};

static unsigned char byte_at(uint64_t pos)
{
	return (unsigned char)((pos * 2654435761u) >> 13);
}

static enum mp_err ring_fill(unsigned char *buf, size_t len, uint64_t pos, void *arg,
			     struct mp_error *err)
{
	struct ring_src *src = arg;

	if (src->fail_at && pos >= src->fail_at)
		return mp_fail(err, MP_E_PACK_IO, "cannot make byte %llu",
			       (unsigned long long)pos);
	if (pos != src->next)
		src->out_of_order = 1;
	for (size_t i = 0; i < len; i++)
		buf[i] = byte_at(pos + i);
	src->next = pos + len;
	src->filled += len;
	return MP_OK;
}

struct ring_sink {
	uint64_t next, consumed, fail_at;
	int bad;
};

static enum mp_err ring_consume(const unsigned char *buf, size_t len, uint64_t pos,
				void *arg, struct mp_error *err)
{
	struct ring_sink *k = arg;

	if (k->fail_at && pos >= k->fail_at)
		return mp_fail(err, MP_E_NOMEM, "sink full at %llu", (unsigned long long)pos);
	if (pos != k->next)
		k->bad = 1;
	for (size_t i = 0; i < len; i++)
		if (buf[i] != byte_at(pos + i))
			k->bad = 1;
	k->next = pos + len;
	k->consumed += len;
	return MP_OK;
}

START_TEST(test_ring_with_a_writer)
{
	struct mp_readahead_opts ro = {.buf_size = 1000, .nbufs = 2};
	struct mp_error err = {0};
	struct ring_src src = {.next = 5};
	struct ring_sink sink = {.next = 5};

	/* every byte made once, consumed once, in order */
	ck_assert_int_eq(mp_ring_run(5, 5 + 123457, &ro, ring_fill, &src, ring_consume,
				     &sink, &err), MP_OK);
	ck_assert_int_eq(src.out_of_order, 0);
	ck_assert_int_eq(sink.bad, 0);
	ck_assert_uint_eq(src.filled, 123457);
	ck_assert_uint_eq(sink.consumed, 123457);

	/* the filling side fails: what came before is consumed, then its error */
	memset(&src, 0, sizeof src);
	memset(&sink, 0, sizeof sink);
	src.fail_at = 50000;
	ck_assert_int_eq(mp_ring_run(0, 123457, &ro, ring_fill, &src, ring_consume, &sink,
				     &err), MP_E_PACK_IO);
	fx_assert_err(&err, MP_E_PACK_IO, "cannot make byte 50000");
	ck_assert_int_eq(sink.bad, 0);
	ck_assert_uint_eq(sink.consumed, 50000);

	/* the consuming side fails: the filling side stops within the ring */
	memset(&src, 0, sizeof src);
	memset(&sink, 0, sizeof sink);
	sink.fail_at = 20000;
	ck_assert_int_eq(mp_ring_run(0, 10000000, &ro, ring_fill, &src, ring_consume,
				     &sink, &err), MP_E_NOMEM);
	fx_assert_err(&err, MP_E_NOMEM, "sink full at 20000");
	ck_assert_uint_eq(sink.consumed, 20000);
	ck_assert_uint_le(src.filled, 20000 + 3 * 1000);
}
END_TEST

/* A consumer that asks a stop (as a signal would) once it has pos bytes. */
struct stopping_sink {
	struct ring_sink sink;
	struct mp_cancel *stop;
	uint64_t stop_at;
};

static enum mp_err stopping_consume(const unsigned char *buf, size_t len, uint64_t pos,
				    void *arg, struct mp_error *err)
{
	struct stopping_sink *k = arg;

	if (pos + len >= k->stop_at)
		mp_cancel_request(k->stop, 2);
	return ring_consume(buf, len, pos, &k->sink, err);
}

/* A stop asked during a run ends it before the next piece, on either path. */
START_TEST(test_ring_stop_asked)
{
	struct mp_cancel stop = {0};
	struct mp_readahead_opts ro = {.buf_size = 1000, .nbufs = 2, .cancel = &stop};
	struct mp_error err = {0};
	struct ring_src src = {0};
	struct stopping_sink k = {.stop = &stop, .stop_at = 20000};
	char dir[PATH_MAX], path[PATH_MAX + 16];
	unsigned char d[MP_SHA256_LEN];
	int fd;

	ck_assert_int_eq(mp_ring_run(0, 10000000, &ro, ring_fill, &src, stopping_consume, &k,
				     &err), MP_E_INTERRUPTED);
	fx_assert_err(&err, MP_E_INTERRUPTED, "build interrupted by signal 2 while reading a file "
		      "at byte 20000");
	ck_assert_uint_eq(k.sink.consumed, 20000);
	ck_assert_int_eq(k.sink.bad, 0);
	/* one buffer, no thread: the same */
	memset(&src, 0, sizeof src);
	memset(&k.sink, 0, sizeof k.sink);
	stop.sig = 0;
	ro.nbufs = 1;
	ro.buf_size = 20000000;
	ck_assert_int_eq(mp_ring_run(0, 30000, &ro, ring_fill, &src, stopping_consume, &k, &err),
			 MP_OK);
	ck_assert_int_eq(mp_ring_run(0, 30000, &ro, ring_fill, &src, stopping_consume, &k, &err),
			 MP_E_INTERRUPTED);
	/* a whole-file digest asked to stop names its file */
	fx_mkdtemp(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/f", dir);
	free(make_file(path, 4096));
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mp_sha256_fd(fd, 4096, path, NULL, NULL, &stop, d, &err),
			 MP_E_INTERRUPTED);
	fx_assert_err(&err, MP_E_INTERRUPTED, path);
	close(fd);
	fx_rmtree(dir);
}
END_TEST

START_TEST(test_sha256_fd_short_file)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	unsigned char d[MP_SHA256_LEN];
	struct mp_error err = {0};
	int fd;

	fx_mkdtemp(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/short", dir);
	free(make_file(path, 4096));
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mp_sha256_fd(fd, 4097, path, NULL, NULL, NULL, d, &err), MP_E_PACK_IO);
	fx_assert_err(&err, MP_E_PACK_IO, path);
	close(fd);

	/* a read error (a directory) is the same code, naming the path */
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(mp_sha256_fd(fd, 10, dir, NULL, NULL, NULL, d, &err), MP_E_PACK_IO);
	fx_assert_err(&err, MP_E_PACK_IO, dir);
	close(fd);
	fx_rmtree(dir);
}
END_TEST

/* ---- quant types ------------------------------------------------------ */

START_TEST(test_quant_table)
{
	static const struct {
		const char *name;
		int id;
		unsigned weights, bytes;
	} want[] = {
		{"Q2_K", 10, 256, 84},
		{"Q3_K", 11, 256, 110},
		{"Q4_0", 2, 32, 18},
		/* as ggml 0.23.0 reports them (ggml_type_size, ggml_blck_size) */
		{"Q8_0", 8, 32, 34},
		{"Q8_K", 15, 256, 292},
		{"MXFP4", 39, 32, 17},
	};

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const struct mp_quant_type *t = mp_quant_by_id(want[i].id);

		ck_assert_ptr_nonnull(t);
		ck_assert_str_eq(t->name, want[i].name);
		ck_assert_int_eq(t->id, want[i].id);
		ck_assert_uint_eq(t->block_weights, want[i].weights);
		ck_assert_uint_eq(t->block_bytes, want[i].bytes);
		ck_assert_ptr_eq(mp_quant_by_name(want[i].name), t);
	}
	ck_assert_int_eq(MP_GGML_Q2_K, 10);
	ck_assert_int_eq(MP_GGML_Q3_K, 11);
	ck_assert_int_eq(MP_GGML_Q4_0, 2);
	ck_assert_int_eq(MP_GGML_MXFP4, 39);
	ck_assert_uint_eq(MP_QK_MXFP4, 32);
	ck_assert_uint_eq(MP_MXFP4_BYTES, 1 + MP_QK_MXFP4 / 2);
	/* the exported table is the one the look-ups answer from */
	ck_assert_ptr_eq(&mp_ggml_types[MP_GGML_MXFP4], mp_quant_by_id(MP_GGML_MXFP4));
	ck_assert_ptr_null(mp_quant_by_id(0));
	ck_assert_ptr_null(mp_quant_by_id(-10));
	ck_assert_ptr_null(mp_quant_by_id(9999));
	ck_assert_ptr_null(mp_quant_by_name("q2_k")); /* exact, case-sensitive */
	ck_assert_ptr_null(mp_quant_by_name("Q2_K "));
	ck_assert_ptr_null(mp_quant_by_name(""));
	/* every ggml type is in the one table; only quant types pass by_id */
	ck_assert_str_eq(mp_ggml_type(MP_GGML_F32)->name, "F32");
	ck_assert_uint_eq(mp_ggml_type(MP_GGML_F32)->block_bytes, 4);
	ck_assert_str_eq(mp_ggml_type(30)->name, "BF16");
	ck_assert_uint_eq(mp_ggml_type(4)->block_weights, 0); /* Q4_2, removed */
	ck_assert_ptr_eq(mp_ggml_type(MP_GGML_Q3_K), mp_quant_by_id(MP_GGML_Q3_K));
	ck_assert_ptr_null(mp_quant_by_name("F32"));
	ck_assert_ptr_null(mp_ggml_type(MP_GGML_TYPE_COUNT));
	for (uint32_t id = 0; id < MP_GGML_TYPE_COUNT; id++)
		ck_assert_int_eq(mp_ggml_type(id)->id, (int)id);
}
END_TEST

START_TEST(test_quant_bytes)
{
	const struct mp_quant_type *q2 = mp_quant_by_name("Q2_K");
	const struct mp_quant_type *q3 = mp_quant_by_name("Q3_K");
	const struct mp_quant_type *q4 = mp_quant_by_name("Q4_0");
	const uint64_t max_weights = UINT64_MAX / 256 * 256;

	ck_assert_uint_eq(mp_quant_bytes(q2, 256), 84);
	/* Kimi-class roles: hidden 7168 x expert width 2048 */
	ck_assert_uint_eq(mp_quant_bytes(q2, 7168 * 2048), 4816896);
	ck_assert_uint_eq(mp_quant_bytes(q3, 7168 * 2048), 6307840);
	ck_assert_uint_eq(mp_quant_bytes(q4, 32), 18);
	ck_assert_uint_eq(mp_quant_bytes(q4, 64), 36);
	/* not whole blocks */
	ck_assert_uint_eq(mp_quant_bytes(q2, 255), 0);
	ck_assert_uint_eq(mp_quant_bytes(q2, 257), 0);
	ck_assert_uint_eq(mp_quant_bytes(q2, 128), 0);
	ck_assert_uint_eq(mp_quant_bytes(q3, 384), 0);
	ck_assert_uint_eq(mp_quant_bytes(q4, 48), 0);
	/* the largest counts: exact, since blocks * bytes stays below 2^64 */
	ck_assert_uint_eq(mp_quant_bytes(q2, max_weights), UINT64_MAX / 256 * 84);
	ck_assert_uint_eq(mp_quant_bytes(q3, max_weights), UINT64_MAX / 256 * 110);
	ck_assert_uint_eq(mp_quant_bytes(q2, UINT64_MAX), 0);
	/* MXFP4: 32 weights in 17 bytes; a DeepSeek-class role 4096 x 2048 */
	ck_assert_uint_eq(mp_quant_bytes(mp_quant_by_name("MXFP4"), 32), 17);
	ck_assert_uint_eq(mp_quant_bytes(mp_quant_by_name("MXFP4"), 4096 * 2048), 4456448);
	ck_assert_uint_eq(mp_quant_bytes(mp_quant_by_name("MXFP4"), 48), 0);
	/* a removed type (no blocks at all) takes no bytes, without a division by 0 */
	ck_assert_uint_eq(mp_quant_bytes(mp_ggml_type(4), 32), 0);
	ck_assert_uint_eq(mp_quant_bytes(NULL, 32), 0);
}
END_TEST

/* ---- fp16 ------------------------------------------------------------- */

START_TEST(test_fp16_known_values)
{
	static const struct {
		uint16_t h;
		float f;
	} v[] = {
		{0x0000, 0.0f},     {0x3c00, 1.0f},         {0xc000, -2.0f},
		{0x3800, 0.5f},     {0x7bff, 65504.0f},     {0x3555, 0.333251953125f},
		{0x0400, 6.103515625e-05f}, /* smallest normal */
		{0x0001, 5.9604644775390625e-08f}, /* smallest subnormal */
		{0x03ff, 6.0975551605224609375e-05f}, /* largest subnormal */
		{0x2e66, 0.0999755859375f},
	};

	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		ck_assert_msg(mp_fp16_to_float(v[i].h) == v[i].f,
			      "fp16 0x%04x -> %g, want %g", v[i].h,
			      (double)mp_fp16_to_float(v[i].h), (double)v[i].f);
	}
	ck_assert(isinf(mp_fp16_to_float(0x7c00)) && mp_fp16_to_float(0x7c00) > 0);
	ck_assert(isinf(mp_fp16_to_float(0xfc00)) && mp_fp16_to_float(0xfc00) < 0);
	ck_assert(isnan(mp_fp16_to_float(0x7e00)));
	ck_assert(signbit(mp_fp16_to_float(0x8000)));
}
END_TEST

/* The value of half h from its definition, by arithmetic rather than by
 * moving bits: (-1)^sign x 1.mant x 2^(exp-15), or 0.mant x 2^-14. */
static float fp16_by_definition(uint16_t h)
{
	int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
	float v = exp ? ldexpf((float)(1024 + mant), exp - 25) : ldexpf((float)mant, -24);

	return (h & 0x8000) ? -v : v;
}

START_TEST(test_fp16_every_value)
{
	/* every half, both signs: finite ones exactly, then inf and NaN */
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = mp_fp16_to_float((uint16_t)h);
		bool negative = h & 0x8000;

		if ((h & 0x7c00) != 0x7c00) {
			float want = fp16_by_definition((uint16_t)h);

			ck_assert_msg(memcmp(&f, &want, sizeof f) == 0, "0x%04x -> %a, want %a",
				      h, (double)f, (double)want);
		} else if (h & 0x3ff) {
			ck_assert_msg(isnan(f) && !signbit(f) == !negative, "0x%04x -> %a", h,
				      (double)f);
		} else {
			ck_assert_msg(isinf(f) && !signbit(f) == !negative, "0x%04x -> %a", h,
				      (double)f);
		}
	}
}
END_TEST

/* ---- demo blocks ------------------------------------------------------ */

START_TEST(test_fill_demo_deterministic)
{
	const struct mp_quant_type *types[] = {mp_quant_by_name("Q2_K"),
					       mp_quant_by_name("Q3_K"),
					       mp_quant_by_name("MXFP4")};

	for (int t = 0; t < 3; t++) {
		const struct mp_quant_type *q = types[t];
		size_t n = 37 * q->block_bytes; /* N: an odd number of blocks */
		unsigned char *a = malloc(2 * n), *b = malloc(2 * n), *c = malloc(2 * n);

		ck_assert(a && b && c);
		ck_assert_int_eq(mp_quant_fill_demo(q, 42, 0, a, 2 * n), 0);
		ck_assert_int_eq(mp_quant_fill_demo(q, 42, 0, b, 2 * n), 0);
		ck_assert_mem_eq(a, b, 2 * n);
		/* [0, 2N) == [0, N) then [N, 2N) */
		memset(b, 0, 2 * n);
		ck_assert_int_eq(mp_quant_fill_demo(q, 42, 0, b, n), 0);
		ck_assert_int_eq(mp_quant_fill_demo(q, 42, n, b + n, n), 0);
		ck_assert_msg(memcmp(a, b, 2 * n) == 0,
			      "%s: pieces differ from the whole", q->name);
		/* and in odd pieces too: one block, then the rest */
		memset(b, 0, 2 * n);
		ck_assert_int_eq(mp_quant_fill_demo(q, 42, 0, b, q->block_bytes), 0);
		ck_assert_int_eq(mp_quant_fill_demo(q, 42, q->block_bytes,
						    b + q->block_bytes,
						    2 * n - q->block_bytes),
				 0);
		ck_assert_mem_eq(a, b, 2 * n);
		/* another seed, or another position, gives other bytes */
		ck_assert_int_eq(mp_quant_fill_demo(q, 43, 0, c, 2 * n), 0);
		ck_assert(memcmp(a, c, 2 * n) != 0);
		ck_assert_int_eq(mp_quant_fill_demo(q, 42, n, c, n), 0);
		ck_assert(memcmp(a, c, n) != 0);
		free(a);
		free(b);
		free(c);
	}
}
END_TEST

static float le_half(const unsigned char *p)
{
	return mp_fp16_to_float((uint16_t)(p[0] | p[1] << 8));
}

START_TEST(test_fill_demo_well_formed)
{
	const struct mp_quant_type *q2 = mp_quant_by_name("Q2_K");
	const struct mp_quant_type *q3 = mp_quant_by_name("Q3_K");
	const size_t blocks = 64;
	unsigned char *buf = malloc(blocks * 110);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(mp_quant_fill_demo(q2, 7, 0, buf, blocks * 84), 0);
	for (size_t b = 0; b < blocks; b++) {
		float d = le_half(buf + b * 84 + 80), dmin = le_half(buf + b * 84 + 82);

		ck_assert_msg(isfinite(d) && d > 0, "Q2_K block %zu: d = %g", b,
			      (double)d);
		ck_assert_msg(isfinite(dmin) && dmin >= 0, "Q2_K block %zu: dmin = %g", b,
			      (double)dmin);
	}
	ck_assert_int_eq(mp_quant_fill_demo(q3, 7, 0, buf, blocks * 110), 0);
	for (size_t b = 0; b < blocks; b++) {
		float d = le_half(buf + b * 110 + 108);

		ck_assert_msg(isfinite(d) && d > 0, "Q3_K block %zu: d = %g", b,
			      (double)d);
	}
	/* MXFP4: every scale byte in 118..125, so that no weight is above 1.5
	 * (12 x 2^(125 - 128)); and the codes are not all alike */
	ck_assert_int_eq(mp_quant_fill_demo(mp_quant_by_name("MXFP4"), 7, 0, buf, blocks * 17), 0);
	for (size_t b = 0; b < blocks; b++) {
		unsigned e = buf[b * 17];

		ck_assert_msg(e >= 118 && e <= 125, "MXFP4 block %zu: e = %u", b, e);
		ck_assert_msg(memcmp(buf + b * 17 + 1, buf + (b + 1) % blocks * 17 + 1, 16) != 0,
			      "MXFP4 blocks %zu and %zu have the same codes", b, (b + 1) % blocks);
	}
	free(buf);
}
END_TEST

START_TEST(test_fill_demo_rejects)
{
	const struct mp_quant_type *q4 = mp_quant_by_name("Q4_0");
	const struct mp_quant_type *q2 = mp_quant_by_name("Q2_K");
	const struct mp_quant_type *q3 = mp_quant_by_name("Q3_K");
	unsigned char buf[1024];

	ck_assert_int_eq(mp_quant_fill_demo(q4, 1, 0, buf, 18 * 4), -1);
	ck_assert_int_eq(mp_quant_fill_demo(q2, 1, 0, buf, 85), -1);
	ck_assert_int_eq(mp_quant_fill_demo(q3, 1, 0, buf, 100), -1);
	ck_assert_int_eq(mp_quant_fill_demo(mp_quant_by_name("MXFP4"), 1, 0, buf, 18), -1);
	ck_assert_int_eq(mp_quant_fill_demo(mp_quant_by_name("MXFP4"), 1, 1, buf, 17), -1);
	ck_assert_int_eq(mp_quant_fill_demo(mp_quant_by_name("MXFP4"), 1, 17, buf, 17), 0);
}
END_TEST

/* ---- names ------------------------------------------------------------ */

START_TEST(test_role_names)
{
	ck_assert_str_eq(mp_role_name(MP_ROLE_UP), "up");
	ck_assert_str_eq(mp_role_name(MP_ROLE_GATE), "gate");
	ck_assert_str_eq(mp_role_name(MP_ROLE_DOWN), "down");
	ck_assert_ptr_null(mp_role_name(MP_ROLE_COUNT));
	ck_assert_ptr_null(mp_role_name((enum mp_role)-1));
	ck_assert_ptr_null(mp_role_name((enum mp_role)99));
	ck_assert_int_eq(MP_ROLE_UP, 0); /* physical order */
	ck_assert_int_eq(MP_ROLE_GATE, 1);
	ck_assert_int_eq(MP_ROLE_DOWN, 2);

	ck_assert_int_eq(mp_role_from_name("up"), MP_ROLE_UP);
	ck_assert_int_eq(mp_role_from_name("gate"), MP_ROLE_GATE);
	ck_assert_int_eq(mp_role_from_name("down"), MP_ROLE_DOWN);
	ck_assert_int_eq(mp_role_from_name("Up"), MP_ROLE_COUNT);
	ck_assert_int_eq(mp_role_from_name("upx"), MP_ROLE_COUNT);
	ck_assert_int_eq(mp_role_from_name("u"), MP_ROLE_COUNT);
	ck_assert_int_eq(mp_role_from_name(""), MP_ROLE_COUNT);
}
END_TEST

START_TEST(test_tensor_name)
{
	char buf[64];
	struct {
		char small[10];
		char canary[16];
	} s;
	int n;

	n = mp_tensor_name(buf, sizeof buf, 17, MP_ROLE_UP);
	ck_assert_str_eq(buf, "blk.17.ffn_up_exps.weight");
	ck_assert_int_eq(n, (int)strlen(buf));
	mp_tensor_name(buf, sizeof buf, 1, MP_ROLE_GATE);
	ck_assert_str_eq(buf, "blk.1.ffn_gate_exps.weight");
	mp_tensor_name(buf, sizeof buf, 92, MP_ROLE_DOWN);
	ck_assert_str_eq(buf, "blk.92.ffn_down_exps.weight");
	mp_tensor_name(buf, sizeof buf, 18446744073709551615u, MP_ROLE_DOWN);
	ck_assert_str_eq(buf, "blk.18446744073709551615.ffn_down_exps.weight");

	/* too small: NUL-terminated prefix, nothing written past it */
	memset(&s, 0x5a, sizeof s);
	n = mp_tensor_name(s.small, sizeof s.small, 17, MP_ROLE_UP);
	ck_assert_msg(n < 0 || (size_t)n >= sizeof s.small, "truncation not reported: %d",
		      n);
	ck_assert_uint_lt(strnlen(s.small, sizeof s.small), sizeof s.small);
	ck_assert_int_eq(strncmp(s.small, "blk.17.ffn_up", strlen(s.small)), 0);
	for (size_t i = 0; i < sizeof s.canary; i++)
		ck_assert_int_eq((unsigned char)s.canary[i], 0x5a);
}
END_TEST

/* ---- generation numbers ------------------------------------------------- */

/*
 * To reach the "a zero generation becomes 1" branch, which no real digest
 * will hit, this binary interposes EVP_Digest, through which mp_sha256_buf
 * (and so mp_object_generation) hashes.  The forced prefix is only ever set inside
 * one forked test.
 */
static struct {
	int active;
	unsigned char prefix[8];
	unsigned long calls;
} forced_digest;

int EVP_Digest(const void *data, size_t count, unsigned char *md, unsigned int *size,
	       const EVP_MD *type, ENGINE *impl)
{
	typedef int (*digest_fn)(const void *, size_t, unsigned char *, unsigned int *,
				 const EVP_MD *, ENGINE *);
	digest_fn real = (digest_fn)dlsym(RTLD_NEXT, "EVP_Digest");
	int rc;

	ck_assert_ptr_nonnull(real);
	rc = real(data, count, md, size, type, impl);
	if (forced_digest.active && rc == 1) {
		memcpy(md, forced_digest.prefix, sizeof forced_digest.prefix);
		forced_digest.calls++;
	}
	return rc;
}

/* First 8 bytes, little-endian, of SHA-256("<hex>:<layer>:<expert>"). */
static uint64_t reference_generation(const char *hex, uint64_t layer, uint64_t expert)
{
	char text[160];
	unsigned char d[EVP_MAX_MD_SIZE];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int dlen = 0;
	uint64_t g = 0;
	int n = snprintf(text, sizeof text, "%s:%llu:%llu", hex,
			 (unsigned long long)layer, (unsigned long long)expert);

	/* the streaming API, so the interposed one-shot is not involved */
	ck_assert_ptr_nonnull(ctx);
	ck_assert(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1);
	ck_assert(EVP_DigestUpdate(ctx, text, (size_t)n) == 1);
	ck_assert(EVP_DigestFinal_ex(ctx, d, &dlen) == 1);
	EVP_MD_CTX_free(ctx);
	for (int i = 7; i >= 0; i--)
		g = g << 8 | d[i];
	return g ? g : 1;
}

START_TEST(test_generation_matches_reference)
{
	static const char *hexes[] = {
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"0000000000000000000000000000000000000000000000000000000000000000",
	};
	static const uint64_t pairs[][2] = {
		{1, 0}, {1, 1}, {17, 3}, {92, 383}, {45, 65535}};

	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
			ck_assert_uint_eq(
				mp_object_generation(hexes[h], pairs[i][0], pairs[i][1]),
				reference_generation(hexes[h], pairs[i][0], pairs[i][1]));
	/* the ids are decimal text: (1, 23) and (12, 3) must differ */
	ck_assert_uint_ne(mp_object_generation(hexes[0], 1, 23), mp_object_generation(hexes[0], 12, 3));
	/* the digest is part of the input */
	ck_assert_uint_ne(mp_object_generation(hexes[0], 5, 5), mp_object_generation(hexes[1], 5, 5));
}
END_TEST

START_TEST(test_generation_zero_becomes_one)
{
	static const char hex[] =
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

	forced_digest.active = 1;
	memset(forced_digest.prefix, 0, 8);
	ck_assert_uint_eq(mp_object_generation(hex, 1, 0), 1);
	ck_assert_msg(forced_digest.calls > 0,
		      "mp_object_generation no longer hashes through EVP_Digest: the zero "
		      "branch is untested, update this test");
	/* the bytes are read little-endian */
	memcpy(forced_digest.prefix, "\x02\x00\x00\x00\x00\x00\x00\x00", 8);
	ck_assert_uint_eq(mp_object_generation(hex, 1, 0), 2);
	memcpy(forced_digest.prefix, "\x00\x00\x00\x00\x00\x00\x00\x80", 8);
	ck_assert_uint_eq(mp_object_generation(hex, 1, 0), UINT64_C(1) << 63);
	memcpy(forced_digest.prefix, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	ck_assert_uint_eq(mp_object_generation(hex, 1, 0), UINT64_C(0x0807060504030201));
	forced_digest.active = 0;
}
END_TEST

/*
 * mp_json_dump_with_path: only expert_pack.path changes, whatever other
 * keys hold: here 1,000 copies of every marker it could pick (which made
 * it give up, "out of memory"), markers with leading zeros and huge
 * numbers, and a marker without a number.
 */
START_TEST(test_json_dump_with_path_markers)
{
	json_t *root = json_object(), *ep = json_object(), *junk = json_array();
	char name[64], *text, *p;
	size_t count = 0;

	for (unsigned i = 0; i < 1000; i++) {
		snprintf(name, sizeof name, "moepack-path-marker-%u", i);
		json_array_append_new(junk, json_string(name));
	}
	json_array_append_new(junk, json_string("moepack-path-marker-0001"));
	json_array_append_new(junk, json_string("moepack-path-marker-99999999999999999999999"));
	json_array_append_new(junk, json_string("moepack-path-marker-"));
	json_object_set_new(root, "unknown", junk);
	json_object_set_new(ep, "size", json_integer(1));
	json_object_set_new(root, "expert_pack", ep);
	text = mp_json_dump_with_path(root, ep, "path", "/srv/a\xff" "b.pack",
				      JSON_INDENT(2) | JSON_SORT_KEYS);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "\"path\": \"/srv/a\\udcffb.pack\""));
	for (p = strstr(text, "moepack-path-marker-"); p; p = strstr(p + 1, "moepack-path-marker-"))
		count++;
	ck_assert_uint_eq(count, 1003); /* the other keys' text, unchanged */
	ck_assert_ptr_nonnull(strstr(text, "\"moepack-path-marker-999\""));
	ck_assert_ptr_nonnull(strstr(text, "\"moepack-path-marker-0001\""));
	free(text);
	json_decref(root);
}
END_TEST

/*
 * mp_json_quote: what Python's json.dumps(ensure_ascii=False) writes for a
 * file name decoded with surrogateescape.
 */
START_TEST(test_json_quote)
{
	static const struct {
		const char *in;
		size_t n;
		const char *out;
	} cases[] = {
		{"/srv/pack", 9, "\"/srv/pack\""},
		{"a\"b\\c", 5, "\"a\\\"b\\\\c\""},
		{"\b\t\n\f\r\001\037\177", 8, "\"\\b\\t\\n\\f\\r\\u0001\\u001f\177\""},
		{"caf\xc3\xa9", 5, "\"caf\xc3\xa9\""},          /* UTF-8 as it is */
		{"dir\xff/p", 6, "\"dir\\udcff/p\""},            /* not UTF-8 */
		{"\xc3(", 2, "\"\\udcc3(\""},                    /* cut sequence */
		{"\xed\xa0\x80", 3, "\"\\udced\\udca0\\udc80\""}, /* encoded surrogate */
		{"\xc0\xaf", 2, "\"\\udcc0\\udcaf\""},           /* overlong */
		{"a\0b", 3, "\"a\\u0000b\""},
		{"", 0, "\"\""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t len = 0;
		char *q = mp_json_quote(cases[i].in, cases[i].n, &len);

		ck_assert_ptr_nonnull(q);
		ck_assert_msg(strcmp(q, cases[i].out) == 0, "case %zu: %s, expected %s", i, q,
			      cases[i].out);
		ck_assert_uint_eq(len, strlen(cases[i].out));
		free(q);
	}
}
END_TEST

/* mp_text_escape: printable UTF-8 passes, everything a terminal acts on does not. */
START_TEST(test_scan_u64)
{
	uint64_t v = 7;
	bool over = true;
	const char *s;

	s = mp_scan_u64("0", 10, &v, &over);
	ck_assert(*s == '\0' && v == 0 && !over);
	s = mp_scan_u64("18446744073709551615", 10, &v, &over);
	ck_assert(*s == '\0' && !over);
	ck_assert_uint_eq(v, UINT64_MAX);
	s = mp_scan_u64("18446744073709551616x", 10, &v, &over);
	ck_assert(over && *s == 'x');
	ck_assert_uint_eq(v, UINT64_MAX);
	s = mp_scan_u64("99999999999999999999999", 10, &v, &over);
	ck_assert(over && *s == '\0');
	s = mp_scan_u64("0755", 8, &v, &over);
	ck_assert(*s == '\0' && !over);
	ck_assert_uint_eq(v, 0755);
	/* 8 and 9 are not octal digits: the scan stops there */
	s = mp_scan_u64("0758", 8, &v, &over);
	ck_assert_str_eq(s, "8");
	ck_assert_uint_eq(v, 075);
	s = mp_scan_u64("12K", 10, &v, &over);
	ck_assert_str_eq(s, "K");
	ck_assert_uint_eq(v, 12);
	s = mp_scan_u64("-1", 10, &v, &over);
	ck_assert_str_eq(s, "-1");
	ck_assert_uint_eq(v, 0);
	s = mp_scan_u64(" 1", 10, &v, &over);
	ck_assert_str_eq(s, " 1");
}
END_TEST

START_TEST(test_text_escape)
{
	static const struct {
		const char *in;
		size_t n;
		const char *out;
	} cases[] = {
		{"plain", 5, "plain"},
		{"caf\xc3\xa9", 5, "caf\xc3\xa9"},               /* valid UTF-8 kept */
		{"\x1b[2J", 4, "\\x1b[2J"},                      /* ESC */
		{"a\nb\rc\x7f", 6, "a\\x0ab\\x0dc\\x7f"},        /* C0 and DEL */
		{"\xc2\x9b" "31m", 5, "\\xc2\\x9b31m"},          /* C1 CSI */
		{"\xff\xfe", 2, "\\xff\\xfe"},                   /* not UTF-8 */
		{"\xc0\xaf", 2, "\\xc0\\xaf"},                   /* overlong '/' */
		{"\xed\xa0\x80", 3, "\\xed\\xa0\\x80"},          /* a surrogate */
		{"\xf4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80"}, /* past U+10FFFF */
		{"\xe2\x82", 2, "\\xe2\\x82"},                   /* cut sequence */
		{"a\0b", 3, "a\\x00b"},
	};
	char buf[64];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mp_text_escape(buf, sizeof buf, cases[i].in, cases[i].n, 0);
		ck_assert_msg(strcmp(buf, cases[i].out) == 0, "case %zu: got %s", i, buf);
		ck_assert(mp_text_is_utf8(buf, strlen(buf)));
	}
	/* a backslash is escaped, so that escaped text maps back to one name:
	 * a<ESC> and a literal a\x1b print apart */
	mp_text_escape(buf, sizeof buf, "a\\b", 3, 0);
	ck_assert_str_eq(buf, "a\\\\b");
	mp_text_escape(buf, sizeof buf, "a\033", 2, 0);
	ck_assert_str_eq(buf, "a\\x1b");
	mp_text_escape(buf, sizeof buf, "a\\x1b", 5, 0);
	ck_assert_str_eq(buf, "a\\\\x1b");
	/* text escaped before keeps its escapes */
	mp_text_escape(buf, sizeof buf, "a\\x1b", 5, MP_TEXT_ESCAPED);
	ck_assert_str_eq(buf, "a\\x1b");
	{
		struct mp_error e;

		mp_fail(&e, MP_E_USAGE, "name %s", "a\\x1b");
		ck_assert_str_eq(e.msg, "name a\\\\x1b");
		mp_fail(&e, MP_E_USAGE, "name %s", "a\033");
		ck_assert_str_eq(e.msg, "name a\\x1b");
	}
}
END_TEST

/* Output that does not fit ends in "..." and never splits a character. */
START_TEST(test_text_escape_truncates)
{
	char in[200], buf[16];

	for (size_t i = 0; i < sizeof in; i += 2)
		memcpy(in + i, "\xc3\xa9", 2);
	for (size_t len = 1; len <= sizeof buf; len++) {
		size_t n = mp_text_escape(buf, len, in, sizeof in, 0);
		ck_assert_uint_lt(n, len);
		ck_assert_uint_eq(strlen(buf), n);
		ck_assert(mp_text_is_utf8(buf, n));
	}
	ck_assert_str_eq(buf, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9...");
}
END_TEST

/* Text longer than the sanitizer's own buffer is cut, never left raw. */
START_TEST(test_text_sanitize_long)
{
	static char buf[8192];

	memset(buf, 'a', sizeof buf - 1);
	buf[5000] = '\033';
	buf[10] = '\r';
	mp_text_sanitize(buf, sizeof buf, MP_TEXT_ESCAPED);
	ck_assert_ptr_null(strchr(buf, '\033'));
	ck_assert_ptr_null(strchr(buf, '\r'));
	ck_assert(strstr(buf, "\\x0d") != NULL);
	ck_assert(mp_text_is_utf8(buf, strlen(buf)));
}
END_TEST

/* mp_fail keeps every message one line of valid UTF-8, whatever it quotes. */
START_TEST(test_mp_fail_escapes)
{
	struct mp_error e;

	mp_fail(&e, MP_E_PACK_IO, "cannot read pack %s: x", "/tmp/\x1b[2J\n\xffOK");
	ck_assert_str_eq(e.msg, "cannot read pack /tmp/\\x1b[2J\\x0a\\xffOK: x");
}
END_TEST

/* FIFOs, directories and missing files are refused at once, never waited on. */
/* Header and entry: bytes -> struct -> bytes gives the same bytes. */
START_TEST(test_header_entry_round_trip)
{
	unsigned char raw[MP_HEADER_SIZE], again[MP_HEADER_SIZE];
	unsigned char eraw[MP_ENTRY_SIZE], eagain[MP_ENTRY_SIZE];
	struct mp_header h;
	struct mp_entry e;

	mp_header_encode(raw, 5520, 843776);
	ck_assert_mem_eq(raw, "GGMLMOEPACKv1\0\0\0", MP_MAGIC_LEN);
	ck_assert_uint_eq(raw[MP_HEADER_SIZE_AT], MP_HEADER_SIZE);
	mp_header_decode(raw, &h);
	ck_assert_mem_eq(h.magic, MP_MAGIC, sizeof MP_MAGIC);
	ck_assert_uint_eq(h.version, MP_VERSION);
	ck_assert_uint_eq(h.header_size, MP_HEADER_SIZE);
	ck_assert_uint_eq(h.index_count, 5520);
	ck_assert_uint_eq(h.data_start, 843776);
	mp_header_encode(again, h.index_count, h.data_start);
	ck_assert_mem_eq(again, raw, MP_HEADER_SIZE);
	/* little-endian on disk */
	ck_assert_uint_eq(raw[MP_HEADER_COUNT_AT], 5520 & 0xff);
	ck_assert_uint_eq(raw[MP_HEADER_COUNT_AT + 1], 5520 >> 8);

	mp_entry_encode(eraw, "blk.17.ffn_up_exps.weight", 895, 1ull << 40, 1548288);
	mp_entry_decode(eraw, &e);
	ck_assert_str_eq((const char *)e.name, "blk.17.ffn_up_exps.weight");
	ck_assert_int_eq(e.expert, 895);
	ck_assert_uint_eq(e.reserved, 0);
	ck_assert_uint_eq(e.offset, 1ull << 40);
	ck_assert_uint_eq(e.nbytes, 1548288);
	mp_entry_encode(eagain, (const char *)e.name, e.expert, e.offset, e.nbytes);
	ck_assert_mem_eq(eagain, eraw, MP_ENTRY_SIZE);
}
END_TEST

START_TEST(test_open_regular)
{
	char dir[] = "/tmp/mp-open-XXXXXX", path[64];
	struct mp_error e;
	struct stat st;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(mp_open_regular(path, "manifest", MP_E_MANIFEST_IO, &fd, &st, &e),
			 MP_E_MANIFEST_IO);
	ck_assert_int_eq(fd, -1);
	ck_assert_msg(strstr(e.msg, "not a regular file (a FIFO)"), "%s", e.msg);
	ck_assert(strncmp(e.msg, "cannot read manifest ", 21) == 0);
	unlink(path);

	ck_assert_int_eq(mp_open_regular(dir, "pack", MP_E_PACK_IO, &fd, &st, &e),
			 MP_E_PACK_IO);
	ck_assert_msg(strstr(e.msg, "is a directory"), "%s", e.msg);
	ck_assert_int_eq(mp_open_regular(path, "pack", MP_E_PACK_IO, &fd, &st, &e),
			 MP_E_PACK_IO);
	ck_assert_msg(strstr(e.msg, "No such file"), "%s", e.msg);
	ck_assert_int_eq(mp_open_regular("/dev/null", "config file", MP_E_CONFIG_IO, &fd, &st,
					 &e),
			 MP_E_CONFIG_IO);
	ck_assert_msg(strstr(e.msg, "(a character device)"), "%s", e.msg);

	snprintf(path, sizeof path, "%s/file", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(mp_open_regular(path, "pack", MP_E_PACK_IO, &fd, &st, &e), MP_OK);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* A hole's end: the next data, the file's size, or start itself where
 * there is data, nothing follows or the file system cannot say. */
START_TEST(test_file_hole_end)
{
	char dir[] = "/tmp/mp-hole-XXXXXX", path[64];
	const uint64_t mib = 1u << 20;
	unsigned char block[4096];
	int fd;

	memset(block, 0x5a, sizeof block);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/sparse", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	/* data at 0 and at 1 MiB, holes after each, 3 MiB in all */
	ck_assert_int_eq(pwrite(fd, block, sizeof block, 0), (ssize_t)sizeof block);
	ck_assert_int_eq(pwrite(fd, block, sizeof block, (off_t)mib), (ssize_t)sizeof block);
	ck_assert_int_eq(ftruncate(fd, (off_t)(3 * mib)), 0);
	ck_assert_uint_eq(mp_file_hole_end(fd, 0), 0);
	ck_assert_uint_eq(mp_file_hole_end(fd, mib + 100), mib + 100);
	ck_assert_uint_eq(mp_file_hole_end(fd, 3 * mib), 3 * mib);
	ck_assert_uint_eq(mp_file_hole_end(fd, 5 * mib), 5 * mib);
	if (mp_file_hole_end(fd, 512 * 1024) != 512 * 1024) { /* holes are reported */
		ck_assert_uint_eq(mp_file_hole_end(fd, 512 * 1024), mib);
		ck_assert_uint_eq(mp_file_hole_end(fd, 2 * mib), 3 * mib);
	} else {
		fprintf(stderr, "check_core: %s reports no holes\n", path);
	}
	close(fd);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* The one full read: all bytes, or the errno, or where a short file ends. */
START_TEST(test_pread_full)
{
	char dir[] = "/tmp/mp-pread-XXXXXX", path[64];
	unsigned char data[100], buf[100];
	struct mp_error e;
	struct stat st;
	size_t done;
	int fd;

	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 7);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/short", dir);
	fx_write_file(path, data, sizeof data);
	ck_assert_int_eq(mp_open_regular(path, "pack", MP_E_PACK_IO, &fd, &st, &e), MP_OK);

	ck_assert_int_eq(mp_pread_all(fd, buf, 60, 40, &done), 0);
	ck_assert_uint_eq(done, 60);
	ck_assert_mem_eq(buf, data + 40, 60);
	ck_assert_int_eq(mp_pread_full(fd, buf, 0, 500, "pack", path, MP_E_PACK_IO, &e), MP_OK);

	/* 30 bytes asked at byte 90: ten read, then the end of the file */
	ck_assert_int_eq(mp_pread_all(fd, buf, 30, 90, &done), MP_READ_EOF);
	ck_assert_uint_eq(done, 10);
	ck_assert_mem_eq(buf, data + 90, 10);
	ck_assert_int_eq(mp_pread_full(fd, buf, 30, 90, "seal", path, MP_E_SEAL_IO, &e),
			 MP_E_SEAL_IO);
	ck_assert_int_eq(e.code, MP_E_SEAL_IO);
	ck_assert_msg(strncmp(e.msg, "cannot read seal /tmp/mp-pread-", 31) == 0, "%s", e.msg);
	ck_assert_msg(strstr(e.msg, "/short at byte 100: the file is shorter (ends before "
			      "byte 120)"), "%s", e.msg);
	/* what alone names the file when path is NULL */
	ck_assert_int_eq(mp_pread_full(fd, buf, 1, 100, "pack x", NULL, MP_E_PACK_IO, &e),
			 MP_E_PACK_IO);
	ck_assert_str_eq(e.msg, "cannot read pack x at byte 100: the file is shorter "
				"(ends before byte 101)");
	close(fd);

	/* the write side: all bytes at their place, or the errno */
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mp_pwrite_all(fd, "xyz", 3, 98, &done), 0);
	ck_assert_uint_eq(done, 3);
	close(fd);
	ck_assert_int_eq(mp_pwrite_all(fd, "x", 1, 0, NULL), EBADF);
	ck_assert_int_eq(mp_pwrite_full(fd, "x", 1, 7, path, &e), MP_E_PACK_IO);
	ck_assert_msg(strstr(e.msg, "at byte 7: Bad file descriptor"), "%s", e.msg);
	ck_assert_str_eq(mp_write_failure(MP_WRITE_NONE), "no space");
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(mp_pread_all(fd, buf, 10, 95, &done), MP_READ_EOF);
	ck_assert_uint_eq(done, 6);
	ck_assert_mem_eq(buf + 3, "xyz", 3);
	close(fd);

	/* a read error: its errno, and its text in the message */
	ck_assert_int_eq(mp_pread_all(fd, buf, 1, 0, NULL), EBADF);
	ck_assert_int_eq(mp_pread_full(fd, buf, 1, 0, "pack", path, MP_E_PACK_IO, &e),
			 MP_E_PACK_IO);
	ck_assert_msg(strstr(e.msg, "at byte 0: Bad file descriptor"), "%s", e.msg);
	unlink(path);
	rmdir(dir);
}
END_TEST

static Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc;

	tc = tcase_create("errors");
	tcase_add_test(tc, test_err_names_distinct);
	tcase_add_test(tc, test_err_out_of_range);
	tcase_add_test(tc, test_err_classes);
	tcase_add_test(tc, test_err_exit_status);
	tcase_add_test(tc, test_err_summaries);
	tcase_add_test(tc, test_mp_fail_formats);
	tcase_add_test(tc, test_mp_fail_truncates);
	suite_add_tcase(s, tc);

	tc = tcase_create("digest");
	tcase_add_test(tc, test_sha256_vectors);
	tcase_add_test(tc, test_sha256_incremental);
	tcase_add_test(tc, test_sha256_hex_check);
	tcase_add_test(tc, test_sha256_fd_matches_buf);
	tcase_add_test(tc, test_sha256_fd_short_file);
	tcase_add_test(tc, test_readahead_ring);
	tcase_add_test(tc, test_ring_with_a_writer);
	tcase_add_test(tc, test_ring_stop_asked);
	suite_add_tcase(s, tc);

	tc = tcase_create("quant");
	tcase_add_test(tc, test_quant_table);
	tcase_add_test(tc, test_quant_bytes);
	tcase_add_test(tc, test_fp16_known_values);
	tcase_add_test(tc, test_fp16_every_value);
	tcase_add_test(tc, test_fill_demo_deterministic);
	tcase_add_test(tc, test_fill_demo_well_formed);
	tcase_add_test(tc, test_fill_demo_rejects);
	suite_add_tcase(s, tc);

	tc = tcase_create("names");
	tcase_add_test(tc, test_role_names);
	tcase_add_test(tc, test_tensor_name);
	tcase_add_test(tc, test_generation_matches_reference);
	tcase_add_test(tc, test_generation_zero_becomes_one);
	suite_add_tcase(s, tc);

	tc = tcase_create("text");
	tcase_add_test(tc, test_text_escape);
	tcase_add_test(tc, test_scan_u64);
	tcase_add_test(tc, test_json_quote);
	tcase_add_test(tc, test_json_dump_with_path_markers);
	tcase_add_test(tc, test_text_escape_truncates);
	tcase_add_test(tc, test_text_sanitize_long);
	tcase_add_test(tc, test_mp_fail_escapes);
	tcase_add_test(tc, test_header_entry_round_trip);
	tcase_add_test(tc, test_open_regular);
	tcase_add_test(tc, test_pread_full);
	tcase_add_test(tc, test_file_hole_end);
	suite_add_tcase(s, tc);
	return s;
}

const struct fx_suite_def fx_suite = {.make = core_suite};
