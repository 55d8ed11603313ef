/* check_metrics.c - the metrics counters, report and file writer (metrics.c). */
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

#include "fixture.h"
#include "base/text.h"
#include "namespace/metrics.h"
#include "namespace/stats.h"

static const uint32_t ids[] = {5, 17, 92};

static struct mp_metrics_info info_of(void)
{
	return (struct mp_metrics_info){
		.mountpoint = "/srv/k3",
		.pack = "/data/k3.pack",
		.verify = "index",
		.validation_ok = true,
		.state_changed_at = 1700000000.0,
		.start_time = 1700000000.0,
		.uptime = 12.5,
		.rss_bytes = 4096 * 3,
		.layer_ids = ids,
	};
}

/* The report as a NUL-terminated string to free. */
static char *render(const struct mp_stats *s, const struct mp_metrics *m,
		    const struct mp_metrics_info *info)
{
	char *buf = NULL;
	struct mp_error err = {0};
	size_t len = 0;

	ck_assert_int_eq(mp_metrics_render(s, m, info, mp_metrics_max_len(s->layer_count), &buf,
					   &len, &err), MP_OK);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_gt(len, 0);
	ck_assert_uint_eq(strlen(buf), len);
	return buf;
}

#define MOUNT_LABELS "mountpoint=\"/srv/k3\",pack=\"/data/k3.pack\""

/* The report has this exact line, once the mount's labels are put in:
 * "name 1" is "name{M} 1", "name{a=\"b\"} 1" is "name{M,a=\"b\"} 1". */
static void has_line(const char *text, const char *bare)
{
	char line[512];
	const char *brace = strchr(bare, '{'), *space = strchr(bare, ' ');
	size_t n;

	if (bare[0] == '#')
		snprintf(line, sizeof line, "%s", bare);
	else if (brace && brace < space)
		snprintf(line, sizeof line, "%.*s{" MOUNT_LABELS ",%s", (int)(brace - bare), bare,
			 brace + 1);
	else
		snprintf(line, sizeof line, "%.*s{" MOUNT_LABELS "}%s", (int)(space - bare), bare,
			 space);
	n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return;
	ck_abort_msg("no line \"%s\" in the report", line);
}

START_TEST(test_report_counts)
{
	struct mp_stats s;
	static struct mp_metrics m;
	struct mp_error err = {0};
	struct mp_metrics_info info = info_of();
	struct mp_metrics_scan scan = {.ran = true, .experts = 6, .roles = 18,
				       .blocks = 99, .bytes_read = 12345};
	char *text;

	memset(&m, 0, sizeof m);
	info.scan = &scan;
	info.pack_changed = true;
	info.state_changed_at = 1700000100.25;
	ck_assert_int_eq(mp_stats_init(&s, 3, 4, &err), MP_OK);
	mp_stats_count_object(&s, 1 * 4 + 3, 4096); /* layer 17, expert 3 */
	mp_metrics_count_read(&m, MP_MF_ROLE, MP_ROLE_UP, true, 4096);
	mp_metrics_count_read(&m, MP_MF_ROLE, MP_ROLE_UP, false, 100);
	mp_metrics_count_read(&m, MP_MF_ROLE, MP_ROLE_DOWN, false, 7);
	mp_metrics_count_read(&m, MP_MF_F32, MP_ROLE_GATE, false, 1024);
	mp_metrics_count_read(&m, MP_MF_STATUS, MP_ROLE_COUNT, true, 10);
	mp_metrics_count_error(&m, EIO);
	mp_metrics_count_error(&m, EIO);
	mp_metrics_count_error(&m, ENOSPC);
	mp_metrics_count_error(&m, 100000); /* past the table: "other" */
	mp_metrics_count_error(&m, -3);
	text = render(&s, &m, &info);

	has_line(text, "# HELP moepackfs_uptime_seconds Seconds since the pack was mounted.");
	has_line(text, "# TYPE moepackfs_reads_total counter");
	has_line(text, "moepackfs_info{version=\"" PACKAGE_VERSION
		 "\",verify=\"index\",dequant=\"false\"} 1");
	has_line(text, "moepackfs_validation_ok 1");
	has_line(text, "moepackfs_pack_changed 1");
	has_line(text, "moepackfs_pack_state_change_time_seconds 1700000100.250");
	has_line(text, "moepackfs_start_time_seconds 1700000000.000");
	has_line(text, "moepackfs_uptime_seconds 12.500");
	has_line(text, "moepackfs_resident_memory_bytes 12288");
	has_line(text, "moepackfs_reads_total{file=\"role\",mode=\"direct\"} 1");
	has_line(text, "moepackfs_reads_total{file=\"role\",mode=\"buffered\"} 2");
	has_line(text, "moepackfs_read_bytes_total{file=\"role\",mode=\"direct\"} 4096");
	has_line(text, "moepackfs_read_bytes_total{file=\"role\",mode=\"buffered\"} 107");
	has_line(text, "moepackfs_reads_total{file=\"f32\",mode=\"buffered\"} 1");
	has_line(text, "moepackfs_read_bytes_total{file=\"f32\",mode=\"buffered\"} 1024");
	has_line(text, "moepackfs_reads_total{file=\"object\",mode=\"direct\"} 0");
	has_line(text, "moepackfs_reads_total{file=\"status\",mode=\"direct\"} 1");
	has_line(text, "moepackfs_read_bytes_total{file=\"status\",mode=\"direct\"} 10");
	has_line(text, "moepackfs_role_reads_total{role=\"up\"} 2");
	has_line(text, "moepackfs_role_read_bytes_total{role=\"up\"} 4196");
	has_line(text, "moepackfs_role_read_bytes_total{role=\"down\"} 7");
	/* .f32 reads are not role-file reads */
	has_line(text, "moepackfs_role_reads_total{role=\"gate\"} 0");
	has_line(text, "moepackfs_layer_reads_total{layer=\"17\"} 1");
	has_line(text, "moepackfs_layer_read_bytes_total{layer=\"17\"} 4096");
	has_line(text, "moepackfs_layer_read_bytes_total{layer=\"92\"} 0");
	has_line(text, "moepackfs_read_errors_total{errno=\"EIO\"} 2");
	has_line(text, "moepackfs_read_errors_total{errno=\"ENOMEM\"} 0");
	has_line(text, "moepackfs_read_errors_total{errno=\"ENOSPC\"} 1");
	has_line(text, "moepackfs_read_errors_total{errno=\"other\"} 2");
	has_line(text, "moepackfs_payload_scan_enabled 1");
	has_line(text, "moepackfs_payload_scan_read_bytes_total 12345");
	has_line(text, "moepackfs_metrics_file_writes_total 0");
	/* unseen errnos are not listed; no per-expert series, no seal series */
	ck_assert_ptr_null(strstr(text, "EPERM"));
	ck_assert_ptr_null(strstr(text, "expert="));
	ck_assert_ptr_null(strstr(text, "seal"));
	/* the 0.0.4 text format: no OpenMetrics end marker */
	ck_assert_ptr_null(strstr(text, "# EOF"));
	free(text);
	mp_stats_free(&s);
}
END_TEST

/* With the seal check on, its four series are there with their values. */
START_TEST(test_report_seal)
{
	struct mp_stats s;
	static struct mp_metrics m;
	struct mp_error err = {0};
	struct mp_metrics_info info = info_of();
	char *text;

	memset(&m, 0, sizeof m);
	info.seal = (struct mp_metrics_seal){.enabled = true, .chunks = 70, .checked = 9,
					     .failed = 1, .bytes_hashed = 18874368};
	ck_assert_int_eq(mp_stats_init(&s, 3, 4, &err), MP_OK);
	text = render(&s, &m, &info);
	has_line(text, "# TYPE moepackfs_seal_chunks_checked_total counter");
	has_line(text, "moepackfs_seal_chunks 70");
	has_line(text, "moepackfs_seal_chunks_checked_total 9");
	has_line(text, "moepackfs_seal_chunks_failed_total 1");
	has_line(text, "moepackfs_seal_hashed_bytes_total 18874368");
	free(text);
	mp_stats_free(&s);
}
END_TEST

/* Every sample follows its family's HELP and TYPE; counters end in _total. */
START_TEST(test_report_shape)
{
	struct mp_stats s;
	static struct mp_metrics m;
	struct mp_error err = {0};
	struct mp_metrics_info info = info_of();
	char *text, *save = NULL, family[128] = "", type[32] = "";
	unsigned samples = 0;

	memset(&m, 0, sizeof m);
	ck_assert_int_eq(mp_stats_init(&s, 3, 4, &err), MP_OK);
	text = render(&s, &m, &info);
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[128];

		if (sscanf(line, "# TYPE %127s %31s", family, type) == 2) {
			ck_assert_msg(strncmp(family, "moepackfs_", 10) == 0, "%s", family);
			if (strcmp(type, "counter") == 0)
				ck_assert_msg(strlen(family) > 6 &&
					      strcmp(family + strlen(family) - 6, "_total") == 0,
					      "counter %s", family);
			continue;
		}
		if (line[0] == '#')
			continue;
		ck_assert_int_eq(sscanf(line, "%127[^{ ]", name), 1);
		/* every sample names its mount and pack first */
		ck_assert_msg(strncmp(line + strlen(name), "{" MOUNT_LABELS,
				      strlen("{" MOUNT_LABELS)) == 0, "unlabelled: %s", line);
		ck_assert_msg(strcmp(name, family) == 0, "%s outside its family %s", name,
			      family);
		/* name{labels} value: two fields, no timestamp */
		ck_assert_msg(strchr(strrchr(line, '}') ? strrchr(line, '}') : line, ' ') ==
			      strrchr(line, ' '), "a timestamp or more in: %s", line);
		samples++;
	}
	ck_assert_uint_gt(samples, 40);
	free(text);
	mp_stats_free(&s);
}
END_TEST

/* Paths as labels: escaped, cut with a hash that keeps long ones apart. */
START_TEST(test_report_path_labels)
{
	struct mp_stats s;
	static struct mp_metrics m;
	struct mp_error err = {0};
	struct mp_metrics_info info = info_of();
	char longa[400], longb[400], *text, *text2;

	memset(&m, 0, sizeof m);
	ck_assert_int_eq(mp_stats_init(&s, 3, 4, &err), MP_OK);
	info.mountpoint = "/srv/a \"b\" \\c\n\x01\xff";
	text = render(&s, &m, &info);
	ck_assert_ptr_nonnull(strstr(text, "{mountpoint=\"/srv/a \\\"b\\\" \\\\\\\\c\\\\x0a"
				      "\\\\x01\\\\xff\",pack=\"/data/k3.pack\"} 1\n"));
	free(text);
	memset(longa, 'a', sizeof longa - 1);
	longa[sizeof longa - 1] = '\0';
	memcpy(longb, longa, sizeof longa);
	longb[sizeof longb - 2] = 'b';
	info.mountpoint = longa;
	text = render(&s, &m, &info);
	info.mountpoint = longb;
	text2 = render(&s, &m, &info);
	{
		const char *a = strstr(text, "moepackfs_pack_changed{mountpoint=\"");
		const char *b = strstr(text2, "moepackfs_pack_changed{mountpoint=\"");
		const char *end = strchr(a + 35, '"');

		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b);
		/* cut to MP_METRICS_LABEL_MAX, "..." and a hash: the two differ */
		ck_assert_uint_eq((size_t)(end - (a + 35)), MP_METRICS_LABEL_MAX);
		ck_assert(memcmp(a + 35 + MP_METRICS_LABEL_MAX - 19, "...", 3) == 0);
		ck_assert(strncmp(a, b, MP_METRICS_LABEL_MAX + 35) != 0);
	}
	free(text);
	free(text2);
	mp_stats_free(&s);
}
END_TEST

/* A long path is cut at a character boundary: the report stays UTF-8. */
START_TEST(test_report_label_cut_utf8)
{
	struct mp_stats s;
	static struct mp_metrics m;
	struct mp_error err = {0};
	struct mp_metrics_info info = info_of();
	char path[341], *text;

	memset(&m, 0, sizeof m);
	ck_assert_int_eq(mp_stats_init(&s, 3, 4, &err), MP_OK);
	/* "/" and 139 a's, then two-byte characters: one straddles byte 141,
	 * where a label of MP_METRICS_LABEL_MAX is cut */
	path[0] = '/';
	memset(path + 1, 'a', 139);
	for (size_t i = 140; i < 340; i += 2)
		memcpy(path + i, "\xc3\xa9", 2);
	path[340] = '\0';
	info.mountpoint = path;
	info.pack = path;
	text = render(&s, &m, &info);
	ck_assert_msg(mp_text_is_utf8(text, strlen(text)), "the report is not UTF-8");
	ck_assert_ptr_nonnull(strstr(text, "aaa...")); /* cut before the first 'é' */
	free(text);
	mp_stats_free(&s);
}
END_TEST

/* Too long for max_len: the same without the layers' series, marked. */
START_TEST(test_report_brief)
{
	struct mp_stats s;
	static struct mp_metrics m;
	struct mp_error err = {0};
	struct mp_metrics_info info = info_of();
	uint32_t many[600];
	char *full, *brief = NULL;
	size_t len;

	memset(&m, 0, sizeof m);
	for (uint32_t i = 0; i < 600; i++)
		many[i] = i;
	info.layer_ids = many;
	ck_assert_int_eq(mp_stats_init(&s, 600, 2, &err), MP_OK);
	full = render(&s, &m, &info);
	has_line(full, "moepackfs_metrics_truncated 0");
	has_line(full, "moepackfs_layer_reads_total{layer=\"599\"} 0");
	ck_assert_int_eq(mp_metrics_render(&s, &m, &info, strlen(full) - 1, &brief, &len, &err),
			 MP_OK);
	has_line(brief, "moepackfs_metrics_truncated 1");
	ck_assert_ptr_null(strstr(brief, "moepackfs_layer_reads_total"));
	ck_assert_ptr_null(strstr(brief, "moepackfs_layer_read_bytes_total"));
	has_line(brief, "moepackfs_replies_total{method=\"copy\"} 0");
	free(full);
	free(brief);
	mp_stats_free(&s);
}
END_TEST

START_TEST(test_report_too_small)
{
	struct mp_stats s;
	static struct mp_metrics m;
	struct mp_error err = {0};
	struct mp_metrics_info info = info_of();
	char *buf = (char *)"";
	size_t len = 99;

	memset(&m, 0, sizeof m);
	ck_assert_int_eq(mp_stats_init(&s, 3, 4, &err), MP_OK);
	ck_assert_int_eq(mp_metrics_render(&s, &m, &info, 512, &buf, &len, &err), MP_E_NOMEM);
	ck_assert_uint_eq(len, 0);
	ck_assert_ptr_null(buf);
	ck_assert_ptr_nonnull(strstr(err.msg, "do not fit in 512 bytes"));
	mp_stats_free(&s);
}
END_TEST

struct counting {
	struct mp_metrics *m;
	unsigned n;
};

static void *count_many(void *arg)
{
	struct counting *c = arg;

	for (unsigned i = 0; i < c->n; i++)
		mp_metrics_count_read(c->m, MP_MF_OBJECT, MP_ROLE_COUNT, i & 1, 3);
	return NULL;
}

/* Threads land in shards; the sums are exact. */
START_TEST(test_sharded_counts_are_exact)
{
	static struct mp_metrics m;
	struct counting c = {.m = &m, .n = 50000};

	memset(&m, 0, sizeof m);
	ck_assert_uint_eq(sizeof m.shard[0] % 64, 0);
	fx_run_threads(8, count_many, &c, 0);
	ck_assert_uint_eq(mp_metrics_reads(&m, MP_MF_OBJECT, -1), 8 * 50000);
	ck_assert_uint_eq(mp_metrics_reads(&m, MP_MF_OBJECT, 1), 8 * 25000);
	ck_assert_uint_eq(mp_metrics_bytes(&m, MP_MF_OBJECT, 0), 3 * 8 * 25000);
	ck_assert_uint_eq(mp_metrics_reads(&m, MP_MF_ROLE, -1), 0);
}
END_TEST

START_TEST(test_expert_reads)
{
	struct mp_stats s;
	struct mp_error err = {0};
	char buf[64];

	ck_assert_int_eq(mp_stats_init(&s, 3, 4, &err), MP_OK);
	mp_stats_count_object(&s, 1 * 4 + 3, 1);
	mp_stats_count_object(&s, 1 * 4 + 3, 1);
	mp_stats_count_object(&s, 1 * 4 + 0, 1);
	mp_stats_count_object(&s, 2 * 4 + 0, 1);
	ck_assert_uint_eq(mp_metrics_expert_reads(&s, 1, buf, sizeof buf), 7);
	ck_assert_str_eq(buf, "1 0 0 2");
	ck_assert_uint_eq(mp_metrics_expert_reads(&s, 0, buf, sizeof buf), 7);
	ck_assert_str_eq(buf, "0 0 0 0");
	/* past the layers, or no room: nothing */
	ck_assert_uint_eq(mp_metrics_expert_reads(&s, 3, buf, sizeof buf), 0);
	ck_assert_uint_eq(mp_metrics_expert_reads(&s, 1, buf, 7), 0);
	ck_assert_uint_eq(mp_metrics_expert_reads(&s, 1, buf, 8), 7);
	mp_stats_free(&s);
}
END_TEST

START_TEST(test_rss)
{
	ck_assert_uint_gt(mp_metrics_rss_bytes(), 0);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("metrics");

	tcase_add_test(tc, test_report_counts);
	tcase_add_test(tc, test_report_seal);
	tcase_add_test(tc, test_report_shape);
	tcase_add_test(tc, test_report_path_labels);
	tcase_add_test(tc, test_report_label_cut_utf8);
	tcase_add_test(tc, test_report_brief);
	tcase_add_test(tc, test_report_too_small);
	tcase_add_test(tc, test_sharded_counts_are_exact);
	tcase_add_test(tc, test_expert_reads);
	tcase_add_test(tc, test_rss);
	suite_add_tcase(s, tc);
	return s;
}

const struct fx_suite_def fx_suite = {.make = metrics_suite};
