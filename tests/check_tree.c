/*
 * check_tree.c - the mounted tree's arithmetic (tree.c) and the read
 * counters and status.json report (stats.c).
 *
 * Expected inode numbers come from the layout documented in tree.h and the
 * man page (they are part of the NFS contract: handles must survive
 * restarts), not from the code under test.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "fixture.h"
#include "namespace/node.h"
#include "pack/pack.h"
#include "namespace/stats.h"
#include "namespace/tree.h"

/* Kimi K3: layers 1..92, 896 experts. */
#define K3_LAYERS 92
#define K3_EXPERTS 896

static uint32_t k3_ids[K3_LAYERS];
static const unsigned char digest_a[32] = {
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
};
static const unsigned char digest_b[32] = {
	0x12, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
};

static void init_ids(void)
{
	for (unsigned i = 0; i < K3_LAYERS; i++)
		k3_ids[i] = i + 1;
}

static void k3_tree(struct mp_tree *t)
{
	struct mp_error err = {0};

	init_ids();
	ck_assert_int_eq(mp_tree_init(t, k3_ids, K3_LAYERS, K3_EXPERTS, "kimi.pack",
				      digest_a, &err), MP_OK);
}

static void small_tree(struct mp_tree *t, uint64_t experts)
{
	struct mp_error err = {0};

	init_ids();
	ck_assert_int_eq(mp_tree_init(t, k3_ids, K3_LAYERS, experts, "demo.pack",
				      digest_a, &err), MP_OK);
}

/* Walk a path of names from the root; 0 when a component is missing. */
static uint64_t walk(const struct mp_tree *t, const char *path)
{
	char buf[1024], *save = NULL;
	uint64_t ino = MP_INO_ROOT;

	snprintf(buf, sizeof buf, "%s", path);
	for (char *c = strtok_r(buf, "/", &save); c && ino;
	     c = strtok_r(NULL, "/", &save))
		ino = mp_tree_lookup(t, ino, c);
	return ino;
}

/* ---- layout ------------------------------------------------------------ */

START_TEST(test_fixed_inodes)
{
	struct mp_tree t;

	k3_tree(&t);
	ck_assert_uint_eq(walk(&t, "manifest.json"), 2);
	ck_assert_uint_eq(walk(&t, "kimi.pack"), 3);
	ck_assert_uint_eq(walk(&t, "kimi.pack.manifest.json"), 4);
	ck_assert_uint_eq(walk(&t, "status.json"), 5);
	ck_assert_uint_eq(walk(&t, "layers"), 6);
	ck_assert_uint_eq(walk(&t, "layers/001"), 7);
	ck_assert_uint_eq(walk(&t, "layers/092"), 7 + 91);
	/* expert dirs follow the 92 layer dirs */
	ck_assert_uint_eq(walk(&t, "layers/001/000"), 99);
	ck_assert_uint_eq(walk(&t, "layers/002/005"), 99 + 896 + 5);
	/* then four files per object: up gate down object */
	ck_assert_uint_eq(walk(&t, "layers/001/000/up"), 99 + 82432);
	ck_assert_uint_eq(walk(&t, "layers/001/000/gate"), 99 + 82432 + 1);
	ck_assert_uint_eq(walk(&t, "layers/001/000/down"), 99 + 82432 + 2);
	ck_assert_uint_eq(walk(&t, "layers/001/000/object"), 99 + 82432 + 3);
	ck_assert_uint_eq(walk(&t, "layers/017/123/down"),
			  99 + 82432 + 4 * (16 * 896 + 123) + 2);
	ck_assert_uint_eq(walk(&t, "layers/092/895/object"), 412258);
	/* then room for three .f32 files per object, then metrics */
	ck_assert_uint_eq(t.first_f32_ino, 412259);
	ck_assert_uint_eq(walk(&t, "metrics"), 412259 + 3 * 82432);
	ck_assert_uint_eq(t.metrics_ino, 412259 + 3 * 82432);
	ck_assert_uint_eq(t.end_ino, 412259 + 3 * 82432 + 1);
	ck_assert_uint_eq(mp_tree_pack_files_end(&t), 412259);
	ck_assert_uint_eq(t.layer_width, 3);
	ck_assert_uint_eq(t.expert_width, 3);
}
END_TEST

/* Plain checks in the loop: ck_assert marks a point per call, too slow here. */
#define REQUIRE(cond, ...)                        \
	do {                                      \
		if (!(cond))                      \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

START_TEST(test_every_inode_round_trips)
{
	struct mp_tree t;
	char name[MP_TREE_NAME_MAX];

	k3_tree(&t);
	for (uint64_t ino = 1; ino < t.end_ino; ino++) {
		struct mp_node n;
		uint64_t parent;

		/* without dequant the .f32 files' numbers are nothing */
		if (ino >= t.first_f32_ino && ino < t.metrics_ino) {
			REQUIRE(!mp_tree_node(&t, ino, &n) && n.kind == MP_NODE_NONE,
				"ino %" PRIu64 " decoded without dequant", ino);
			continue;
		}
		REQUIRE(mp_tree_node(&t, ino, &n), "ino %" PRIu64 " not decoded", ino);
		REQUIRE(mp_tree_ino(&t, &n) == ino, "ino %" PRIu64 " not encoded", ino);
		REQUIRE(mp_tree_name(&t, ino, name, sizeof name), "ino %" PRIu64, ino);
		parent = mp_tree_parent(&t, ino);
		if (ino == MP_INO_ROOT) {
			REQUIRE(parent == MP_INO_ROOT, "root's parent");
			continue;
		}
		/* the name found in the parent leads back to the inode */
		REQUIRE(mp_tree_lookup(&t, parent, name) == ino,
			"ino %" PRIu64 " name %s", ino, name);
		if (n.kind == MP_NODE_EXPERT || n.kind == MP_NODE_ROLE ||
		    n.kind == MP_NODE_OBJECT)
			REQUIRE(n.object == n.layer_index * 896 + n.expert &&
				n.expert < 896 && n.layer_index < 92,
				"ino %" PRIu64 " fields", ino);
	}
}
END_TEST

START_TEST(test_decode_fields)
{
	struct mp_tree t;
	struct mp_node n;

	k3_tree(&t);
	ck_assert(mp_tree_node(&t, walk(&t, "layers/017/123/gate"), &n));
	ck_assert_int_eq(n.kind, MP_NODE_ROLE);
	ck_assert_uint_eq(n.layer_index, 16);
	ck_assert_uint_eq(n.expert, 123);
	ck_assert_uint_eq(n.object, 16 * 896 + 123);
	ck_assert_int_eq(n.role, MP_ROLE_GATE);

	ck_assert(mp_tree_node(&t, walk(&t, "layers/017/123/object"), &n));
	ck_assert_int_eq(n.kind, MP_NODE_OBJECT);
	ck_assert_int_eq(n.role, MP_ROLE_COUNT);

	ck_assert(mp_tree_node(&t, walk(&t, "layers/017"), &n));
	ck_assert_int_eq(n.kind, MP_NODE_LAYER);
	ck_assert_uint_eq(n.layer_index, 16);

	ck_assert(!mp_tree_node(&t, 0, &n));
	ck_assert_int_eq(n.kind, MP_NODE_NONE);
	ck_assert(!mp_tree_node(&t, t.end_ino, &n));
	ck_assert(!mp_tree_node(&t, UINT64_MAX, &n));
	ck_assert_uint_eq(mp_tree_parent(&t, t.end_ino), 0);
}
END_TEST

START_TEST(test_same_geometry_same_numbers)
{
	struct mp_tree a, b;
	struct mp_error err = {0};

	k3_tree(&a);
	/* another pack name and digest: numbers stay, generation changes */
	ck_assert_int_eq(mp_tree_init(&b, k3_ids, K3_LAYERS, K3_EXPERTS, "other",
				      digest_b, &err), MP_OK);
	ck_assert_uint_eq(walk(&a, "layers/050/400/down"),
			  walk(&b, "layers/050/400/down"));
	ck_assert_uint_eq(a.end_ino, b.end_ino);
	ck_assert_uint_ne(a.inode_generation, b.inode_generation);
}
END_TEST

START_TEST(test_generation_from_digest)
{
	struct mp_tree t, again;
	struct mp_error err = {0};
	unsigned char zero_low[32] = {0, 0, 0, 0, 0x05, 0, 0, 0};

	k3_tree(&t);
	/* first 8 bytes, little-endian */
	ck_assert_uint_eq(t.inode_generation, 0x8877665544332211ull);
	k3_tree(&again);
	ck_assert_uint_eq(again.inode_generation, t.inode_generation);

	/* the kernel keeps 32 bits: they must not be zero */
	ck_assert_int_eq(mp_tree_init(&t, k3_ids, K3_LAYERS, K3_EXPERTS, "p",
				      zero_low, &err), MP_OK);
	ck_assert_uint_ne((uint32_t)t.inode_generation, 0);
	ck_assert_uint_eq(t.inode_generation >> 32, 5);
}
END_TEST

/* ---- names --------------------------------------------------------------- */

START_TEST(test_strict_layer_names)
{
	static const char *const bad[] = {
		"1", "01", "0001", "+01", " 01", "01 ", "-01", "000", "093",
		"999", "abc", "", "0x1", "1.0", "001/", NULL,
	};
	struct mp_tree t;

	k3_tree(&t);
	ck_assert_uint_ne(walk(&t, "layers/001"), 0);
	for (unsigned i = 0; bad[i]; i++)
		ck_assert_msg(mp_tree_lookup(&t, MP_INO_LAYERS, bad[i]) == 0,
			      "layer name \"%s\" was accepted", bad[i]);
}
END_TEST

START_TEST(test_strict_expert_names)
{
	static const char *const bad[] = {
		"0", "00", "0000", "+00", "-0", "896", "900", "999", " 00",
		"1", "abc", "", NULL,
	};
	struct mp_tree t;
	uint64_t layer;

	k3_tree(&t);
	layer = walk(&t, "layers/005");
	ck_assert_uint_ne(mp_tree_lookup(&t, layer, "895"), 0);
	ck_assert_uint_ne(mp_tree_lookup(&t, layer, "000"), 0);
	for (unsigned i = 0; bad[i]; i++)
		ck_assert_msg(mp_tree_lookup(&t, layer, bad[i]) == 0,
			      "expert name \"%s\" was accepted", bad[i]);
	/* roles are exact too */
	ck_assert_uint_eq(walk(&t, "layers/005/001/UP"), 0);
	ck_assert_uint_eq(walk(&t, "layers/005/001/up "), 0);
	ck_assert_uint_eq(walk(&t, "layers/005/001/objects"), 0);
	/* nothing is found inside a file */
	ck_assert_uint_eq(mp_tree_lookup(&t, walk(&t, "layers/005/001/up"), "."), 0);
	ck_assert_uint_eq(mp_tree_lookup(&t, MP_INO_MANIFEST, "x"), 0);
}
END_TEST

START_TEST(test_expert_width)
{
	struct mp_tree t;
	char name[MP_TREE_NAME_MAX];

	small_tree(&t, 1000); /* 000 .. 999 */
	ck_assert_uint_eq(t.expert_width, 3);
	ck_assert_uint_ne(walk(&t, "layers/001/999"), 0);
	ck_assert_uint_eq(walk(&t, "layers/001/0999"), 0);

	small_tree(&t, 1001); /* 0000 .. 1000 */
	ck_assert_uint_eq(t.expert_width, 4);
	ck_assert_uint_ne(walk(&t, "layers/001/1000"), 0);
	ck_assert_uint_ne(walk(&t, "layers/001/0007"), 0);
	ck_assert_uint_eq(walk(&t, "layers/001/007"), 0);
	ck_assert(mp_tree_name(&t, walk(&t, "layers/001/0007"), name, sizeof name));
	ck_assert_str_eq(name, "0007");

	small_tree(&t, 2);
	ck_assert_uint_eq(t.expert_width, 3);
	ck_assert_uint_ne(walk(&t, "layers/092/001/object"), 0);
	ck_assert_uint_eq(walk(&t, "layers/092/002"), 0);
}
END_TEST

START_TEST(test_layer_width_and_sparse_ids)
{
	static const uint32_t ids[] = {3, 40, 1200};
	struct mp_tree t;
	struct mp_error err = {0};

	ck_assert_int_eq(mp_tree_init(&t, ids, 3, 2, "p", digest_a, &err), MP_OK);
	ck_assert_uint_eq(t.layer_width, 4);
	ck_assert_uint_eq(walk(&t, "layers/0003"), MP_INO_FIRST_LAYER);
	ck_assert_uint_eq(walk(&t, "layers/0040"), MP_INO_FIRST_LAYER + 1);
	ck_assert_uint_eq(walk(&t, "layers/1200"), MP_INO_FIRST_LAYER + 2);
	ck_assert_uint_eq(walk(&t, "layers/003"), 0);
	ck_assert_uint_eq(walk(&t, "layers/0004"), 0);
}
END_TEST

START_TEST(test_dot_and_dotdot)
{
	struct mp_tree t;
	uint64_t expert, up;

	k3_tree(&t);
	expert = walk(&t, "layers/042/017");
	up = walk(&t, "layers/042/017/up");
	ck_assert_uint_eq(mp_tree_lookup(&t, MP_INO_ROOT, "."), MP_INO_ROOT);
	ck_assert_uint_eq(mp_tree_lookup(&t, MP_INO_ROOT, ".."), MP_INO_ROOT);
	ck_assert_uint_eq(mp_tree_lookup(&t, expert, "."), expert);
	ck_assert_uint_eq(mp_tree_lookup(&t, expert, ".."), walk(&t, "layers/042"));
	ck_assert_uint_eq(walk(&t, "layers/042/.."), MP_INO_LAYERS);
	ck_assert_uint_eq(walk(&t, "layers/.."), MP_INO_ROOT);
	ck_assert_uint_eq(mp_tree_parent(&t, up), expert);
	ck_assert_uint_eq(mp_tree_parent(&t, MP_INO_STATUS), MP_INO_ROOT);
}
END_TEST

START_TEST(test_pack_name_rules)
{
	static const char *const bad[] = {
		"layers", "status.json", "manifest.json", "metrics", "", ".", "..", "a/b",
		NULL,
	};
	struct mp_tree t;
	struct mp_error err;
	char longname[300];

	init_ids();
	for (unsigned i = 0; bad[i]; i++) {
		memset(&err, 0, sizeof err);
		ck_assert_msg(mp_tree_init(&t, k3_ids, 1, 1, bad[i], digest_a, &err) ==
			      MP_E_USAGE, "pack name \"%s\" accepted", bad[i]);
		ck_assert_msg(strstr(err.msg, "invalid usage") && err.code == MP_E_USAGE,
			      "message: %s", err.msg);
	}
	/* "<name>.manifest.json" must fit in NAME_MAX (255) */
	memset(longname, 'x', sizeof longname);
	longname[255 - 14] = '\0';
	ck_assert_int_eq(mp_tree_init(&t, k3_ids, 1, 1, longname, digest_a, &err),
			 MP_OK);
	ck_assert_uint_eq(strlen(t.client_manifest_name), 255);
	longname[255 - 14] = 'x';
	longname[256 - 14] = '\0';
	ck_assert_int_eq(mp_tree_init(&t, k3_ids, 1, 1, longname, digest_a, &err),
			 MP_E_USAGE);
	/* names that merely resemble the fixed ones are fine */
	ck_assert_int_eq(mp_tree_init(&t, k3_ids, 1, 1, "status", digest_a, &err),
			 MP_OK);
	ck_assert_str_eq(t.client_manifest_name, "status.manifest.json");
}
END_TEST

START_TEST(test_ids_must_ascend)
{
	static const uint32_t down[] = {1, 3, 2};
	static const uint32_t dup[] = {1, 1};
	struct mp_tree t;
	struct mp_error err = {0};

	ck_assert_int_eq(mp_tree_init(&t, down, 3, 2, "p", digest_a, &err), MP_E_USAGE);
	ck_assert_ptr_nonnull(strstr(err.msg, "active_moe_layer_ids[2]"));
	ck_assert_int_eq(mp_tree_init(&t, dup, 2, 2, "p", digest_a, &err), MP_E_USAGE);
}
END_TEST

START_TEST(test_too_many_inodes)
{
	static const uint32_t ids[] = {1, 2};
	struct mp_tree t;
	struct mp_error err = {0};

	ck_assert_int_eq(mp_tree_init(&t, ids, 2, UINT64_MAX / 8, "p", digest_a, &err),
			 MP_E_USAGE);
}
END_TEST

/* ---- listings -------------------------------------------------------------- */

/* List a directory into names[] (up to max); returns the number of entries. */
static uint64_t list(const struct mp_tree *t, uint64_t dir,
		     char names[][MP_TREE_NAME_MAX], uint64_t *inos, uint64_t max)
{
	uint64_t i = 0, ino;
	char name[MP_TREE_NAME_MAX];

	while (mp_tree_dirent(t, dir, i, &ino, name, sizeof name)) {
		if (i < max) {
			snprintf(names[i], MP_TREE_NAME_MAX, "%s", name);
			inos[i] = ino;
		}
		i++;
		ck_assert_uint_le(i, 10000);
	}
	return i;
}

START_TEST(test_list_root_and_expert)
{
	static char names[16][MP_TREE_NAME_MAX];
	static const char *const root[] = {
		".", "..", "manifest.json", "kimi.pack", "kimi.pack.manifest.json",
		"status.json", "layers", "metrics",
	};
	static const char *const files[] = {".", "..", "up", "gate", "down", "object"};
	uint64_t inos[16], expert;
	struct mp_tree t;

	k3_tree(&t);
	ck_assert_uint_eq(list(&t, MP_INO_ROOT, names, inos, 16), 8);
	for (unsigned i = 0; i < 8; i++) {
		ck_assert_str_eq(names[i], root[i]);
		ck_assert_uint_eq(inos[i], mp_tree_lookup(&t, MP_INO_ROOT, root[i]));
	}
	ck_assert_uint_eq(inos[7], t.metrics_ino);
	ck_assert_uint_eq(mp_tree_child_count(&t, MP_INO_ROOT), 6);

	expert = walk(&t, "layers/033/444");
	ck_assert_uint_eq(list(&t, expert, names, inos, 16), 6);
	for (unsigned i = 0; i < 6; i++) {
		ck_assert_str_eq(names[i], files[i]);
		ck_assert_uint_eq(inos[i], mp_tree_lookup(&t, expert, files[i]));
	}
	/* a file has no entries */
	ck_assert_uint_eq(list(&t, walk(&t, "layers/033/444/up"), names, inos, 16), 0);
	ck_assert_uint_eq(list(&t, 0, names, inos, 16), 0);
}
END_TEST

START_TEST(test_list_layers_and_layer)
{
	static char names[1000][MP_TREE_NAME_MAX];
	static uint64_t inos[1000];
	struct mp_tree t;
	char want[16];
	uint64_t layer;

	k3_tree(&t);
	ck_assert_uint_eq(list(&t, MP_INO_LAYERS, names, inos, 1000), 2 + 92);
	for (unsigned i = 0; i < 92; i++) {
		snprintf(want, sizeof want, "%03u", i + 1);
		ck_assert_str_eq(names[2 + i], want);
	}
	ck_assert_uint_eq(inos[1], MP_INO_ROOT);

	layer = walk(&t, "layers/064");
	ck_assert_uint_eq(list(&t, layer, names, inos, 1000), 2 + 896);
	ck_assert_uint_eq(inos[0], layer);
	ck_assert_uint_eq(inos[1], MP_INO_LAYERS);
	for (unsigned e = 0; e < 896; e++) {
		snprintf(want, sizeof want, "%03u", e);
		ck_assert_str_eq(names[2 + e], want);
		ck_assert_uint_eq(inos[2 + e], mp_tree_lookup(&t, layer, want));
	}
	ck_assert_uint_eq(mp_tree_nlink(&t, layer), 2 + 896);
	ck_assert_uint_eq(mp_tree_nlink(&t, MP_INO_LAYERS), 2 + 92);
	ck_assert_uint_eq(mp_tree_nlink(&t, walk(&t, "layers/064/001")), 2);
	ck_assert_uint_eq(mp_tree_nlink(&t, walk(&t, "layers/064/001/up")), 1);
	ck_assert_uint_eq(mp_tree_nlink(&t, MP_INO_ROOT), 3);
}
END_TEST

/* Room for the .f32 files too: 8 * L * E inodes and more must not wrap. */
START_TEST(test_too_many_inodes_with_dequant)
{
	static const uint32_t ids[] = {1, 2};
	struct mp_tree t;
	struct mp_error err = {0};

	ck_assert_int_eq(mp_tree_init(&t, ids, 2, UINT64_MAX / 16, "p", digest_a, &err),
			 MP_E_USAGE);
	ck_assert_ptr_nonnull(strstr(err.msg, "too many inodes"));
	/* the largest geometry accepted still numbers every .f32 file */
	ck_assert_int_eq(mp_tree_init(&t, ids, 1, UINT64_MAX / 16, "p", digest_a, &err),
			 MP_OK);
	mp_tree_add_dequant(&t);
	ck_assert_uint_gt(t.end_ino, t.first_f32_ino);
	ck_assert_uint_eq(t.metrics_ino - t.first_f32_ino, 3 * (UINT64_MAX / 16));
	ck_assert_uint_eq(t.end_ino, t.metrics_ino + 1);
}
END_TEST

/* ---- -o dequant: the .f32 files ------------------------------------------ */

START_TEST(test_dequant_numbers_after_the_rest)
{
	struct mp_tree t;

	k3_tree(&t);
	mp_tree_add_dequant(&t);
	mp_tree_add_dequant(&t); /* twice is once */
	/* the numbers of test_fixed_inodes, unchanged */
	ck_assert_uint_eq(walk(&t, "layers/001/000"), 99);
	ck_assert_uint_eq(walk(&t, "layers/001/000/up"), 99 + 82432);
	ck_assert_uint_eq(walk(&t, "layers/017/123/down"),
			  99 + 82432 + 4 * (16 * 896 + 123) + 2);
	ck_assert_uint_eq(walk(&t, "layers/092/895/object"), 412258);
	/* then three per object, from the old end on */
	ck_assert_uint_eq(t.first_f32_ino, 412259);
	ck_assert_uint_eq(walk(&t, "layers/001/000/up.f32"), 412259);
	ck_assert_uint_eq(walk(&t, "layers/001/000/gate.f32"), 412260);
	ck_assert_uint_eq(walk(&t, "layers/001/000/down.f32"), 412261);
	ck_assert_uint_eq(walk(&t, "layers/017/123/gate.f32"),
			  412259 + 3 * (16 * 896 + 123) + 1);
	ck_assert_uint_eq(walk(&t, "layers/092/895/down.f32"), 412259 + 3 * 82432 - 1);
	/* metrics keeps its number: right after the last .f32 file */
	ck_assert_uint_eq(walk(&t, "metrics"), 412259 + 3 * 82432);
	ck_assert_uint_eq(t.end_ino, 412259 + 3 * 82432 + 1);
	ck_assert_uint_eq(mp_tree_pack_files_end(&t), 412259 + 3 * 82432);
	/* no other name ends in .f32 */
	ck_assert_uint_eq(walk(&t, "layers/001/000/object.f32"), 0);
	ck_assert_uint_eq(walk(&t, "layers/001/000/up.f3"), 0);
	ck_assert_uint_eq(walk(&t, "layers/001/000/up.f32x"), 0);
	ck_assert_uint_eq(walk(&t, "layers/001/000/.f32"), 0);
	ck_assert_uint_eq(walk(&t, "layers/001.f32"), 0);
}
END_TEST

START_TEST(test_dequant_keeps_every_number)
{
	struct mp_tree plain, dq;
	char a[MP_TREE_NAME_MAX], b[MP_TREE_NAME_MAX];

	k3_tree(&plain);
	k3_tree(&dq);
	mp_tree_add_dequant(&dq);
	/* every inode of the plain tree is the same node, name and parent */
	for (uint64_t ino = 1; ino < plain.end_ino; ino++) {
		struct mp_node n, m;

		if (ino == plain.first_f32_ino)
			ino = plain.metrics_ino; /* the room of the .f32 files */
		REQUIRE(mp_tree_node(&plain, ino, &n) && mp_tree_node(&dq, ino, &m),
			"ino %" PRIu64, ino);
		REQUIRE(n.kind == m.kind && n.object == m.object && n.role == m.role &&
			n.layer_index == m.layer_index && n.expert == m.expert,
			"ino %" PRIu64 " decodes differently", ino);
		REQUIRE(mp_tree_name(&plain, ino, a, sizeof a) &&
			mp_tree_name(&dq, ino, b, sizeof b) && strcmp(a, b) == 0,
			"ino %" PRIu64 " named %s and %s", ino, a, b);
		REQUIRE(mp_tree_parent(&plain, ino) == mp_tree_parent(&dq, ino),
			"ino %" PRIu64 " parent", ino);
	}
	/* the plain tree has no .f32 file: not by name, not by number */
	ck_assert_uint_eq(walk(&plain, "layers/001/000/up.f32"), 0);
	ck_assert_uint_eq(plain.metrics_ino, dq.metrics_ino);
	ck_assert(!mp_tree_node(&plain, dq.first_f32_ino, &(struct mp_node){0}));
	ck_assert(!mp_tree_node(&plain, dq.metrics_ino - 1, &(struct mp_node){0}));
	ck_assert_uint_eq(mp_tree_child_count(&plain, walk(&plain, "layers/005/006")), 4);
	ck_assert_uint_eq(mp_tree_child_count(&dq, walk(&dq, "layers/005/006")), 7);
	{
		struct mp_node f = {.kind = MP_NODE_F32, .object = 3, .role = MP_ROLE_UP};

		ck_assert_uint_eq(mp_tree_ino(&plain, &f), 0);
		ck_assert_uint_eq(mp_tree_ino(&dq, &f), dq.first_f32_ino + 9);
	}
}
END_TEST

START_TEST(test_dequant_round_trips)
{
	struct mp_tree t;
	char name[MP_TREE_NAME_MAX];
	uint64_t f32 = 0;

	k3_tree(&t);
	mp_tree_add_dequant(&t);
	for (uint64_t ino = t.first_f32_ino; ino < t.metrics_ino; ino++) {
		struct mp_node n;
		uint64_t parent;

		REQUIRE(mp_tree_node(&t, ino, &n) && n.kind == MP_NODE_F32,
			"ino %" PRIu64 " not an .f32 file", ino);
		REQUIRE(mp_tree_ino(&t, &n) == ino, "ino %" PRIu64 " not encoded", ino);
		REQUIRE(n.object == n.layer_index * 896 + n.expert && n.expert < 896 &&
			n.layer_index < 92 && (unsigned)n.role < MP_ROLE_COUNT,
			"ino %" PRIu64 " fields", ino);
		REQUIRE(mp_tree_name(&t, ino, name, sizeof name), "ino %" PRIu64, ino);
		parent = mp_tree_parent(&t, ino);
		REQUIRE(parent == t.first_expert_ino + n.object, "ino %" PRIu64, ino);
		REQUIRE(mp_tree_lookup(&t, parent, name) == ino,
			"ino %" PRIu64 " name %s", ino, name);
		REQUIRE(mp_tree_nlink(&t, ino) == 1, "ino %" PRIu64 " nlink", ino);
		f32++;
	}
	ck_assert_uint_eq(f32, 3 * 82432);
	ck_assert(mp_tree_node(&t, t.metrics_ino, &(struct mp_node){0}));
	ck_assert(!mp_tree_node(&t, t.end_ino, &(struct mp_node){0}));
}
END_TEST

START_TEST(test_dequant_listing)
{
	static char names[16][MP_TREE_NAME_MAX];
	static const char *const files[] = {
		".", "..", "up", "gate", "down", "object", "up.f32", "gate.f32", "down.f32",
	};
	uint64_t inos[16], expert;
	struct mp_tree t;

	k3_tree(&t);
	mp_tree_add_dequant(&t);
	expert = walk(&t, "layers/033/444");
	ck_assert_uint_eq(list(&t, expert, names, inos, 16), 9);
	for (unsigned i = 0; i < 9; i++) {
		ck_assert_str_eq(names[i], files[i]);
		ck_assert_uint_eq(inos[i], mp_tree_lookup(&t, expert, files[i]));
	}
	/* the rest of the tree lists as before */
	ck_assert_uint_eq(list(&t, MP_INO_ROOT, names, inos, 16), 8);
	ck_assert_uint_eq(list(&t, walk(&t, "layers/033/444/up.f32"), names, inos, 16), 0);
}
END_TEST

START_TEST(test_tree_of_real_pack)
{
	struct fx f;
	struct mp_pack *pack = NULL;
	struct mp_error err = {0};
	struct mp_tree t;
	struct fx_pack_opts o = {.experts = 3};

	fx_setup(&f, &o);
	ck_assert_int_eq(fx_open_pack(&f, NULL, &pack, &err), MP_OK);
	ck_assert_int_eq(mp_tree_init_pack(&t, pack, &err), MP_OK);
	ck_assert_str_eq(t.pack_name, "demo.pack");
	ck_assert_uint_eq(walk(&t, "demo.pack"), MP_INO_PACK);
	ck_assert_uint_eq(walk(&t, "demo.pack.manifest.json"), MP_INO_CLIENT_MANIFEST);
	ck_assert_uint_eq(t.layer_count, pack->m.layer_count);
	ck_assert_uint_eq(t.metrics_ino, 7 + 92 + 5 * 92 * 3 + 3 * 92 * 3);
	ck_assert_uint_eq(t.end_ino, t.metrics_ino + 1);
	ck_assert_mem_eq(&t.inode_generation, pack->index_digest, 8); /* little-endian host */
	mp_pack_close(pack);
	fx_cleanup(&f);
}
END_TEST


/* ---- files' sizes and extended attributes (node.c) -------------------------- */

/* The attributes each kind carries, as moepackfs(1) lists them. */
static const char *const role_xattrs[] = {
	"user.moepack.dtype", "user.moepack.dtype_id", "user.moepack.shape",
	"user.moepack.offset", "user.moepack.nbytes", "user.moepack.tensor",
	"user.moepack.expert", "user.moepack.layer", "user.moepack.generation",
};
static const char *const f32_xattrs[] = {
	"user.moepack.dtype", "user.moepack.dtype_id", "user.moepack.shape",
	"user.moepack.nbytes", "user.moepack.tensor", "user.moepack.expert",
	"user.moepack.layer", "user.moepack.generation", "user.moepack.source_dtype",
	"user.moepack.source_offset", "user.moepack.source_nbytes",
};
static const char *const layer_xattrs[] = {"user.moepack.expert_reads"};

static const char *dtype_of(enum mp_role r)
{
	return r == MP_ROLE_DOWN ? "Q3_K" : "Q2_K";
}

/* Bytes per 256-weight super-block of Q2_K and Q3_K (GGML's block sizes). */
static uint64_t block_bytes_of(enum mp_role r)
{
	return r == MP_ROLE_DOWN ? 110 : 84;
}

/* What an attribute must say, worked out from the pack's lookup and the
 * documented formats rather than from node.c. */
static void expected_value(const struct mp_pack *p, const struct mp_node *n,
			   const char *name, char *out, size_t cap)
{
	uint32_t layer = p->m.layer_ids[n->layer_index];
	bool object = n->kind == MP_NODE_OBJECT, f32 = n->kind == MP_NODE_F32;
	enum mp_role first = object ? MP_ROLE_UP : n->role;
	enum mp_role last = object ? MP_ROLE_DOWN : n->role;
	uint64_t off[MP_ROLE_COUNT] = {0}, len[MP_ROLE_COUNT] = {0}, total = 0;
	struct mp_error err = {0};
	size_t used = 0;
	const char *attr = name + strlen("user.moepack.");

	for (int r = first; r <= (int)last; r++) {
		ck_assert_int_eq(mp_pack_lookup(p, layer, n->expert, (enum mp_role)r, &off[r],
						&len[r], &err), MP_OK);
		total += len[r];
	}
	out[0] = '\0';
	if (strcmp(attr, "dtype") == 0 && f32) {
		snprintf(out, cap, "F32");
	} else if (strcmp(attr, "dtype_id") == 0 && f32) {
		snprintf(out, cap, "0");
	} else if (strcmp(attr, "dtype") == 0 || strcmp(attr, "dtype_id") == 0 ||
		   strcmp(attr, "tensor") == 0) {
		for (int r = first; r <= (int)last; r++) {
			const char *sep = r > (int)first ? "," : "";

			if (attr[0] == 't')
				used += (size_t)snprintf(out + used, cap - used,
							 "%sblk.%u.ffn_%s_exps.weight", sep,
							 layer, mp_role_name((enum mp_role)r));
			else if (strcmp(attr, "dtype") == 0)
				used += (size_t)snprintf(out + used, cap - used, "%s%s", sep,
							 dtype_of((enum mp_role)r));
			else
				used += (size_t)snprintf(out + used, cap - used, "%s%d", sep,
							 r == MP_ROLE_DOWN ? 11 : 10);
		}
	} else if (strcmp(attr, "offset") == 0) {
		snprintf(out, cap, "%" PRIu64, off[first]);
	} else if (strcmp(attr, "nbytes") == 0) {
		snprintf(out, cap, "%" PRIu64,
			 f32 ? len[first] / block_bytes_of(first) * 256 * 4 : total);
	} else if (strcmp(attr, "source_dtype") == 0) {
		snprintf(out, cap, "%s", dtype_of(first));
	} else if (strcmp(attr, "source_offset") == 0) {
		snprintf(out, cap, "%" PRIu64, off[first]);
	} else if (strcmp(attr, "source_nbytes") == 0) {
		snprintf(out, cap, "%" PRIu64, len[first]);
	} else if (strcmp(attr, "expert") == 0) {
		snprintf(out, cap, "%" PRIu64, n->expert);
	} else if (strcmp(attr, "layer") == 0) {
		snprintf(out, cap, "%" PRIu32, layer);
	} else if (strcmp(attr, "generation") == 0) {
		snprintf(out, cap, "%" PRIu64,
			 mp_object_generation(p->m.index_sha256, layer, n->expert));
	} else {
		/* shape: the manifest's logical shapes, a list of three for an object */
		char *s = out;

		if (object)
			s += snprintf(s, cap, "[");
		for (int r = first; r <= (int)last; r++) {
			const struct mp_role_info *ri = &p->m.roles[r];

			s += snprintf(s, cap - (size_t)(s - out), "%s[", r > (int)first ? ", " : "");
			for (unsigned i = 0; i < ri->shape_len; i++)
				s += snprintf(s, cap - (size_t)(s - out), "%s%" PRIu64,
					      i ? ", " : "", ri->shape[i]);
			s += snprintf(s, cap - (size_t)(s - out), "]");
		}
		if (object)
			snprintf(s, cap - (size_t)(s - out), "]");
	}
}

/* Every size a caller can pass: the length, ERANGE, or the bytes. */
static void check_every_size(size_t len)
{
	ck_assert_int_eq(mp_xattr_fit(0, len), 0);
	for (size_t size = 1; size < len; size++)
		ck_assert_int_eq(mp_xattr_fit(size, len), ERANGE);
	for (size_t size = len ? len : 1; size <= len + 2; size++)
		ck_assert_int_eq(mp_xattr_fit(size, len), -1);
}

static void check_node_xattrs(const struct mp_pack *p, const struct mp_node *n)
{
	const char *const *want = n->kind == MP_NODE_F32 ? f32_xattrs : role_xattrs;
	size_t nwant = n->kind == MP_NODE_F32 ? 11 : 9;
	char list[MP_XATTR_LIST_MAX], expect[MP_XATTR_LIST_MAX];
	size_t len, elen = 0;

	if (n->kind == MP_NODE_LAYER) {
		want = layer_xattrs;
		nwant = 1;
	} else if (n->kind != MP_NODE_ROLE && n->kind != MP_NODE_OBJECT &&
		   n->kind != MP_NODE_F32) {
		nwant = 0;
	}
	for (size_t i = 0; i < nwant; i++) {
		memcpy(expect + elen, want[i], strlen(want[i]) + 1);
		elen += strlen(want[i]) + 1;
	}
	len = mp_xattr_list(p, n->kind, list);
	ck_assert_uint_eq(len, elen);
	ck_assert_mem_eq(list, expect, len);
	check_every_size(len);
	ck_assert_int_eq(mp_xattr_find(p, n->kind, "user.moepack.nope"), MP_XA_COUNT);
	ck_assert_int_eq(mp_xattr_find(p, n->kind, "user.moepack."), MP_XA_COUNT);
	if (n->kind == MP_NODE_F32)
		ck_assert_int_eq(mp_xattr_find(p, n->kind, "user.moepack.offset"), MP_XA_COUNT);
	if (n->kind == MP_NODE_ROLE || n->kind == MP_NODE_OBJECT)
		ck_assert_int_eq(mp_xattr_find(p, n->kind, "user.moepack.source_dtype"),
				 MP_XA_COUNT);
	if (n->kind == MP_NODE_LAYER) {
		char value[16];

		/* counters: the FUSE layer answers it (mount.test, metrics.test) */
		ck_assert_int_eq(mp_xattr_find(p, n->kind, layer_xattrs[0]), MP_XA_EXPERT_READS);
		ck_assert_uint_eq(mp_xattr_value(p, n, MP_XA_EXPERT_READS, value,
						 sizeof value), 0);
		return;
	}

	for (size_t i = 0; i < nwant; i++) {
		enum mp_xattr id = mp_xattr_find(p, n->kind, want[i]);
		char value[MP_XATTR_VALUE_MAX], wanted[MP_XATTR_VALUE_MAX], cut[MP_XATTR_VALUE_MAX];
		size_t vlen;

		ck_assert_int_ne(id, MP_XA_COUNT);
		ck_assert_str_eq(mp_xattr_name(id), want[i]);
		vlen = mp_xattr_value(p, n, id, value, sizeof value);
		expected_value(p, n, want[i], wanted, sizeof wanted);
		ck_assert_msg(strcmp(value, wanted) == 0, "%s: '%s', want '%s'", want[i],
			      value, wanted);
		ck_assert_uint_eq(vlen, strlen(wanted));
		check_every_size(vlen);
		/* a short buffer is cut, never overrun, and still a string */
		for (size_t cap = 1; cap <= vlen; cap++) {
			memset(cut, 'x', sizeof cut);
			mp_xattr_value(p, n, id, cut, cap);
			ck_assert_uint_eq(strlen(cut), cap - 1);
			ck_assert_int_eq(memcmp(cut, wanted, cap - 1), 0);
			ck_assert_int_eq(cut[cap], 'x');
		}
	}
}

/* A real 3-expert pack, open, and its tree with the .f32 files. */
static struct mp_pack *open_real_tree(struct fx *f, struct mp_tree *t)
{
	struct fx_pack_opts o = {.experts = 3};
	struct mp_pack *pack = NULL;
	struct mp_error err = {0};

	fx_setup(f, &o);
	ck_assert_int_eq(fx_open_pack(f, NULL, &pack, &err), MP_OK);
	ck_assert_int_eq(mp_tree_init_pack(t, pack, &err), MP_OK);
	mp_tree_add_dequant(t);
	return pack;
}

START_TEST(test_every_xattr_of_every_file)
{
	struct fx f;
	struct mp_tree t;
	struct mp_pack *pack = open_real_tree(&f, &t);
	unsigned seen[MP_NODE_METRICS + 1] = {0};

	for (uint64_t ino = MP_INO_ROOT; ino < t.end_ino; ino++) {
		struct mp_node n;

		ck_assert(mp_tree_node(&t, ino, &n));
		seen[n.kind]++;
		check_node_xattrs(pack, &n);
	}
	ck_assert_uint_eq(seen[MP_NODE_ROLE], 92 * 3 * 3);
	ck_assert_uint_eq(seen[MP_NODE_OBJECT], 92 * 3);
	ck_assert_uint_eq(seen[MP_NODE_F32], 92 * 3 * 3);
	ck_assert_uint_eq(seen[MP_NODE_METRICS], 1);
	mp_pack_close(pack);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_node_sizes)
{
	struct fx f;
	struct mp_tree t;
	struct mp_pack *pack = open_real_tree(&f, &t);
	struct mp_error err = {0};

	for (uint64_t ino = MP_INO_ROOT; ino < t.end_ino; ino++) {
		struct mp_node n;
		uint64_t off, len, want = 65536;

		ck_assert(mp_tree_node(&t, ino, &n));
		switch (n.kind) {
		case MP_NODE_MANIFEST:
			want = pack->file.manifest_len;
			break;
		case MP_NODE_PACK:
			want = pack->file.size;
			break;
		case MP_NODE_CLIENT_MANIFEST:
			want = 4321;
			break;
		case MP_NODE_ROLE:
			ck_assert_int_eq(mp_pack_lookup(pack, pack->m.layer_ids[n.layer_index],
							n.expert, n.role, &off, &len, &err), MP_OK);
			want = len;
			break;
		case MP_NODE_OBJECT:
			want = pack->m.roles[0].expert_bytes + pack->m.roles[1].expert_bytes +
			       pack->m.roles[2].expert_bytes;
			break;
		case MP_NODE_F32:
			want = pack->m.roles[n.role].expert_bytes / block_bytes_of(n.role) * 1024;
			break;
		default:
			break;
		}
		{
			struct mp_node_sizes sizes = {4321, 111, 222};

			if (n.kind == MP_NODE_STATUS)
				want = 111;
			else if (n.kind == MP_NODE_METRICS)
				want = 222;
			else if (mp_node_is_dir(n.kind))
				want = MP_DIR_SIZE;
			ck_assert_uint_eq(mp_node_size(pack, &n, &sizes), want);
		}
	}
	mp_pack_close(pack);
	fx_cleanup(&f);
}
END_TEST

/* Every offset a readdir can resume from gives the entry a full listing has
 * there, and the end stays the end. */
START_TEST(test_listing_every_offset)
{
	struct mp_tree t;
	char names[64][MP_TREE_NAME_MAX];
	uint64_t inos[64];
	uint64_t dirs[4];

	small_tree(&t, 3);
	mp_tree_add_dequant(&t);
	dirs[0] = MP_INO_ROOT;
	dirs[1] = walk(&t, "layers/001");
	dirs[2] = walk(&t, "layers/092/002");
	dirs[3] = walk(&t, "layers");
	for (unsigned d = 0; d < 4; d++) {
		uint64_t count = list(&t, dirs[d], names, inos, 64);

		ck_assert_uint_ne(dirs[d], 0);
		ck_assert_uint_eq(count, mp_tree_child_count(&t, dirs[d]) + 2);
		for (uint64_t from = 0; from < count; from++) {
			char name[MP_TREE_NAME_MAX];
			uint64_t ino;

			ck_assert(mp_tree_dirent(&t, dirs[d], from, &ino, name, sizeof name));
			if (from < 64) {
				ck_assert_uint_eq(ino, inos[from]);
				ck_assert_str_eq(name, names[from]);
			}
		}
		for (uint64_t past = count; past < count + 3; past++) {
			uint64_t ino;
			char name[MP_TREE_NAME_MAX];

			ck_assert(!mp_tree_dirent(&t, dirs[d], past, &ino, name, sizeof name));
		}
	}
}
END_TEST

/* ---- counters and status.json ----------------------------------------------- */

static struct mp_status_info status_info(const uint32_t *ids)
{
	static const char warnings[2][MP_MSG_MAX] = {"first warning", "second"};
	struct mp_status_info info = {
		.pack_path = "/data/kimi.pack",
		.manifest_path = "/data/kimi.pack.manifest.json",
		.mountpoint = "/mnt/kimi",
		.verify = "index",
		.full_digest_checked = false,
		.index_sha256 = "ab12",
		.inode_generation = 0x8877665544332211ull,
		.mounted_at = 1700000000,
		.layer_ids = ids,
		.nwarnings = 2,
		.warnings = warnings,
		.hottest = 3,
	};
	return info;
}

static json_t *render(const struct mp_stats *s, const struct mp_status_info *info)
{
	struct mp_error err = {0};
	json_error_t jerr;
	char *text = NULL;
	size_t len = 0;
	json_t *root;

	ck_assert_int_eq(mp_stats_render(s, info, &text, &len, &err), MP_OK);
	ck_assert_uint_eq(strlen(text), len);
	ck_assert_int_eq(text[len - 1], '\n');
	root = json_loads(text, 0, &jerr);
	ck_assert_msg(root != NULL, "status.json does not parse: %s", jerr.text);
	free(text);
	return root;
}

static json_int_t geti(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	ck_assert_msg(json_is_integer(v), "%s is not an integer", key);
	return json_integer_value(v);
}

START_TEST(test_status_fresh)
{
	static const uint32_t ids[] = {1, 2, 3};
	struct mp_stats s;
	struct mp_error err = {0};
	struct mp_status_info info = status_info(ids);
	json_t *root, *layers;

	ck_assert_int_eq(mp_stats_init(&s, 3, 4, &err), MP_OK);
	root = render(&s, &info);
	ck_assert_str_eq(json_string_value(json_object_get(root, "validation")), "ok");
	ck_assert_str_eq(json_string_value(json_object_get(root, "index_sha256")),
			 "ab12");
	ck_assert_str_eq(json_string_value(json_object_get(root, "mounted_at")),
			 "2023-11-14T22:13:20Z");
	ck_assert_str_eq(json_string_value(json_object_get(root, "generation")),
			 "9833440827789222417");
	ck_assert_str_eq(json_string_value(json_object_get(root, "pack")),
			 "/data/kimi.pack");
	ck_assert_str_eq(json_string_value(json_object_get(root, "verify")), "index");
	ck_assert(json_is_false(json_object_get(root, "full_digest_checked")));
	ck_assert(json_is_false(json_object_get(root, "dequant")));
	ck_assert_uint_eq(json_array_size(json_object_get(root, "warnings")), 2);
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(root, "warnings"), 1)), "second");
	layers = json_object_get(root, "layers");
	ck_assert_uint_eq(json_array_size(layers), 3);
	ck_assert_int_eq(geti(json_array_get(layers, 2), "layer"), 3);
	ck_assert_int_eq(geti(json_array_get(layers, 2), "reads"), 0);
	json_decref(root);
	/* -o dequant and the payload scan are said */
	info.dequant = true;
	info.verify = "full+payload";
	root = render(&s, &info);
	ck_assert(json_is_true(json_object_get(root, "dequant")));
	ck_assert_str_eq(json_string_value(json_object_get(root, "verify")), "full+payload");
	ck_assert_uint_eq(json_array_size(json_object_get(root, "hottest_experts")), 0);
	ck_assert_int_eq(geti(json_object_get(root, "counters"), "reads"), 0);
	json_decref(root);
	mp_stats_free(&s);
}
END_TEST

/* Longest inputs: paths of PATH_MAX bytes that escape 4x, full warnings. */
static char *long_path(unsigned char fill)
{
	char *p = fx_repeat((char[]){(char)fill, '\0'}, 4095);

	p[0] = '/';
	return p;
}

static json_t *render_limited(const struct mp_stats *s, struct mp_status_info *info,
			      size_t *len_out)
{
	struct mp_error err = {0};
	json_error_t jerr;
	char *text = NULL;
	size_t len = 0;
	json_t *root;

	info->max_len = 65536;
	ck_assert_int_eq(mp_stats_render(s, info, &text, &len, &err), MP_OK);
	ck_assert_uint_le(len, 65536);
	ck_assert_uint_eq(strlen(text), len);
	root = json_loads(text, 0, &jerr);
	ck_assert_msg(root != NULL, "status.json does not parse: %s", jerr.text);
	free(text);
	*len_out = len;
	return root;
}

START_TEST(test_status_bounded)
{
	static char warnings[MP_MAX_WARNINGS][MP_MSG_MAX];
	static char daemon[MP_STATUS_DAEMON_WARNINGS][MP_MSG_MAX];
	static uint32_t ids[4000];
	struct mp_status_change change = {.changed = true, .old_size = 1, .new_size = 2};
	struct mp_stats s;
	struct mp_error err = {0};
	struct mp_status_info info;
	char *pack = long_path(0xff), *manifest = long_path('"'), *mnt = long_path('\\');
	const char *got;
	json_t *root;
	size_t len;

	for (unsigned i = 0; i < 4000; i++)
		ids[i] = i + 1;
	/* control bytes: each becomes \xNN (4 bytes), then \\xNN in JSON */
	for (unsigned i = 0; i < MP_MAX_WARNINGS; i++)
		memset(warnings[i], 0x01, MP_MSG_MAX - 1);
	for (unsigned i = 0; i < MP_STATUS_DAEMON_WARNINGS; i++)
		memset(daemon[i], 0x7f, MP_MSG_MAX - 1);

	/* 93 layers (Kimi K3), every counter busy, the longest paths and warnings */
	ck_assert_int_eq(mp_stats_init(&s, 93, 896, &err), MP_OK);
	for (uint64_t o = 0; o < 93 * 896; o++)
		mp_stats_count_object(&s, o, UINT64_MAX / 100000);
	info = status_info(ids);
	info.pack_path = pack;
	info.manifest_path = manifest;
	info.mountpoint = mnt;
	info.nwarnings = MP_MAX_WARNINGS;
	info.warnings = (const char (*)[MP_MSG_MAX])warnings;
	info.ndaemon_warnings = MP_STATUS_DAEMON_WARNINGS;
	info.daemon_warnings = (const char (*)[MP_MSG_MAX])daemon;
	info.hottest = MP_STATUS_HOTTEST_MAX;
	info.change = &change;
	root = render_limited(&s, &info, &len);
	ck_assert_ptr_null(json_object_get(root, "truncated"));
	got = json_string_value(json_object_get(root, "pack"));
	ck_assert_ptr_nonnull(got);
	ck_assert_uint_lt(strlen(got), MP_STATUS_PATH_MAX);
	ck_assert_str_eq(got + strlen(got) - 3, "...");
	ck_assert(strncmp(got, "/\\xff\\xff", 9) == 0);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "warnings")),
			  MP_MAX_WARNINGS + MP_STATUS_DAEMON_WARNINGS);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "layers")), 93);
	ck_assert_str_eq(json_string_value(json_object_get(root, "pack_state")), "changed");
	json_decref(root);
	mp_stats_free(&s);

	/* too many layers for 64 KiB: the short report, still valid JSON */
	ck_assert_int_eq(mp_stats_init(&s, 4000, 2, &err), MP_OK);
	mp_stats_count_object(&s, 7999, 5);
	root = render_limited(&s, &info, &len);
	ck_assert(json_is_true(json_object_get(root, "truncated")));
	ck_assert_ptr_nonnull(json_string_value(json_object_get(root, "truncated_reason")));
	ck_assert_ptr_null(json_object_get(root, "layers"));
	ck_assert_str_eq(json_string_value(json_object_get(root, "pack_state")), "changed");
	ck_assert_int_eq(geti(json_object_get(root, "counters"), "reads"), 1);
	ck_assert_int_eq(geti(json_object_get(root, "counters"), "bytes"), 5);
	json_decref(root);
	mp_stats_free(&s);
	free(pack);
	free(manifest);
	free(mnt);
}
END_TEST

START_TEST(test_status_counts)
{
	static const uint32_t ids[] = {5, 6, 9};
	struct mp_stats s;
	struct mp_error err = {0};
	struct mp_status_info info = status_info(ids);
	json_t *root, *layers, *hot, *counters;

	ck_assert_int_eq(mp_stats_init(&s, 3, 4, &err), MP_OK);
	/* object = layer_index * 4 + expert */
	for (int i = 0; i < 5; i++)
		mp_stats_count_object(&s, 2 * 4 + 3, 4096); /* layer 9, expert 3 */
	for (int i = 0; i < 2; i++)
		mp_stats_count_object(&s, 0 * 4 + 1, 100);  /* layer 5, expert 1 */
	for (int i = 0; i < 2; i++)
		mp_stats_count_object(&s, 1 * 4 + 0, 10);   /* layer 6, expert 0 */
	mp_stats_count_object(&s, 1 * 4 + 2, 1);            /* layer 6, expert 2 */
	mp_stats_count_pack(&s, 1000);
	mp_stats_count_error(&s);
	mp_stats_count_reply(&s, true);
	mp_stats_count_reply(&s, true);
	mp_stats_count_reply(&s, false);
	info.max_request = 1032192;
	info.readahead_kb = 1008;
	info.splice_write = true;

	root = render(&s, &info);
	layers = json_object_get(root, "layers");
	ck_assert_int_eq(geti(json_array_get(layers, 0), "layer"), 5);
	ck_assert_int_eq(geti(json_array_get(layers, 0), "reads"), 2);
	ck_assert_int_eq(geti(json_array_get(layers, 0), "bytes"), 200);
	ck_assert_int_eq(geti(json_array_get(layers, 1), "reads"), 3);
	ck_assert_int_eq(geti(json_array_get(layers, 1), "bytes"), 21);
	ck_assert_int_eq(geti(json_array_get(layers, 2), "reads"), 5);
	ck_assert_int_eq(geti(json_array_get(layers, 2), "bytes"), 5 * 4096);

	/* top 3 of 4 read experts; the tie (2 reads) keeps layer order */
	hot = json_object_get(root, "hottest_experts");
	ck_assert_uint_eq(json_array_size(hot), 3);
	ck_assert_int_eq(geti(json_array_get(hot, 0), "layer"), 9);
	ck_assert_int_eq(geti(json_array_get(hot, 0), "expert"), 3);
	ck_assert_int_eq(geti(json_array_get(hot, 0), "reads"), 5);
	ck_assert_int_eq(geti(json_array_get(hot, 1), "layer"), 5);
	ck_assert_int_eq(geti(json_array_get(hot, 1), "expert"), 1);
	ck_assert_int_eq(geti(json_array_get(hot, 2), "layer"), 6);
	ck_assert_int_eq(geti(json_array_get(hot, 2), "expert"), 0);
	ck_assert_int_eq(geti(json_array_get(hot, 2), "reads"), 2);

	counters = json_object_get(root, "counters");
	ck_assert_int_eq(geti(counters, "reads"), 10);
	ck_assert_int_eq(geti(counters, "bytes"), 5 * 4096 + 200 + 21);
	ck_assert_int_eq(geti(counters, "pack_file_reads"), 1);
	ck_assert_int_eq(geti(counters, "pack_file_bytes"), 1000);
	ck_assert_int_eq(geti(counters, "read_errors"), 1);
	ck_assert_int_eq(geti(counters, "splice_replies"), 2);
	ck_assert_int_eq(geti(counters, "copy_replies"), 1);
	ck_assert_int_eq(geti(json_object_get(root, "fuse"), "max_request"), 1032192);
	ck_assert_int_eq(geti(json_object_get(root, "fuse"), "readahead_kb"), 1008);
	ck_assert(json_is_true(json_object_get(json_object_get(root, "fuse"),
						"splice_write")));
	ck_assert(json_is_false(json_object_get(json_object_get(root, "fuse"),
						 "export_support")));
	json_decref(root);

	/* asking for more than were read lists only the read ones */
	info.hottest = 50;
	root = render(&s, &info);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "hottest_experts")), 4);
	json_decref(root);
	info.hottest = 0;
	root = render(&s, &info);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "hottest_experts")), 0);
	json_decref(root);
	mp_stats_free(&s);
}
END_TEST

#define COUNT_THREADS 4
#define COUNT_EACH 120000

static void *count_many(void *arg)
{
	struct mp_stats *s = arg;

	for (int i = 0; i < COUNT_EACH; i++)
		mp_stats_count_object(s, (uint64_t)i % 6, 3);
	return NULL;
}

START_TEST(test_counters_are_atomic)
{
	static const uint32_t ids[] = {1, 2};
	struct mp_stats s;
	struct mp_error err = {0};
	uint64_t reads = 0, bytes = 0, objects = 0;

	ck_assert_int_eq(mp_stats_init(&s, 2, 3, &err), MP_OK);
	fx_run_threads(COUNT_THREADS, count_many, &s, 0);
	for (int l = 0; l < 2; l++) {
		reads += atomic_load(&s.layer_reads[l]);
		bytes += atomic_load(&s.layer_bytes[l]);
	}
	for (int o = 0; o < 6; o++)
		objects += atomic_load(&s.object_reads[o]);
	ck_assert_uint_eq(reads, (uint64_t)COUNT_THREADS * COUNT_EACH);
	ck_assert_uint_eq(objects, (uint64_t)COUNT_THREADS * COUNT_EACH);
	ck_assert_uint_eq(bytes, 3ull * COUNT_THREADS * COUNT_EACH);
	ck_assert_uint_eq(atomic_load(&s.layer_reads[0]),
			  (uint64_t)COUNT_THREADS * COUNT_EACH / 2);
	(void)ids;
	mp_stats_free(&s);
}
END_TEST

START_TEST(test_counter_size_overflow)
{
	struct mp_stats s;
	struct mp_error err = {0};

	ck_assert_int_eq(mp_stats_init(&s, UINT64_MAX / 2, 3, &err), MP_E_NOMEM);
	ck_assert_ptr_nonnull(strstr(err.msg, "out of memory"));
}
END_TEST

START_TEST(test_iso8601)
{
	char buf[32];

	mp_iso8601_utc(0, buf, sizeof buf);
	ck_assert_str_eq(buf, "1970-01-01T00:00:00Z");
	mp_iso8601_utc(951782400, buf, sizeof buf); /* a leap day */
	ck_assert_str_eq(buf, "2000-02-29T00:00:00Z");
}
END_TEST

static Suite *tree_suite(void)
{
	Suite *s = suite_create("tree");
	TCase *tc = tcase_create("tree");

	tcase_add_test(tc, test_fixed_inodes);
	tcase_add_test(tc, test_every_inode_round_trips);
	tcase_add_test(tc, test_decode_fields);
	tcase_add_test(tc, test_same_geometry_same_numbers);
	tcase_add_test(tc, test_generation_from_digest);
	tcase_add_test(tc, test_strict_layer_names);
	tcase_add_test(tc, test_strict_expert_names);
	tcase_add_test(tc, test_expert_width);
	tcase_add_test(tc, test_layer_width_and_sparse_ids);
	tcase_add_test(tc, test_dot_and_dotdot);
	tcase_add_test(tc, test_pack_name_rules);
	tcase_add_test(tc, test_ids_must_ascend);
	tcase_add_test(tc, test_too_many_inodes);
	tcase_add_test(tc, test_too_many_inodes_with_dequant);
	tcase_add_test(tc, test_dequant_numbers_after_the_rest);
	tcase_add_test(tc, test_dequant_keeps_every_number);
	tcase_add_test(tc, test_dequant_round_trips);
	tcase_add_test(tc, test_dequant_listing);
	tcase_add_test(tc, test_list_root_and_expert);
	tcase_add_test(tc, test_list_layers_and_layer);
	tcase_add_test(tc, test_tree_of_real_pack);
	suite_add_tcase(s, tc);

	tc = tcase_create("node");
	tcase_add_test(tc, test_every_xattr_of_every_file);
	tcase_add_test(tc, test_node_sizes);
	tcase_add_test(tc, test_listing_every_offset);
	suite_add_tcase(s, tc);

	tc = tcase_create("stats");
	tcase_add_test(tc, test_status_fresh);
	tcase_add_test(tc, test_status_counts);
	tcase_add_test(tc, test_status_bounded);
	tcase_add_test(tc, test_counters_are_atomic);
	tcase_add_test(tc, test_counter_size_overflow);
	tcase_add_test(tc, test_iso8601);
	suite_add_tcase(s, tc);
	return s;
}

const struct fx_suite_def fx_suite = {.make = tree_suite};
