/*
 * check_daemoncore.c - the FUSE-free core of the daemon: the payload
 * scan's wording (scanreport.c), mountinfo parsing (mountinfo.c), the
 * attributes of nodes (attr.c), the pack-changed state (packstate.c), the
 * watcher's schedule (watchplan.c), the status snapshots (snapshot.c) and
 * the .f32 windows (f32view.c).
 *
 * Expected texts are the ones moepack(1) and moepackfs(1) show; expected
 * attributes follow moepackfs(1) (modes 0555/0444 less the umask, times
 * the pack's mtime, status.json's ctime the snapshot's).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "base/file.h"
#include <jansson.h>

#include "fixture.h"
#include "namespace/attr.h"
#include "namespace/f32view.h"
#include "namespace/mountinfo.h"
#include "namespace/node.h"
#include "namespace/packstate.h"
#include "namespace/snapshot.h"
#include "namespace/tree.h"
#include "namespace/watchplan.h"
#include "payload/dequant.h"
#include "payload/scanreport.h"

/* ---- the payload scan's wording ------------------------------------------ */

static struct mp_scan_problem nonfinite(uint16_t value)
{
	return (struct mp_scan_problem){
		.kind = MP_SCAN_NONFINITE_SCALE, .layer = 3, .expert = 7,
		.role = MP_ROLE_GATE, .codec = mp_codec(mp_quant_by_name("Q2_K")),
		.count = 2, .first_block = 11, .first_scale = "dmin", .first_value = value,
	};
}

START_TEST(test_describe_nonfinite)
{
	struct mp_scan_problem p = nonfinite(0x7c00);
	char buf[MP_MSG_MAX];

	mp_scan_problem_describe(buf, sizeof buf, &p);
	ck_assert_str_eq(buf, "layer 3 expert 7 gate: non-finite scale: 2 in the role, "
			      "first at block 11 (dmin = +Inf, 0x7c00)");
	p = nonfinite(0xfc00);
	mp_scan_problem_describe(buf, sizeof buf, &p);
	ck_assert_ptr_nonnull(strstr(buf, "(dmin = -Inf, 0xfc00)"));
	p = nonfinite(0x7e01);
	mp_scan_problem_describe(buf, sizeof buf, &p);
	ck_assert_ptr_nonnull(strstr(buf, "(dmin = NaN, 0x7e01)"));
	/* a problem without its type says the bits alone */
	p.codec = NULL;
	mp_scan_problem_describe(buf, sizeof buf, &p);
	ck_assert_ptr_nonnull(strstr(buf, "(dmin = 0x7e01)"));
}
END_TEST

START_TEST(test_describe_zero)
{
	struct mp_scan_problem p = {.kind = MP_SCAN_ZERO_ROLE, .layer = 92, .expert = 895,
				    .role = MP_ROLE_DOWN};
	char buf[MP_MSG_MAX];

	mp_scan_problem_describe(buf, sizeof buf, &p);
	ck_assert_str_eq(buf, "layer 92 expert 895 down: all-zero role");
	p.hole = true;
	mp_scan_problem_describe(buf, sizeof buf, &p);
	ck_assert_str_eq(buf, "layer 92 expert 895 down: all-zero role (a hole in the "
			      "file: never written)");
	p = (struct mp_scan_problem){.kind = MP_SCAN_ZERO_SCALES, .layer = 1, .expert = 0,
				     .role = MP_ROLE_COUNT};
	mp_scan_problem_describe(buf, sizeof buf, &p);
	ck_assert_str_eq(buf, "layer 1 expert 0: all-zero scales (every block of up, "
			      "gate and down)");
}
END_TEST

START_TEST(test_describe_truncates)
{
	struct mp_scan_problem p = nonfinite(0x7c00);
	char buf[12];

	memset(buf, 'x', sizeof buf);
	mp_scan_problem_describe(buf, sizeof buf, &p);
	ck_assert_str_eq(buf, "layer 3 exp");
	memset(buf, 'x', sizeof buf);
	mp_scan_problem_describe(buf, 1, &p);
	ck_assert_int_eq(buf[0], '\0');
}
END_TEST

/* Lines a run folder emitted, joined by newlines. */
struct lines {
	char text[4096];
	size_t n;
};

static void keep_line(const char *line, void *arg)
{
	struct lines *l = arg;
	int w = snprintf(l->text + l->n, sizeof l->text - l->n, "%s\n", line);

	ck_assert_int_lt(w, (int)(sizeof l->text - l->n));
	l->n += (size_t)w;
}

static struct mp_scan_problem zero_role(uint32_t layer, uint64_t expert, enum mp_role role,
					bool hole)
{
	return (struct mp_scan_problem){.kind = MP_SCAN_ZERO_ROLE, .layer = layer,
					.expert = expert, .role = role, .hole = hole};
}

static struct mp_scan_problem zero_scales(uint32_t layer, uint64_t expert)
{
	return (struct mp_scan_problem){.kind = MP_SCAN_ZERO_SCALES, .layer = layer,
					.expert = expert, .role = MP_ROLE_COUNT};
}

/* Consecutive experts with the same findings make one line per finding;
 * an expert without findings, or with others, ends the run. */
START_TEST(test_runs)
{
	uint32_t ids[3] = {1, 2, 3};
	struct mp_pack pack = {.m = {.layer_ids = ids, .layer_count = 3, .num_experts = 2}};
	struct mp_scan_runs r;
	struct lines l = {0};

	mp_scan_runs_init(&r, &pack, keep_line, &l);
	for (unsigned k = 0; k < 3; k++) { /* (1, 0), (1, 1), (2, 0) */
		struct mp_scan_problem a = zero_role(1 + k / 2, k % 2, MP_ROLE_UP, true);
		struct mp_scan_problem b = zero_scales(1 + k / 2, k % 2);

		mp_scan_runs_add(&r, &a);
		mp_scan_runs_add(&r, &b);
	}
	/* (2, 1) has none; (3, 0) and (3, 1) one of their own */
	for (unsigned e = 0; e < 2; e++) {
		struct mp_scan_problem a = zero_role(3, e, MP_ROLE_DOWN, true);

		mp_scan_runs_add(&r, &a);
	}
	mp_scan_runs_finish(&r);
	ck_assert_str_eq(l.text,
			 "layer 1 expert 0 to layer 2 expert 0 (3 experts) up: all-zero role "
			 "(a hole in the file: never written)\n"
			 "layer 1 expert 0 to layer 2 expert 0 (3 experts): all-zero scales "
			 "(every block of up, gate and down)\n"
			 "layer 3 experts 0 to 1 (2 experts) down: all-zero role (a hole in the "
			 "file: never written)\n");
}
END_TEST

/* A finding that differs in anything but where is not the same one. */
START_TEST(test_runs_differ)
{
	uint32_t ids[1] = {0};
	struct mp_pack pack = {.m = {.layer_ids = ids, .layer_count = 1, .num_experts = 4}};
	struct mp_scan_problem p[4] = {
		zero_role(0, 0, MP_ROLE_GATE, true), zero_role(0, 1, MP_ROLE_GATE, false),
		zero_role(0, 2, MP_ROLE_UP, false), nonfinite(0x7c00),
	};
	struct mp_scan_problem q = nonfinite(0x7c01);
	struct mp_scan_runs r;
	struct lines l = {0};

	p[3].layer = 0;
	p[3].expert = 3;
	mp_scan_runs_init(&r, &pack, keep_line, &l);
	for (unsigned i = 0; i < 4; i++)
		mp_scan_runs_add(&r, &p[i]);
	mp_scan_runs_finish(&r);
	ck_assert_str_eq(l.text,
			 "layer 0 expert 0 gate: all-zero role (a hole in the file: never "
			 "written)\n"
			 "layer 0 expert 1 gate: all-zero role\n"
			 "layer 0 expert 2 up: all-zero role\n"
			 "layer 0 expert 3 gate: non-finite scale: 2 in the role, first at block "
			 "11 (dmin = +Inf, 0x7c00)\n");
	ck_assert(mp_scan_problem_same(&p[3], &p[3]));
	ck_assert(!mp_scan_problem_same(&p[3], &q));
}
END_TEST

START_TEST(test_counts)
{
	struct mp_scan_summary s = {.nonfinite_scales = 5, .nonfinite_roles = 2,
				    .zero_roles = 1, .zero_scale_experts = 3};
	char buf[MP_MSG_MAX];

	mp_scan_counts_describe(buf, sizeof buf, &s);
	ck_assert_str_eq(buf, "5 non-finite scales in 2 roles, 1 all-zero roles, "
			      "3 experts with all-zero scales");
	ck_assert_uint_eq(mp_scan_problem_total(&s), 6);
	memset(&s, 0, sizeof s);
	ck_assert_uint_eq(mp_scan_problem_total(&s), 0);
}
END_TEST

/* ---- mountinfo ------------------------------------------------------------ */

START_TEST(test_mountinfo_line)
{
	char line[] = "36 35 0:42 / /mnt/my\\040pack rw,nosuid shared:1 - fuse.moepackfs "
		      "moepackfs:/p ro\n";
	struct mp_mountinfo_entry e;

	ck_assert(mp_mountinfo_parse(line, &e));
	ck_assert_str_eq(e.dev, "0:42");
	ck_assert_str_eq(e.mountpoint, "/mnt/my pack");
	ck_assert_str_eq(e.type, "fuse.moepackfs");
}
END_TEST

START_TEST(test_mountinfo_escapes)
{
	char line[] = "1 2 0:7 / /a\\134b\\011c\\012d\\0e\\999 rw - fuse x y\n";
	struct mp_mountinfo_entry e;

	ck_assert(mp_mountinfo_parse(line, &e));
	/* a backslash, a tab, a newline; incomplete or non-octal escapes stay */
	ck_assert_str_eq(e.mountpoint, "/a\\b\tc\nd\\0e\\999");
}
END_TEST

START_TEST(test_mountinfo_malformed)
{
	char short_line[] = "1 2 0:7 /\n";
	char no_type[] = "1 2 0:7 / /mnt rw shared:1\n";
	char dash_last[] = "1 2 0:7 / /mnt rw -\n";
	char empty[] = "\n";
	struct mp_mountinfo_entry e;

	ck_assert(!mp_mountinfo_parse(short_line, &e));
	ck_assert(!mp_mountinfo_parse(no_type, &e));
	ck_assert(!mp_mountinfo_parse(dash_last, &e));
	ck_assert(!mp_mountinfo_parse(empty, &e));
}
END_TEST

static bool find_in(const char *text, const char *mnt, const char *type, char *dev,
		    size_t len)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	bool found;

	ck_assert_ptr_nonnull(f);
	found = mp_mountinfo_find_fuse(f, mnt, type, dev, len);
	fclose(f);
	return found;
}

START_TEST(test_mountinfo_find)
{
	const char *table =
		"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		"40 22 0:50 / /mnt/a rw - tmpfs tmpfs rw\n"
		"41 40 0:51 / /mnt/a rw - fuse.sshfs host: rw\n"
		"42 41 0:52 / /mnt/a rw - fuse.moepackfs moepackfs:/p ro\n"
		"43 22 0:53 / /mnt/b\\040c rw - fuseblk /dev/sdb rw\n"
		"44 22 0:54 / /mnt/fusefake rw - notfuse x rw\n";
	char dev[64];

	/* the last match is the mount on top */
	ck_assert(find_in(table, "/mnt/a", NULL, dev, sizeof dev));
	ck_assert_str_eq(dev, "0:52");
	ck_assert(find_in(table, "/mnt/a", "fuse.sshfs", dev, sizeof dev));
	ck_assert_str_eq(dev, "0:51");
	ck_assert(find_in(table, "/mnt/b c", NULL, dev, sizeof dev));
	ck_assert_str_eq(dev, "0:53");
	ck_assert(!find_in(table, "/mnt/b c", "fuse.moepackfs", dev, sizeof dev));
	ck_assert(!find_in(table, "/", NULL, dev, sizeof dev));
	ck_assert(!find_in(table, "/mnt/fusefake", NULL, dev, sizeof dev));
	ck_assert(!find_in("", "/mnt/a", NULL, dev, sizeof dev));
}
END_TEST

START_TEST(test_mountinfo_long_line)
{
	size_t opts = 20000;
	char *table = malloc(opts + 256), dev[64], *p = table;

	ck_assert_ptr_nonnull(table);
	p += sprintf(p, "50 22 0:77 / /mnt/long ");
	memset(p, 'o', opts);
	p += opts;
	sprintf(p, " - fuse.moepackfs moepackfs:/p ro\n"
		   "51 22 0:78 / /mnt/other rw - fuse x rw\n");
	ck_assert(find_in(table, "/mnt/long", "fuse.moepackfs", dev, sizeof dev));
	ck_assert_str_eq(dev, "0:77");
	ck_assert(find_in(table, "/mnt/other", NULL, dev, sizeof dev));
	ck_assert_str_eq(dev, "0:78");
	/* dev is cut to fit, never overrun */
	ck_assert(find_in(table, "/mnt/long", NULL, dev, 3));
	ck_assert_str_eq(dev, "0:");
	free(table);
}
END_TEST

/* ---- attributes ----------------------------------------------------------- */

START_TEST(test_blksize)
{
	ck_assert_int_eq(mp_attr_blksize(0), MP_PAGE);
	ck_assert_int_eq(mp_attr_blksize(256), MP_PAGE);
	ck_assert_int_eq(mp_attr_blksize(1u << 16), 1 << 16);
	ck_assert_int_eq(mp_attr_blksize(1ull << 40), 1 << 30);
}
END_TEST

struct opened {
	struct fx f;
	struct mp_pack *pack;
	struct mp_tree tree;
};

static void open_demo(struct opened *o, bool dequant)
{
	struct fx_pack_opts po = {.experts = 3};
	struct mp_error err = {0};

	fx_setup(&o->f, &po);
	ck_assert_int_eq(fx_open_pack(&o->f, NULL, &o->pack, &err), MP_OK);
	ck_assert_int_eq(mp_tree_init_pack(&o->tree, o->pack, &err), MP_OK);
	if (dequant)
		mp_tree_add_dequant(&o->tree);
}

static void close_demo(struct opened *o)
{
	mp_pack_close(o->pack);
	fx_cleanup(&o->f);
}

static const struct mp_attr_facts facts = {
	.uid = 1234, .gid = 5678, .umask = 027, .blksize = 4096,
	.mtime = {1700000000, 123}, .client_manifest_len = 99, .status_mode = 0440,
};
static const struct mp_attr_snapshot no_snap = {0};

START_TEST(test_stat_nodes)
{
	struct opened o;
	struct stat st;
	struct mp_node n;

	open_demo(&o, false);
	ck_assert(mp_attr_stat(&facts, &o.tree, o.pack, MP_INO_ROOT, &no_snap, &st));
	ck_assert_uint_eq(st.st_ino, MP_INO_ROOT);
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 0550);
	ck_assert_uint_eq(st.st_nlink, mp_tree_nlink(&o.tree, MP_INO_ROOT));
	ck_assert_uint_eq(st.st_uid, 1234);
	ck_assert_uint_eq(st.st_gid, 5678);
	ck_assert_int_eq(st.st_blksize, 4096);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1700000000);
	ck_assert_int_eq(st.st_ctim.tv_nsec, 123);
	ck_assert(mp_attr_stat(&facts, &o.tree, o.pack, MP_INO_PACK, &no_snap, &st));
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0440);
	ck_assert_int_eq(st.st_size, (off_t)o.pack->file.size);
	ck_assert_int_eq(st.st_blocks, (blkcnt_t)((o.pack->file.size + 511) / 512));
	ck_assert(mp_attr_stat(&facts, &o.tree, o.pack, MP_INO_CLIENT_MANIFEST, &no_snap, &st));
	ck_assert_int_eq(st.st_size, 99);
	ck_assert(mp_tree_node(&o.tree, o.tree.first_file_ino, &n));
	ck_assert(mp_attr_stat(&facts, &o.tree, o.pack, o.tree.first_file_ino, &no_snap, &st));
	{
		struct mp_node_sizes sizes = {.client_manifest = 99};

		ck_assert_uint_eq(st.st_size, mp_node_size(o.pack, &n, &sizes));
	}
	ck_assert(!mp_attr_stat(&facts, &o.tree, o.pack, 0, &no_snap, &st));
	ck_assert(!mp_attr_stat(&facts, &o.tree, o.pack, o.tree.end_ino, &no_snap, &st));
	close_demo(&o);
}
END_TEST

START_TEST(test_stat_snapshots)
{
	struct opened o;
	struct stat st;
	long long ns = 1800000000LL * 1000000000LL + 42;
	struct mp_attr_snapshot snap = {ns, 12345, 678};

	open_demo(&o, false);
	ck_assert(mp_attr_is_snapshot(&o.tree, MP_INO_STATUS));
	ck_assert(mp_attr_is_snapshot(&o.tree, o.tree.metrics_ino));
	ck_assert(!mp_attr_is_snapshot(&o.tree, MP_INO_PACK));
	/* status.json and metrics: ctime is the snapshot's, mtime the pack's */
	ck_assert(mp_attr_stat(&facts, &o.tree, o.pack, MP_INO_STATUS, &snap, &st));
	ck_assert_int_eq(st.st_ctim.tv_sec, 1800000000);
	ck_assert_int_eq(st.st_ctim.tv_nsec, 42);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1700000000);
	/* sized as the report being served, nothing padded; status_mode */
	ck_assert_int_eq(st.st_size, 12345);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0440);
	ck_assert(mp_attr_stat(&facts, &o.tree, o.pack, o.tree.metrics_ino, &snap, &st));
	ck_assert_int_eq(st.st_ctim.tv_sec, 1800000000);
	ck_assert_int_eq(st.st_size, 678);
	/* no snapshot yet: the pack's */
	ck_assert(mp_attr_stat(&facts, &o.tree, o.pack, MP_INO_STATUS, &no_snap, &st));
	ck_assert_int_eq(st.st_ctim.tv_sec, 1700000000);
	/* who may read them: root, then owner, group, others by the mode */
	{
		gid_t other = 9999, same = 5678;

		ck_assert(mp_attr_may_read_status(&facts, 0, 1, NULL, 0));
		ck_assert(mp_attr_may_read_status(&facts, 1234, 1, NULL, 0));
		ck_assert(mp_attr_may_read_status(&facts, 42, 5678, NULL, 0));
		ck_assert(mp_attr_may_read_status(&facts, 42, 1, &same, 1));
		ck_assert(!mp_attr_may_read_status(&facts, 42, 1, &other, 1));
		ck_assert(!mp_attr_may_read_status(&facts, 65534, 65534, NULL, 0));
	}
	/* other files never take it */
	ck_assert(mp_attr_stat(&facts, &o.tree, o.pack, MP_INO_PACK, &snap, &st));
	ck_assert_int_eq(st.st_ctim.tv_sec, 1700000000);
	close_demo(&o);
}
END_TEST

START_TEST(test_statvfs)
{
	struct opened o;
	struct statvfs sv;
	uint64_t with_f32;

	open_demo(&o, true);
	mp_attr_statvfs(&facts, &o.tree, o.pack, &sv);
	with_f32 = sv.f_files;
	ck_assert_uint_eq(sv.f_bsize, 4096);
	ck_assert_uint_eq(sv.f_blocks, (o.pack->file.size + 4095) / 4096);
	ck_assert_uint_eq(sv.f_files, o.tree.end_ino - 1);
	ck_assert_uint_eq(sv.f_namemax, MP_TREE_NAME_MAX - 1);
	ck_assert(sv.f_flag & ST_RDONLY);
	close_demo(&o);
	open_demo(&o, false);
	mp_attr_statvfs(&facts, &o.tree, o.pack, &sv);
	ck_assert_uint_lt(sv.f_files, with_f32);
	close_demo(&o);
}
END_TEST

/* ---- the pack-changed state ---------------------------------------------- */

static const struct mp_pack_id ref = {
	.size = 1000, .mtime = {100, 1}, .ctime = {200, 2}, .nlink = 1,
};

static struct stat stat_of(uint64_t size, time_t mtime, time_t ctime, nlink_t nlink)
{
	struct stat st;

	memset(&st, 0, sizeof st);
	st.st_size = (off_t)size;
	st.st_mtim = (struct timespec){mtime, 1};
	st.st_ctim = (struct timespec){ctime, 2};
	st.st_nlink = nlink;
	return st;
}

START_TEST(test_compare)
{
	struct stat st = stat_of(1000, 100, 200, 1);

	ck_assert_int_eq(mp_pack_compare(&ref, &st), MP_PACK_SAME);
	/* the link count alone is no change */
	st = stat_of(1000, 100, 200, 2);
	ck_assert_int_eq(mp_pack_compare(&ref, &st), MP_PACK_SAME);
	/* renamed over or unlinked: a new ctime with a new link count */
	st = stat_of(1000, 100, 300, 0);
	ck_assert_int_eq(mp_pack_compare(&ref, &st), MP_PACK_RELINKED);
	/* a new ctime with the same link count: chmod, a write that kept mtime */
	st = stat_of(1000, 100, 300, 1);
	ck_assert_int_eq(mp_pack_compare(&ref, &st), MP_PACK_CHANGED);
	st = stat_of(999, 100, 200, 1);
	ck_assert_int_eq(mp_pack_compare(&ref, &st), MP_PACK_CHANGED);
	st = stat_of(1000, 101, 200, 1);
	ck_assert_int_eq(mp_pack_compare(&ref, &st), MP_PACK_CHANGED);
	st = stat_of(1000, 100, 200, 1);
	st.st_mtim.tv_nsec = 2;
	ck_assert_int_eq(mp_pack_compare(&ref, &st), MP_PACK_CHANGED);
	/* a truncation that also unlinked: still a change */
	st = stat_of(0, 100, 300, 0);
	ck_assert_int_eq(mp_pack_compare(&ref, &st), MP_PACK_CHANGED);
}
END_TEST

START_TEST(test_state_relinked)
{
	struct mp_pack_state ps;
	struct mp_status_change c;
	struct stat st = stat_of(1000, 100, 300, 0);

	ck_assert(mp_pack_state_init(&ps, &ref));
	ck_assert(!mp_pack_state_changed(&ps));
	ck_assert(mp_pack_state_check(&ps, &st));
	/* the new ctime and link count are the reference now */
	ck_assert_int_eq(ps.valid.ctime.tv_sec, 300);
	ck_assert_uint_eq(ps.valid.nlink, 0);
	ck_assert(mp_pack_state_check(&ps, &st));
	/* and the old ones a change */
	st = stat_of(1000, 100, 200, 0);
	ck_assert(!mp_pack_state_check(&ps, &st));
	ck_assert(mp_pack_state_changed(&ps));
	mp_pack_state_record(&ps, &c);
	ck_assert(c.changed && !c.lease_break);
	ck_assert_int_eq(c.old_ctime.tv_sec, 300);
	ck_assert_int_eq(c.new_ctime.tv_sec, 200);
	mp_pack_state_destroy(&ps);
}
END_TEST

START_TEST(test_state_changed_for_good)
{
	struct mp_pack_state ps;
	struct mp_status_change c;
	struct stat grown = stat_of(2000, 150, 250, 1), same = stat_of(1000, 100, 200, 1);

	ck_assert(mp_pack_state_init(&ps, &ref));
	mp_pack_state_record(&ps, &c);
	ck_assert(!c.changed);
	ck_assert(mp_pack_state_check(&ps, &same));
	ck_assert(!mp_pack_state_check(&ps, &grown));
	/* back to the validated values: still changed, the record the first */
	ck_assert(!mp_pack_state_check(&ps, &same));
	ck_assert(!mp_pack_state_enter(&ps, &same, true));
	mp_pack_state_record(&ps, &c);
	ck_assert(c.changed && !c.lease_break);
	ck_assert_uint_eq(c.old_size, 1000);
	ck_assert_uint_eq(c.new_size, 2000);
	ck_assert_int_eq(c.old_mtime.tv_sec, 100);
	ck_assert_int_eq(c.new_mtime.tv_sec, 150);
	ck_assert_int_eq(c.new_ctime.tv_sec, 250);
	ck_assert_int_gt(c.detected_at.tv_sec, 0);
	mp_pack_state_destroy(&ps);
}
END_TEST

START_TEST(test_state_lease_break)
{
	struct mp_pack_state ps;
	struct mp_status_change c;

	ck_assert(mp_pack_state_init(&ps, &ref));
	/* no stat: the reference's values are the new ones */
	ck_assert(mp_pack_state_enter(&ps, NULL, true));
	ck_assert(!mp_pack_state_enter(&ps, NULL, false));
	mp_pack_state_record(&ps, &c);
	ck_assert(c.changed && c.lease_break);
	ck_assert_uint_eq(c.new_size, 1000);
	ck_assert_int_eq(c.new_ctime.tv_sec, 200);
	mp_pack_state_destroy(&ps);
}
END_TEST

START_TEST(test_lease_names)
{
	ck_assert_str_eq(mp_lease_name(MP_LEASE_HELD), "held");
	ck_assert_str_eq(mp_lease_name(MP_LEASE_BROKEN), "broken");
	ck_assert_str_eq(mp_lease_name(MP_LEASE_FALLBACK), "fallback");
	ck_assert_str_eq(mp_lease_name(MP_LEASE_NONE), "none");
	ck_assert_str_eq(mp_lease_name(99), "none");
}
END_TEST

/* ---- the watcher's schedule ------------------------------------------------ */

static struct timespec at_ms(long ms)
{
	struct timespec t = {1000, 0};

	mp_timespec_add_ms(&t, ms);
	return t;
}

START_TEST(test_plan_refresh)
{
	struct mp_watch_plan p;
	struct timespec t = at_ms(0);

	mp_watch_plan_init(&p, &t, 1000, false, 15000);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), MP_WATCH_REFRESH);
	t = at_ms(200);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), 0);
	t = at_ms(999);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), 0);
	t = at_ms(1000);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), MP_WATCH_REFRESH);
	/* no metrics file: never written */
	t = at_ms(60000);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), MP_WATCH_REFRESH);
}
END_TEST

START_TEST(test_plan_file)
{
	struct mp_watch_plan p;
	struct timespec t = at_ms(0);

	mp_watch_plan_init(&p, &t, 1000, true, 15000);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), MP_WATCH_REFRESH);
	t = at_ms(14999);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), MP_WATCH_REFRESH);
	/* the file's snapshot is the refresh; the next status is a period on */
	t = at_ms(15000);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), MP_WATCH_WRITE_FILE);
	t = at_ms(15999);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), 0);
	t = at_ms(16000);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), MP_WATCH_REFRESH);
	t = at_ms(30000);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, NULL), MP_WATCH_WRITE_FILE);
}
END_TEST

START_TEST(test_plan_change)
{
	struct mp_status_change c = {.changed = true};
	struct mp_watch_plan p;
	struct timespec t = at_ms(0);

	mp_watch_plan_init(&p, &t, 1000, false, 15000);
	mp_watch_plan_step(&p, &t, NULL);
	t = at_ms(200);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, &c),
			  MP_WATCH_REPORT | MP_WATCH_REFRESH | MP_WATCH_INVALIDATE);
	ck_assert(p.reported);
	/* once */
	t = at_ms(400);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, &c), 0);
	/* with a metrics file: written at once, and that is the refresh */
	t = at_ms(0);
	mp_watch_plan_init(&p, &t, 1000, true, 15000);
	mp_watch_plan_step(&p, &t, NULL);
	t = at_ms(200);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, &c),
			  MP_WATCH_REPORT | MP_WATCH_WRITE_FILE | MP_WATCH_INVALIDATE);
}
END_TEST

START_TEST(test_plan_lease_break)
{
	struct mp_status_change c = {.changed = true, .lease_break = true};
	struct mp_watch_plan p;
	struct timespec t = at_ms(0);

	/* the lease thread reported it and dropped the pages */
	mp_watch_plan_init(&p, &t, 1000, false, 15000);
	mp_watch_plan_step(&p, &t, NULL);
	t = at_ms(200);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, &c), 0);
	ck_assert(p.reported);
	t = at_ms(0);
	mp_watch_plan_init(&p, &t, 1000, true, 15000);
	mp_watch_plan_step(&p, &t, NULL);
	t = at_ms(200);
	ck_assert_uint_eq(mp_watch_plan_step(&p, &t, &c), MP_WATCH_WRITE_FILE);
}
END_TEST

START_TEST(test_timespec_add)
{
	struct timespec t = {5, 999999999};

	mp_timespec_add_ms(&t, 1);
	ck_assert_int_eq(t.tv_sec, 6);
	ck_assert_int_eq(t.tv_nsec, 999999);
	mp_timespec_add_ms(&t, 2500);
	ck_assert_int_eq(t.tv_sec, 8);
	ck_assert_int_eq(t.tv_nsec, 500999999);
}
END_TEST

/* ---- snapshots --------------------------------------------------------------- */

static const uint32_t ids[] = {1, 2, 3};

static struct mp_status_info fixed_facts(void)
{
	return (struct mp_status_info){
		.pack_path = "/data/kimi.pack",
		.manifest_path = "/data/kimi.pack.manifest.json",
		.mountpoint = "/mnt/kimi",
		.verify = "index",
		.index_sha256 = "ab12",
		.mounted_at = 1700000000,
		.layer_ids = ids,
		.hottest = 3,
		.readahead_kb = -1,
	};
}

START_TEST(test_snapshot_render)
{
	static struct mp_metrics metrics;
	static const char warnings[1][MP_MSG_MAX] = {"daemon says"};
	struct mp_status_info status = fixed_facts();
	struct mp_metrics_scan scan = {0};
	struct timespec started;
	struct mp_stats stats;
	struct mp_error err = {0};
	struct mp_snap_source src = {&stats, &metrics, &status, &scan, NULL, &started};
	struct mp_snap_moment m = {.lease = MP_LEASE_FALLBACK, .lease_reason = "no leases",
				   .nwarnings = 1, .warnings = warnings, .file_writes = 7};
	struct mp_status_snap *snap;
	json_error_t jerr;
	json_t *root;

	clock_gettime(CLOCK_MONOTONIC, &started);
	ck_assert_int_eq(mp_stats_init(&stats, 3, 4, &err), MP_OK);
	snap = mp_snap_render(&src, &m, &err);
	ck_assert_ptr_nonnull(snap);
	ck_assert_uint_eq(atomic_load(&snap->refs), 1);
	/* the report and nothing after it: its last byte the newline after "}" */
	ck_assert_uint_gt(snap->text_len, 2);
	ck_assert_int_eq(snap->text[snap->text_len - 1], '\n');
	ck_assert_int_eq(snap->text[snap->text_len - 2], '}');
	root = json_loadb(snap->text, snap->text_len, 0, &jerr);
	ck_assert_msg(root != NULL, "%s", jerr.text);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(root, "lease"),
							   "state")), "fallback");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(root, "lease"),
							   "reason")), "no leases");
	ck_assert_str_eq(json_string_value(json_object_get(root, "pack_state")), "ok");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(root, "warnings"),
							  0)), "daemon says");
	json_decref(root);
	ck_assert_uint_gt(snap->metrics_len, 0);
	ck_assert_uint_lt(snap->metrics_len, mp_metrics_max_len(stats.layer_count));
	ck_assert_int_eq(snap->metrics[snap->metrics_len - 1], '\n');
	mp_snap_put(snap);
	mp_stats_free(&stats);
}
END_TEST

/*
 * Many layers and long paths: both files are rendered whole (a report
 * past a fixed buffer once failed both, and neither file was served).
 */
START_TEST(test_snapshot_many_layers)
{
	static struct mp_metrics metrics;
	static uint32_t many[600];
	char path[300];
	struct mp_status_info status = fixed_facts();
	struct timespec started;
	struct mp_stats stats;
	struct mp_error err = {0};
	struct mp_snap_source src = {&stats, &metrics, &status, NULL, NULL, &started};
	struct mp_snap_moment m = {.lease = MP_LEASE_HELD};
	struct mp_status_snap *snap;
	json_t *root;

	for (uint32_t i = 0; i < 600; i++)
		many[i] = i;
	memset(path, 'm', sizeof path - 1);
	path[0] = '/';
	path[sizeof path - 1] = '\0';
	status.mountpoint = path;
	status.layer_ids = many;
	clock_gettime(CLOCK_MONOTONIC, &started);
	ck_assert_int_eq(mp_stats_init(&stats, 600, 2, &err), MP_OK);
	snap = mp_snap_render(&src, &m, &err);
	ck_assert_msg(snap != NULL, "%s", err.msg);
	root = json_loadb(snap->text, snap->text_len, 0, NULL);
	ck_assert_ptr_nonnull(root);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "layers")), 600);
	json_decref(root);
	ck_assert_uint_gt(snap->metrics_len, 128u << 10);
	ck_assert_ptr_nonnull(memmem(snap->metrics, snap->metrics_len,
				     "moepackfs_metrics_truncated{", 28));
	ck_assert_ptr_nonnull(memmem(snap->metrics, snap->metrics_len, ",layer=\"599\"} 0\n", 16));
	mp_snap_put(snap);
	mp_stats_free(&stats);
}
END_TEST

START_TEST(test_snapshot_metrics_info)
{
	struct mp_status_info status = fixed_facts();
	struct mp_metrics_scan scan = {.ran = true};
	struct timespec started;
	struct mp_snap_source src = {NULL, NULL, &status, &scan, NULL, &started};
	struct mp_snap_moment m = {.file_writes = 3, .file_write_errors = 1};
	struct mp_metrics_info mi;

	clock_gettime(CLOCK_MONOTONIC, &started);
	mp_snap_metrics_info(&src, &m, &mi);
	ck_assert(mi.validation_ok && !mi.pack_changed);
	ck_assert(mi.state_changed_at == 1700000000.0);
	ck_assert(mi.start_time == 1700000000.0);
	ck_assert(mi.uptime >= 0 && mi.uptime < 60);
	ck_assert_ptr_eq(mi.scan, &scan);
	ck_assert(!mi.seal.enabled);
	ck_assert_uint_eq(mi.file_writes, 3);
	ck_assert_uint_eq(mi.file_write_errors, 1);
	/* a change: its time is the state's; a start in the future: no uptime */
	m.change = (struct mp_status_change){.changed = true, .detected_at = {1800000000, 0}};
	started.tv_sec += 3600;
	mp_snap_metrics_info(&src, &m, &mi);
	ck_assert(mi.pack_changed);
	ck_assert(mi.state_changed_at == 1800000000.0);
	ck_assert(mi.uptime == 0);
}
END_TEST

START_TEST(test_snapshot_slot)
{
	struct mp_snap_slot slot;
	struct mp_status_snap *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *got;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	atomic_init(&a->refs, 1);
	atomic_init(&b->refs, 1);
	a->at = (struct timespec){10, 5};
	b->at = (struct timespec){20, 6};
	ck_assert(mp_snap_slot_init(&slot));
	ck_assert_ptr_null(mp_snap_slot_get(&slot));
	ck_assert_int_eq(mp_snap_slot_ns(&slot), 0);
	mp_snap_slot_set(&slot, a);
	ck_assert_int_eq(mp_snap_slot_ns(&slot), 10000000005LL);
	got = mp_snap_slot_get(&slot);
	ck_assert_ptr_eq(got, a);
	ck_assert_uint_eq(atomic_load(&a->refs), 2);
	/* a reader keeps the old one alive past a refresh; the ctime stays
	 * until the kernel's pages of the old one are gone, and never goes
	 * back */
	mp_snap_slot_set(&slot, b);
	ck_assert_int_eq(mp_snap_slot_ns(&slot), 10000000005LL);
	mp_snap_slot_settle(&slot, mp_snap_ns(b));
	ck_assert_int_eq(mp_snap_slot_ns(&slot), 20000000006LL);
	mp_snap_slot_settle(&slot, mp_snap_ns(a));
	ck_assert_int_eq(mp_snap_slot_ns(&slot), 20000000006LL);
	ck_assert_uint_eq(atomic_load(&a->refs), 1);
	ck_assert_int_eq(got->at.tv_sec, 10);
	mp_snap_put(got);
	mp_snap_put(NULL);
	mp_snap_slot_destroy(&slot);
}
END_TEST

/* ---- .f32 windows ------------------------------------------------------------ */

START_TEST(test_f32_window)
{
	struct opened o;
	struct mp_node n;
	struct mp_f32_window w;
	uint64_t start, qbytes;
	size_t bb;

	open_demo(&o, true);
	ck_assert(mp_tree_node(&o.tree, o.tree.first_f32_ino, &n));
	ck_assert_int_eq(n.kind, MP_NODE_F32);
	mp_pack_role_range(o.pack, n.object, n.role, &start, &qbytes);
	mp_f32_window(o.pack, &n, 0, 1, &w);
	bb = w.qt->block_bytes;
	ck_assert_uint_eq(w.pos, start);
	ck_assert_uint_eq(w.nblocks, 1);
	ck_assert_uint_eq(w.raw_len, bb);
	ck_assert_uint_eq(w.float_bytes, MP_F32_BLOCK_BYTES);
	ck_assert_uint_eq(w.skip, 0);
	/* inside the second block */
	mp_f32_window(o.pack, &n, MP_F32_BLOCK_BYTES + 6, 10, &w);
	ck_assert_uint_eq(w.pos, start + bb);
	ck_assert_uint_eq(w.nblocks, 1);
	ck_assert_uint_eq(w.skip, 6);
	/* across a block boundary: both blocks */
	mp_f32_window(o.pack, &n, MP_F32_BLOCK_BYTES - 4, 8, &w);
	ck_assert_uint_eq(w.pos, start);
	ck_assert_uint_eq(w.nblocks, 2);
	ck_assert_uint_eq(w.raw_len, 2 * bb);
	ck_assert_uint_eq(w.skip, MP_F32_BLOCK_BYTES - 4);
	/* the whole file: every quantized byte of the role */
	mp_f32_window(o.pack, &n, 0, mp_node_f32_size(o.pack, n.role), &w);
	ck_assert_uint_eq(w.raw_len, qbytes);
	close_demo(&o);
}
END_TEST

START_TEST(test_f32_read_decode)
{
	struct opened o;
	struct mp_node n;
	struct mp_f32_window w;
	unsigned char *raw;
	float *out;

	open_demo(&o, true);
	ck_assert(mp_tree_node(&o.tree, o.tree.first_f32_ino, &n));
	mp_f32_window(o.pack, &n, 0, 2 * MP_F32_BLOCK_BYTES, &w);
	raw = malloc(w.raw_len);
	out = malloc(w.float_bytes);
	ck_assert_ptr_nonnull(raw);
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(mp_pread_all(o.pack->file.fd, raw, w.raw_len, w.pos, NULL), 0);
	mp_f32_decode(&w, raw, out);
	for (size_t i = 0; i < w.float_bytes / sizeof *out; i++)
		ck_assert(out[i] == out[i]); /* not NaN: the demo pack is finite */
	free(raw);
	free(out);
	close_demo(&o);
}
END_TEST

static Suite *daemoncore_suite(void)
{
	Suite *s = suite_create("daemoncore");
	TCase *tc = tcase_create("scanreport");

	tcase_add_test(tc, test_describe_nonfinite);
	tcase_add_test(tc, test_describe_zero);
	tcase_add_test(tc, test_describe_truncates);
	tcase_add_test(tc, test_counts);
	tcase_add_test(tc, test_runs);
	tcase_add_test(tc, test_runs_differ);
	suite_add_tcase(s, tc);

	tc = tcase_create("mountinfo");
	tcase_add_test(tc, test_mountinfo_line);
	tcase_add_test(tc, test_mountinfo_escapes);
	tcase_add_test(tc, test_mountinfo_malformed);
	tcase_add_test(tc, test_mountinfo_find);
	tcase_add_test(tc, test_mountinfo_long_line);
	suite_add_tcase(s, tc);

	tc = tcase_create("attr");
	tcase_add_test(tc, test_blksize);
	tcase_add_test(tc, test_stat_nodes);
	tcase_add_test(tc, test_stat_snapshots);
	tcase_add_test(tc, test_statvfs);
	suite_add_tcase(s, tc);

	tc = tcase_create("packstate");
	tcase_add_test(tc, test_compare);
	tcase_add_test(tc, test_state_relinked);
	tcase_add_test(tc, test_state_changed_for_good);
	tcase_add_test(tc, test_state_lease_break);
	tcase_add_test(tc, test_lease_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("watchplan");
	tcase_add_test(tc, test_plan_refresh);
	tcase_add_test(tc, test_plan_file);
	tcase_add_test(tc, test_plan_change);
	tcase_add_test(tc, test_plan_lease_break);
	tcase_add_test(tc, test_timespec_add);
	suite_add_tcase(s, tc);

	tc = tcase_create("snapshot");
	tcase_add_test(tc, test_snapshot_render);
	tcase_add_test(tc, test_snapshot_many_layers);
	tcase_add_test(tc, test_snapshot_metrics_info);
	tcase_add_test(tc, test_snapshot_slot);
	suite_add_tcase(s, tc);

	tc = tcase_create("f32view");
	tcase_add_test(tc, test_f32_window);
	tcase_add_test(tc, test_f32_read_decode);
	suite_add_tcase(s, tc);
	return s;
}

const struct fx_suite_def fx_suite = {.make = daemoncore_suite};
