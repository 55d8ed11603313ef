/*
 * check_fetch.c - moepack fetch's pure parts: sources, S3 credentials and
 * the range planner; and the hashing queue's writes, direct and buffered.
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/digest.h"
#include "fetch/hashq.h"

#include "fetch/plan.h"
#include "fetch/s3cred.h"
#include "fetch/source.h"
#include "fixture.h"

static struct mp_fetch_source src;
static struct mp_error err;

static enum mp_err parse(const char *t, const struct mp_fetch_s3_config *s3)
{
	return mp_fetch_source_parse(t, s3, &src, &err);
}

START_TEST(test_source_http_file)
{
	char buf[MP_FETCH_URL_MAX];

	ck_assert_int_eq(parse("https://h.example/p/k3.pack", NULL), MP_OK);
	ck_assert_int_eq(src.kind, MP_FETCH_HTTPS);
	ck_assert(src.tls);
	ck_assert_str_eq(src.url, "https://h.example/p/k3.pack");
	ck_assert(mp_fetch_source_beside(&src, ".seal", buf, sizeof buf));
	ck_assert_str_eq(buf, "https://h.example/p/k3.pack.seal");
	ck_assert_int_eq(parse("http://127.0.0.1:8080/a.pack?x=1", NULL), MP_OK);
	ck_assert(!src.tls);
	ck_assert(mp_fetch_source_beside(&src, ".sig", buf, sizeof buf));
	ck_assert_str_eq(buf, "http://127.0.0.1:8080/a.pack.sig?x=1");
	ck_assert_int_eq(parse("file:///srv/a.pack", NULL), MP_OK);
	ck_assert_int_eq(src.kind, MP_FETCH_FILE);
	ck_assert_int_eq(parse("file://localhost/srv/a.pack", NULL), MP_OK);
	ck_assert_str_eq(src.url, "file:///srv/a.pack");
}
END_TEST

START_TEST(test_source_refusals)
{
	static const char *const bad[] = {
		"ftp://h/a.pack", "a.pack", "http://", "http:///a.pack", "https://h/",
		"https://h", "file://otherhost/a.pack", "file:///", "s3://bucket",
		"s3://bucket/", "s3://B_A/key", "s3://ab/key", "s3://-abc/key",
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(parse(bad[i], NULL) == MP_E_USAGE, "%s accepted", bad[i]);
		ck_assert_msg(strstr(err.msg, "source") != NULL, "%s: %s", bad[i], err.msg);
	}
}
END_TEST

START_TEST(test_source_s3)
{
	struct mp_fetch_s3_config c = {.endpoint = "http://127.0.0.1:7480/", .region = "eu-1"};

	ck_assert_int_eq(parse("s3://packs/k3/k3.pack", &c), MP_OK);
	ck_assert_int_eq(src.kind, MP_FETCH_S3);
	ck_assert_str_eq(src.url, "http://127.0.0.1:7480/packs/k3/k3.pack");
	ck_assert_str_eq(src.region, "eu-1");
	ck_assert_str_eq(src.bucket, "packs");
	ck_assert(!src.tls);
	c.virtual_hosted = true;
	ck_assert_int_eq(parse("s3://packs/k3.pack", &c), MP_OK);
	ck_assert_str_eq(src.url, "http://packs.127.0.0.1:7480/k3.pack");
	ck_assert_int_eq(parse("s3://my.bucket/k3.pack", NULL), MP_OK);
	ck_assert_str_eq(src.url, "https://s3.us-east-1.amazonaws.com/my.bucket/k3.pack");
	ck_assert(src.tls);
	c = (struct mp_fetch_s3_config){.endpoint = "ftp://x"};
	ck_assert_int_eq(parse("s3://packs/k3.pack", &c), MP_E_USAGE);
}
END_TEST

/* The endpoint check both programs make of their option (source.h), and
 * the option over AWS_ENDPOINT_URL. */
START_TEST(test_s3_endpoint)
{
	static const char *const good[] = {
		"http://127.0.0.1:7480", "https://s3.example.net/", "HTTPS://h/prefix", "",
	};
	static const char *const bad[] = {
		"ftp://x", "127.0.0.1:7480", "http://", "http:///", "://h", "s3://h",
	};
	struct mp_fetch_s3_config c;

	ck_assert_ptr_null(mp_fetch_s3_endpoint_problem(NULL));
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(!mp_fetch_s3_endpoint_problem(good[i]), "%s refused", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *why = mp_fetch_s3_endpoint_problem(bad[i]);
		struct mp_fetch_s3_config e = {.endpoint = bad[i]};

		ck_assert_msg(why && strncmp(why, "the S3 endpoint", 15) == 0, "%s taken", bad[i]);
		/* the source's parse refuses it with the same words */
		ck_assert_int_eq(parse("s3://packs/k3.pack", &e), MP_E_USAGE);
		ck_assert_msg(strstr(err.msg, why) != NULL, "%s: %s", bad[i], err.msg);
	}
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
	ck_assert_int_eq(setenv("AWS_ENDPOINT_URL", "http://env.example:1", 1), 0);
	c = mp_fetch_s3_config_from_env(NULL, false);
	ck_assert_str_eq(c.endpoint, "http://env.example:1");
	ck_assert(!c.virtual_hosted);
	c = mp_fetch_s3_config_from_env("http://opt.example:2", true);
	ck_assert_str_eq(c.endpoint, "http://opt.example:2");
	ck_assert(c.virtual_hosted);
	ck_assert_int_eq(parse("s3://packs/k3.pack", &c), MP_OK);
	ck_assert_str_eq(src.url, "http://packs.opt.example:2/k3.pack");
	/* an empty option: AWS's own, whatever the variable says */
	c = mp_fetch_s3_config_from_env("", false);
	ck_assert_int_eq(parse("s3://packs/k3.pack", &c), MP_OK);
	ck_assert_str_eq(src.url, "https://s3.us-east-1.amazonaws.com/packs/k3.pack");
	unsetenv("AWS_ENDPOINT_URL");
}
END_TEST

START_TEST(test_s3_credentials)
{
	static const char text[] = "# comment\n[default]\naws_access_key_id = AK1\n"
				   "aws_secret_access_key=S1\n\n[ other ]\r\n"
				   "aws_access_key_id=AK2\r\naws_secret_access_key = S2 \r\n"
				   "aws_session_token = T2\r\n[nokey]\naws_access_key_id=x\n";
	struct mp_fetch_s3_creds c;

	ck_assert(mp_fetch_s3_creds_parse(text, strlen(text), NULL, &c));
	ck_assert_str_eq(c.key_id, "AK1");
	ck_assert_str_eq(c.secret, "S1");
	ck_assert_str_eq(c.token, "");
	ck_assert(mp_fetch_s3_creds_parse(text, strlen(text), "other", &c));
	ck_assert_str_eq(c.key_id, "AK2");
	ck_assert_str_eq(c.secret, "S2");
	ck_assert_str_eq(c.token, "T2");
	ck_assert(!mp_fetch_s3_creds_parse(text, strlen(text), "nokey", &c));
	ck_assert(!mp_fetch_s3_creds_parse(text, strlen(text), "absent", &c));
}
END_TEST

/* Ten chunks: a head of two 1 MiB chunks, then uneven ones. */
static const uint64_t MiB = 1u << 20;

static void make_plan(struct mp_fetch_plan *p, uint64_t max)
{
	uint64_t b[11] = {0, MiB, 2 * MiB};

	for (int i = 3; i <= 10; i++)
		b[i] = b[i - 1] + (i % 2 ? MiB : MiB / 2);
	ck_assert_int_eq(mp_fetch_plan_init_bounds(p, b, 10, max, &err), MP_OK);
}

START_TEST(test_plan_runs)
{
	struct mp_fetch_plan p;
	struct mp_fetch_run r;

	make_plan(&p, 3 * MiB);
	ck_assert(mp_fetch_plan_next(&p, &r));
	ck_assert_uint_eq(r.first, 0);
	ck_assert_uint_eq(r.count, 3);     /* 1 + 1 + 1 MiB */
	ck_assert_uint_eq(r.offset, 0);
	ck_assert_uint_eq(r.len, 3 * MiB);
	ck_assert(mp_fetch_plan_next(&p, &r));
	ck_assert_uint_eq(r.first, 3);
	ck_assert_uint_eq(r.offset, 3 * MiB);
	ck_assert_uint_le(r.len, 3 * MiB);
	ck_assert_uint_eq(r.count, 4);     /* .5 + 1 + .5 + 1 */
	ck_assert(mp_fetch_plan_next(&p, &r));
	ck_assert_uint_eq(r.first, 7);
	ck_assert_uint_eq(r.first + r.count, 10);
	ck_assert_uint_eq(r.offset + r.len, p.bound[10]);
	ck_assert(!mp_fetch_plan_next(&p, &r)); /* all in flight */
	for (uint64_t c = 0; c < 10; c++)
		if (c != 4)
			mp_fetch_plan_held(&p, c);
	ck_assert(!mp_fetch_plan_done(&p));
	mp_fetch_plan_missing(&p, 4);  /* a chunk that failed: asked for alone */
	ck_assert(mp_fetch_plan_next(&p, &r));
	ck_assert_uint_eq(r.first, 4);
	ck_assert_uint_eq(r.count, 1);
	ck_assert_uint_eq(r.len, MiB);
	mp_fetch_plan_held(&p, 4);
	mp_fetch_plan_held(&p, 4);     /* twice counts once */
	ck_assert(mp_fetch_plan_done(&p));
	ck_assert_uint_eq(p.held_bytes, p.bound[10]);
	mp_fetch_plan_free(&p);
}
END_TEST

START_TEST(test_plan_gaps_and_long_chunks)
{
	struct mp_fetch_plan p;
	struct mp_fetch_run r;

	make_plan(&p, MiB / 4); /* shorter than any chunk: one chunk a run */
	mp_fetch_plan_held(&p, 1);
	for (uint64_t c = 0; c < 10; c++) {
		if (c == 1)
			continue;
		ck_assert(mp_fetch_plan_next(&p, &r));
		ck_assert_uint_eq(r.first, c);
		ck_assert_uint_eq(r.count, 1);
	}
	ck_assert(!mp_fetch_plan_next(&p, &r));
	mp_fetch_plan_free(&p);
	make_plan(&p, 64 * MiB);   /* one run, broken only by a held chunk */
	mp_fetch_plan_held(&p, 5);
	ck_assert(mp_fetch_plan_next(&p, &r));
	ck_assert_uint_eq(r.first, 0);
	ck_assert_uint_eq(r.count, 5);
	ck_assert(mp_fetch_plan_next(&p, &r));
	ck_assert_uint_eq(r.first, 6);
	ck_assert_uint_eq(r.count, 4);
	mp_fetch_plan_free(&p);
}
END_TEST

/* A run from a chosen chunk (the hot ones first), and a held chunk lost. */
START_TEST(test_plan_run_from_and_lost)
{
	struct mp_fetch_plan p;
	struct mp_fetch_run r;

	make_plan(&p, 3 * MiB);
	mp_fetch_plan_held(&p, 8);
	ck_assert(mp_fetch_plan_run_from(&p, 6, &r));
	ck_assert_uint_eq(r.first, 6);
	ck_assert_uint_eq(r.count, 2);     /* stops at the held chunk 8 */
	ck_assert(!mp_fetch_plan_run_from(&p, 6, &r)); /* in flight now */
	ck_assert(!mp_fetch_plan_run_from(&p, 8, &r)); /* held */
	ck_assert(!mp_fetch_plan_run_from(&p, 10, &r)); /* past the end */
	/* the file-order search has not moved: it starts at chunk 0 */
	ck_assert(mp_fetch_plan_next(&p, &r));
	ck_assert_uint_eq(r.first, 0);
	ck_assert(mp_fetch_plan_next(&p, &r));
	ck_assert_uint_eq(r.first, 3);
	ck_assert_uint_eq(r.first + r.count, 6);  /* up to the run taken */
	ck_assert(mp_fetch_plan_next(&p, &r));
	ck_assert_uint_eq(r.first, 9);
	ck_assert(!mp_fetch_plan_next(&p, &r));
	for (uint64_t c = 0; c < 10; c++)
		mp_fetch_plan_held(&p, c);
	ck_assert(mp_fetch_plan_done(&p));
	mp_fetch_plan_lost(&p, 2);
	mp_fetch_plan_lost(&p, 2);     /* twice counts once */
	mp_fetch_plan_missing(&p, 3);  /* held stays held for a failed run */
	ck_assert(!mp_fetch_plan_done(&p));
	ck_assert_uint_eq(p.held, 9);
	ck_assert_uint_eq(p.held_bytes, p.bound[10] - MiB);
	ck_assert(mp_fetch_plan_next(&p, &r));
	ck_assert_uint_eq(r.first, 2);
	ck_assert_uint_eq(r.count, 1);
	mp_fetch_plan_free(&p);
}
END_TEST

START_TEST(test_plan_refusals)
{
	struct mp_fetch_plan p;
	uint64_t from1[] = {1, 2}, empty[] = {0, 5, 5};

	ck_assert_int_eq(mp_fetch_plan_init_bounds(&p, from1, 1, MiB, &err), MP_E_USAGE);
	ck_assert_int_eq(mp_fetch_plan_init_bounds(&p, empty, 2, MiB, &err), MP_E_USAGE);
	ck_assert(strstr(err.msg, "chunk 1") != NULL);
}
END_TEST

/*
 * Three chunks, one job: a page-aligned chunk with a 100-byte tail (its
 * pages direct, its tail buffered), one that starts off a page boundary
 * (all buffered) and one that fails its digest (never written).  The file
 * must hold exactly the chunks that passed, through a real O_DIRECT fd
 * (when the file system allows one), a bad one (every write falls back)
 * and none.
 */
static void hashq_writes(int which)
{
	static const uint64_t bound[] = {0, 8292, 12288 + 4096, 12288 + 8192};
	unsigned char digests[3][MP_SHA256_LEN];
	struct mp_seal seal = {.chunk_count = 3, .digests = digests};
	struct mp_fetch_hashq *q;
	struct mp_fetch_job *j;
	char dir[4096], path[4200];
	unsigned char *got;
	size_t len;
	int fd, dfd = -1;

	fx_mkdtemp(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/partial", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)bound[3]), 0);
	if (which == 1)
		dfd = open(path, O_WRONLY | O_DIRECT); /* -1 where refused: buffered */
	else if (which == 2)
		dfd = open(path, O_RDONLY); /* every direct write fails */
	ck_assert_int_eq(mp_fetch_hashq_start(&q, 2, &seal, bound, fd, path, NULL, NULL, &err),
			 MP_OK);
	ck_assert_int_eq(mp_fetch_hashq_pool(q, 32768, 2, &err), MP_OK);
	mp_fetch_hashq_direct(q, dfd);
	j = mp_fetch_hashq_job(q, 0, 3, 0, bound[3], 0, true);
	ck_assert_ptr_nonnull(j);
	for (uint64_t i = 0; i < bound[3]; i++)
		j->buf[i] = (unsigned char)(i * 7 + 3);
	for (int c = 0; c < 3; c++)
		mp_sha256_buf(j->buf + bound[c], (size_t)(bound[c + 1] - bound[c]), digests[c]);
	digests[2][0] ^= 1;
	mp_fetch_hashq_push(q, j);
	j = mp_fetch_hashq_pop(q, true);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(j->rc, MP_OK);
	ck_assert_uint_eq(j->passed, 2);
	ck_assert(j->ok[0] && j->ok[1] && !j->ok[2]);
	got = (unsigned char *)fx_read_file(path, &len);
	ck_assert_uint_eq(len, bound[3]);
	ck_assert(memcmp(got, j->buf, (size_t)bound[2]) == 0);
	for (uint64_t i = bound[2]; i < bound[3]; i++)
		ck_assert_uint_eq(got[i], 0);
	free(got);
	mp_fetch_job_free(j);
	mp_fetch_hashq_stop(q);
	if (dfd >= 0)
		close(dfd);
	close(fd);
	fx_rmtree(dir);
}

START_TEST(test_hashq_writes)
{
	hashq_writes(_i);
}
END_TEST

static Suite *fetch_suite(void)
{
	Suite *s = suite_create("fetch");
	TCase *tc = tcase_create("source");

	tcase_add_test(tc, test_source_http_file);
	tcase_add_test(tc, test_source_refusals);
	tcase_add_test(tc, test_source_s3);
	tcase_add_test(tc, test_s3_endpoint);
	tcase_add_test(tc, test_s3_credentials);
	suite_add_tcase(s, tc);
	tc = tcase_create("plan");
	tcase_add_test(tc, test_plan_runs);
	tcase_add_test(tc, test_plan_gaps_and_long_chunks);
	tcase_add_test(tc, test_plan_run_from_and_lost);
	tcase_add_test(tc, test_plan_refusals);
	suite_add_tcase(s, tc);
	tc = tcase_create("hashq");
	tcase_add_loop_test(tc, test_hashq_writes, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

const struct fx_suite_def fx_suite = {.make = fetch_suite};
