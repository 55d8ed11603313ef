/* check_build.c - the shared pack layout, the builder's sample choice and
 * canonical JSON, the GGUF reader's split keys, shard sets of one file. */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "writer/kimi/layout.h"
#include "writer/kimi/manifestwrite.h"
#include "base/pyjson.h"
#include "base/file.h"
#include "writer/kimi/build.h"
#include "writer/outputs.h"
#include "writer/gguf.h"
#include "pack/kimi/index.h"
#include "writer/kimi/shards.h"

/* The reference's Kimi-K3 numbers, from one layout computation. */
START_TEST(test_layout_k3)
{
	struct mp_layout l = {.role_bytes = {3612672, 3612672, 4730880}};
	struct mp_error err;

	ck_assert_int_eq(mp_layout_compute(&l, 896, 4096, 0, &err), MP_OK);
	ck_assert_uint_eq(l.index_count, 247296);
	ck_assert_uint_eq(l.index_end, 37589032);
	ck_assert_uint_eq(l.data_start, 37593088);
	ck_assert_uint_eq(l.object_bytes, 11956224);
	ck_assert_uint_eq(l.size, 985613049856ULL);
}
END_TEST

START_TEST(test_layout_entry)
{
	struct mp_layout l = {.role_bytes = {4096, 4096, 8192}};
	unsigned char raw[MP_ENTRY_SIZE];
	struct mp_entry e;
	struct mp_error err;

	ck_assert_int_eq(mp_layout_compute(&l, 2, 4096, 0, &err), MP_OK);
	mp_layout_entry(&l, 5, raw); /* layer 1, expert 1, down */
	mp_entry_decode(raw, &e);
	ck_assert_str_eq((const char *)e.name, "blk.1.ffn_down_exps.weight");
	ck_assert_int_eq(e.expert, 1);
	ck_assert_uint_eq(e.offset, l.data_start + 16384 + 8192);
	ck_assert_uint_eq(e.nbytes, 8192);
	mp_layout_entry(&l, 6, raw); /* layer 2, expert 0, up */
	mp_entry_decode(raw, &e);
	ck_assert_str_eq((const char *)e.name, "blk.2.ffn_up_exps.weight");
	ck_assert_int_eq(e.expert, 0);
	ck_assert_uint_eq(e.offset, l.data_start + 2 * 16384);
}
END_TEST

START_TEST(test_sample_index)
{
	static const uint64_t k3[6] = {0, 49459, 98918, 148377, 197836, 247295};

	for (uint64_t i = 0; i < 6; i++)
		ck_assert_uint_eq(mp_build_sample_index(i, 247296, 6), k3[i]);
	/* halves go to the even neighbour, as Python's round() */
	ck_assert_uint_eq(mp_build_sample_index(1, 4, 3), 2);  /* 1.5 */
	ck_assert_uint_eq(mp_build_sample_index(1, 6, 3), 2);  /* 2.5 */
	ck_assert_uint_eq(mp_build_sample_index(3, 4, 5), 2);  /* 2.25 */
	ck_assert_uint_eq(mp_build_sample_index(0, 552, 1), 0);
}
END_TEST

START_TEST(test_canonical)
{
	json_t *v = json_pack("{s:i, s:[s, b, n, b], s:{}}", "b", 1, "a", "x\001\"\\\n\xc3\xa9/",
			      1, 0, "c");
	char *text = mp_pyjson_canonical(v);

	/* lowercase \u00xx (jansson writes uppercase), raw UTF-8, no spaces */
	ck_assert_str_eq(text, "{\"a\":[\"x\\u0001\\\"\\\\\\n\xc3\xa9/\",true,null,false],"
			       "\"b\":1,\"c\":{}}");
	free(text);
	json_decref(v);
}
END_TEST

START_TEST(test_gguf_keys)
{
	struct mp_gguf_header h;
	struct mp_error err;
	char path[PATH_MAX];
	int fd = open(fx_data_path("gguf/valid.gguf", path, sizeof path), O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mp_gguf_read(fd, "valid.gguf", &h, NULL, NULL, &err), MP_OK);
	close(fd);
	ck_assert_int_eq(h.has_architecture, 1);
	ck_assert_str_eq(h.architecture, "deepseek2");
	ck_assert_int_eq(h.split_no.present, 0);
	ck_assert_int_eq(h.split_count.present, 0);
	ck_assert_uint_eq(h.alignment, 32);
	ck_assert_uint_eq(h.data_start % 32, 0);
	ck_assert_uint_gt(h.data_start, 0);
}
END_TEST

/* A single unsplit file is a set of one, judged like any set. */
START_TEST(test_single_file_set)
{
	struct mp_shard_set *set = NULL;
	struct mp_error err;
	char path[PATH_MAX];
	enum mp_err rc = mp_shards_open(fx_data_path("gguf/valid.gguf", path, sizeof path),
					&set, &err);

	ck_assert_ptr_nonnull(set);
	ck_assert_int_eq(rc, MP_E_GGUF_ARCH);
	ck_assert_int_eq(set->split, 0);
	ck_assert_uint_eq(set->count, 1);
	ck_assert_uint_eq(set->ntensors, 14);
	ck_assert_uint_eq(set->nproblems, 1);
	ck_assert_msg(strstr(set->problems[0].msg, "says \"deepseek2\"") != NULL, "%s",
		      set->problems[0].msg);
	ck_assert_str_eq(set->prefix, "valid");
	{
		struct mp_experts *ex = calloc(1, sizeof *ex);

		/* layers 3..92 are missing: one problem each, all reported */
		ck_assert_int_eq(mp_shards_experts(set, false, ex), MP_E_GGUF_EXPERTS);
		ck_assert_uint_eq(set->nproblems, 1 + 90 * 3);
		free(ex);
	}
	mp_shards_close(set);
}
END_TEST

/* A scratch directory for the output tests, removed by the caller. */
static char *scratch(void)
{
	static char dir[PATH_MAX];

	fx_mkdtemp(dir, sizeof dir);
	return dir;
}

/* Outputs are never written through a link, a FIFO or another name's inode. */
START_TEST(test_open_output)
{
	char *dir = scratch();
	char a[PATH_MAX + 8], lnk[PATH_MAX + 8], hard[PATH_MAX + 8], fifo[PATH_MAX + 8],
	     victim[PATH_MAX + 8];
	struct mp_error err;
	struct stat st, st2;
	int fd, fd2;

	snprintf(a, sizeof a, "%s/a", dir);
	snprintf(lnk, sizeof lnk, "%s/link", dir);
	snprintf(hard, sizeof hard, "%s/hard", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	snprintf(victim, sizeof victim, "%s/victim", dir);

	ck_assert_int_eq(mp_open_output(a, O_WRONLY | O_CREAT | O_EXCL, NULL, "pack",
					MP_E_PACK_IO, &fd, &st, &err), MP_OK);
	close(fd);
	/* the same file again, expected by identity */
	ck_assert_int_eq(mp_open_output(a, O_WRONLY, &st, "pack", MP_E_PACK_IO, &fd, &st2,
					&err), MP_OK);
	close(fd);
	/* a dangling link: refused, and its target is not created */
	ck_assert_int_eq(symlink(victim, lnk), 0);
	ck_assert_int_eq(mp_open_output(lnk, O_RDWR | O_CREAT, NULL, "lock", MP_E_PACK_IO,
					&fd, &st2, &err), MP_E_PACK_IO);
	ck_assert_int_eq(fd, -1);
	ck_assert_msg(strstr(err.msg, "symbolic link") != NULL, "%s", err.msg);
	ck_assert_int_ne(access(victim, F_OK), 0);
	/* a second hard link: refused */
	ck_assert_int_eq(link(a, hard), 0);
	ck_assert_int_eq(mp_open_output(a, O_WRONLY, NULL, "pack", MP_E_PACK_IO, &fd, &st2,
					&err), MP_E_PACK_IO);
	ck_assert_msg(strstr(err.msg, "more than one hard link") != NULL, "%s", err.msg);
	ck_assert_int_eq(unlink(hard), 0);
	/* another file under the expected name: refused */
	ck_assert_int_eq(unlink(a), 0);
	fd2 = open(hard, O_WRONLY | O_CREAT | O_EXCL, 0644); /* keeps the old inode busy */
	ck_assert_int_ge(fd2, 0);
	close(fd2);
	fd2 = open(a, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd2, 0);
	close(fd2);
	if (stat(a, &st2) == 0 && st2.st_ino != st.st_ino) {
		ck_assert_int_eq(mp_open_output(a, O_WRONLY, &st, "pack", MP_E_PACK_IO, &fd,
						&st2, &err), MP_E_PACK_IO);
		ck_assert_msg(strstr(err.msg, "not the file this build created") != NULL, "%s",
			      err.msg);
	}
	/* a FIFO: refused at once, never waited on */
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(mp_open_output(fifo, O_RDWR, NULL, "state", MP_E_PACK_IO, &fd, &st2,
					&err), MP_E_PACK_IO);
	ck_assert_msg(strstr(err.msg, "a FIFO") != NULL, "%s", err.msg);
	fx_rmtree(dir);
}
END_TEST

/* Outputs against inputs and each other: inode or resolved name. */
START_TEST(test_path_set)
{
	char *dir = scratch();
	char in[PATH_MAX + 16], other[PATH_MAX + 8], hard[PATH_MAX + 8],
	     spelled[2 * PATH_MAX + 8];
	struct mp_path_set ps;
	struct mp_error err;
	int fd;

	snprintf(in, sizeof in, "%s/shard.gguf", dir);
	snprintf(other, sizeof other, "%s/pack", dir);
	snprintf(hard, sizeof hard, "%s/hard", dir);
	snprintf(spelled, sizeof spelled, "%s/./shard.gguf", dir);
	fd = open(in, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(link(in, hard), 0);

	mp_path_set_init(&ps);
	ck_assert_int_eq(mp_path_set_input(&ps, in, "shard", &err), MP_OK);
	ck_assert_int_eq(mp_path_set_output(&ps, other, "--out", &err), MP_OK);
	ck_assert_int_eq(mp_path_set_check(&ps, &err), MP_OK);
	ck_assert_int_eq(mp_path_set_output(&ps, spelled, "--manifest", &err), MP_OK);
	ck_assert_int_eq(mp_path_set_check(&ps, &err), MP_E_USAGE);
	ck_assert_msg(strstr(err.msg, "(--manifest) is the same file as shard") != NULL, "%s",
		      err.msg);
	mp_path_set_free(&ps);

	mp_path_set_init(&ps);
	ck_assert_int_eq(mp_path_set_input(&ps, in, "shard", &err), MP_OK);
	ck_assert_int_eq(mp_path_set_output(&ps, hard, "--out", &err), MP_OK);
	ck_assert_int_eq(mp_path_set_check(&ps, &err), MP_E_USAGE);
	mp_path_set_free(&ps);

	/* two outputs that do not exist yet, one name */
	mp_path_set_init(&ps);
	ck_assert_int_eq(mp_path_set_output(&ps, other, "--out", &err), MP_OK);
	snprintf(spelled, sizeof spelled, "%s/../%s/pack", dir, strrchr(dir, '/') + 1);
	ck_assert_int_eq(mp_path_set_output(&ps, spelled, "--manifest", &err), MP_OK);
	ck_assert_int_eq(mp_path_set_check(&ps, &err), MP_E_USAGE);
	ck_assert_msg(strstr(err.msg, "is the same file as output") != NULL, "%s", err.msg);
	mp_path_set_free(&ps);
	fx_rmtree(dir);
}
END_TEST

/* ---- config.json: what build --config records, -o config= checks ---------- */

/* A config.json that mp_model_config_check accepts for ex. */
static void write_model_config(const char *path, const struct mp_experts *ex, bool nested)
{
	char text[1024];
	int n = snprintf(text, sizeof text,
			 "%s{\"num_hidden_layers\": 93, \"first_k_dense_replace\": 1, "
			 "\"num_experts\": %llu, \"num_experts_per_token\": %d, "
			 "\"num_shared_experts\": 2, \"hidden_size\": 7168, "
			 "\"routed_expert_hidden_size\": %llu, \"moe_intermediate_size\": %llu, "
			 "\"hidden_act\": \"situ\"}%s\n",
			 nested ? "{\"model_type\": \"k3\", \"text_config\": " : "",
			 (unsigned long long)ex->experts, MP_TOP_K,
			 (unsigned long long)ex->hidden, (unsigned long long)ex->inter,
			 nested ? "}" : "");

	ck_assert_int_lt(n, (int)sizeof text);
	fx_write_file(path, text, (size_t)n);
}

static void config_ok(const char *cfg, struct mp_shard_set *set, const struct mp_experts *ex,
		      struct mp_model_config *mc)
{
	size_t before = set->nproblems;
	struct mp_error err = {0};
	enum mp_err rc = mp_model_config_check(cfg, set, false, ex, mc, &err);

	ck_assert_msg(rc == MP_OK, "%s: %s%s", mp_err_name(rc), err.msg,
		      set->nproblems > before ? set->problems[before].msg : "");
}

/*
 * build --config records the SHA-256 of the config file's bytes, which is
 * what mp_pack_open(config_path) computes: a pack built for a config opens
 * with it, and not with the same config one byte longer.
 */
START_TEST(test_config_digest_build_to_open)
{
	const struct mp_experts ex = {.experts = 2, .hidden = 4096, .inter = 1024};
	struct fx f;
	struct mp_shard_set *set = NULL;
	struct mp_model_config mc;
	struct mp_error err;
	char gguf[PATH_MAX], cfg[PATH_MAX], hex[MP_SHA256_HEX], *text;
	struct mp_open_opts o = {.config_path = cfg};
	size_t len;

	fx_setup(&f, &(struct fx_pack_opts){.sparse = true});
	fx_path(&f, "config.json", cfg, sizeof cfg);
	mp_shards_open(fx_data_path("gguf/valid.gguf", gguf, sizeof gguf), &set, &err);
	ck_assert_ptr_nonnull(set);
	for (int nested = 0; nested < 2; nested++) {
		write_model_config(cfg, &ex, nested);
		config_ok(cfg, set, &ex, &mc);
		fx_sha256_file(cfg, hex);
		ck_assert_str_eq(mc.sha256, hex);
		fx_manifest_set_str(&f, "model.config_sha256", mc.sha256);
		ck_assert_int_eq(fx_open(&f, &o, &err), MP_OK);
	}
	/* the same values, one more byte: a different config to both */
	text = fx_read_file(cfg, &len);
	text[len] = ' '; /* over the NUL fx_read_file added */
	fx_write_file(cfg, text, len + 1);
	free(text);
	config_ok(cfg, set, &ex, &mc);
	ck_assert_str_ne(mc.sha256, hex);
	ck_assert_int_eq(fx_open(&f, &o, &err), MP_E_CONFIG_DIGEST);
	ck_assert_ptr_nonnull(strstr(err.msg, mc.sha256));
	mp_shards_close(set);
	fx_cleanup(&f);
}
END_TEST

static Suite *build_suite(void)
{
	Suite *s = suite_create("build");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_layout_k3);
	tcase_add_test(tc, test_layout_entry);
	tcase_add_test(tc, test_sample_index);
	tcase_add_test(tc, test_canonical);
	tcase_add_test(tc, test_gguf_keys);
	tcase_add_test(tc, test_single_file_set);
	tcase_add_test(tc, test_open_output);
	tcase_add_test(tc, test_path_set);
	tcase_add_test(tc, test_config_digest_build_to_open);
	suite_add_tcase(s, tc);
	return s;
}

const struct fx_suite_def fx_suite = {.make = build_suite};
