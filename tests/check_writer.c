/* check_writer.c - what the pack writers share: the pack layout
 * (layout.h), the manifest writers (manifestwrite.h, and pyjson.h for
 * SGLang's), the expert pack's records and identities (pack/epformat.h,
 * pack/epident.h) and the writing of output files (outputs.h,
 * base/outfile.h). */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/outfile.h"
#include "fixture.h"
#include "pack/expertpack/format.h"
#include "pack/expertpack/ident.h"
#include "pack/kimi/index.h"
#include "writer/kimi/layout.h"
#include "writer/kimi/manifestwrite.h"
#include "writer/expertpack/plan.h"
#include "writer/outputs.h"
#include "base/pyjson.h"

#define OBJECTS (92 * 2) /* layers 1..92, two experts each */

/* A small pack: 2 experts of 4 + 4 + 8 KiB, a gap of 100 bytes. */
static void small_layout(struct mp_layout *l)
{
	struct mp_error err;

	memset(l, 0, sizeof *l);
	l->role_bytes[MP_ROLE_UP] = 4096;
	l->role_bytes[MP_ROLE_GATE] = 4096;
	l->role_bytes[MP_ROLE_DOWN] = 8192;
	mp_layout_set_shapes(l, 512, 256);
	ck_assert_int_eq(mp_layout_compute(l, 2, 4096, 100, &err), MP_OK);
}

START_TEST(test_layout_small)
{
	struct mp_layout l;
	uint64_t index_end = MP_HEADER_SIZE + (uint64_t)MP_ENTRY_SIZE * OBJECTS * 3;
	uint64_t data_start = (index_end + 4095) / 4096 * 4096;

	small_layout(&l);
	ck_assert_uint_eq(l.experts, 2);
	ck_assert_uint_eq(l.alignment, 4096);
	ck_assert_uint_eq(l.objects, OBJECTS);
	ck_assert_uint_eq(l.index_count, OBJECTS * 3);
	ck_assert_uint_eq(l.index_end, index_end);
	ck_assert_uint_eq(l.data_start, data_start);
	ck_assert_uint_eq(l.data_start % 4096, 0);
	ck_assert_uint_eq(l.object_bytes, 16384);
	ck_assert_uint_eq(l.gap, 4096); /* rounded up to the alignment */
	/* no gap after the last object */
	ck_assert_uint_eq(l.size, data_start + OBJECTS * 16384 + (OBJECTS - 1) * 4096);
	ck_assert_uint_eq(mp_layout_object_offset(&l, 0), data_start);
	ck_assert_uint_eq(mp_layout_object_offset(&l, 1), data_start + 16384 + 4096);
	ck_assert_uint_eq(mp_layout_object_offset(&l, OBJECTS - 1) + 16384, l.size);
	/* GGUF ne[] order: up and gate rows are hidden long, down rows inter */
	ck_assert_uint_eq(l.role_shape[MP_ROLE_UP][0], 512);
	ck_assert_uint_eq(l.role_shape[MP_ROLE_GATE][1], 256);
	ck_assert_uint_eq(l.role_shape[MP_ROLE_DOWN][0], 256);
	ck_assert_uint_eq(l.role_shape[MP_ROLE_DOWN][1], 512);
}
END_TEST

START_TEST(test_layout_entries)
{
	struct mp_layout l;
	unsigned char raw[MP_ENTRY_SIZE];
	struct mp_entry e;

	small_layout(&l);
	mp_layout_entry(&l, 3 * 3 + 1, raw); /* object 3: layer 2, expert 1, gate */
	mp_entry_decode(raw, &e);
	ck_assert_str_eq((const char *)e.name, "blk.2.ffn_gate_exps.weight");
	ck_assert_int_eq(e.expert, 1);
	ck_assert_uint_eq(e.offset, mp_layout_object_offset(&l, 3) + 4096);
	ck_assert_uint_eq(e.nbytes, 4096);
	mp_layout_entry(&l, l.index_count - 1, raw); /* the last: layer 92's down */
	mp_entry_decode(raw, &e);
	ck_assert_str_eq((const char *)e.name, "blk.92.ffn_down_exps.weight");
	ck_assert_uint_eq(e.offset + e.nbytes, l.size);
}
END_TEST

START_TEST(test_layout_limits)
{
	struct mp_layout l = {.role_bytes = {4096, 4096, 8192}};
	struct mp_error err;

	ck_assert_int_eq(mp_layout_compute(&l, 2, 4096, UINT64_MAX, &err), MP_E_USAGE);
	ck_assert_str_eq(err.msg, "invalid usage: --gap 18446744073709551615 is too large");
	l.role_bytes[0] = 1ULL << 43; /* 184 objects of 8 TiB: past 1 PiB */
	ck_assert_int_eq(mp_layout_compute(&l, 2, 4096, 0, &err), MP_E_USAGE);
	ck_assert_ptr_nonnull(strstr(err.msg, "the pack would be larger than 1125899906842624"));
	l.role_bytes[0] = UINT64_MAX;
	ck_assert_int_eq(mp_layout_compute(&l, 2, 4096, 0, &err), MP_E_USAGE);
	ck_assert_str_eq(err.msg, "invalid usage: an expert is larger than 2^64 bytes");
}
END_TEST

START_TEST(test_canonical_order)
{
	/* code point order is UTF-8 byte order: "B" < "a" < "\xc3\xa9" */
	json_t *v = json_pack("{s:i, s:i, s:{s:[], s:{}}, s:s}", "a", -3, "B", 2, "\xc3\xa9",
			      "y", "x", "t", "tab\there\x1f");
	char *text = mp_pyjson_canonical(v);

	ck_assert_str_eq(text, "{\"B\":2,\"a\":-3,\"t\":\"tab\\there\\u001f\","
			       "\"\xc3\xa9\":{\"x\":{},\"y\":[]}}");
	free(text);
	json_decref(v);
}
END_TEST

START_TEST(test_canonical_sha256)
{
	json_t *v = json_object();
	char hex[MP_SHA256_HEX];

	ck_assert_int_eq(mp_mw_canonical_sha256(v, hex), 0);
	/* sha256 of the two bytes "{}" */
	ck_assert_str_eq(hex, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
	json_decref(v);
}
END_TEST

/* The demo's inventory, as its source.inventory_sha256 covers it. */
START_TEST(test_inventory)
{
	static const struct mp_mw_summary s = {"moepack-demo", 0, 0, 0};
	int bad = 0;
	json_t *inv = mp_mw_inventory(&s, json_array(), json_array(), &bad);
	char *text = mp_pyjson_canonical(inv);
	char *dump = json_dumps(inv, JSON_COMPACT | JSON_PRESERVE_ORDER);

	ck_assert_int_eq(bad, 0);
	ck_assert_str_eq(text, "{\"shards\":[],\"summary\":{\"architecture\":\"moepack-demo\","
			       "\"full_source_hashes\":false,\"shard_count\":0,"
			       "\"tensor_count\":0,\"total_bytes\":0},\"tensors\":[]}");
	/* built in the order mkdemo's manifest lists it */
	ck_assert_str_eq(dump, "{\"summary\":{\"architecture\":\"moepack-demo\","
			       "\"full_source_hashes\":false,\"shard_count\":0,"
			       "\"tensor_count\":0,\"total_bytes\":0},\"shards\":[],\"tensors\":[]}");
	free(dump);
	free(text);
	json_decref(inv);
}
END_TEST

/* The keys of obj, in its order, joined by ','. */
static void keys_of(const json_t *obj, char *out, size_t len)
{
	const char *key;
	json_t *val;

	out[0] = '\0';
	json_object_foreach((json_t *)obj, key, val) {
		if (out[0])
			strncat(out, ",", len - strlen(out) - 1);
		strncat(out, key, len - strlen(out) - 1);
	}
}

START_TEST(test_manifest_parts)
{
	static const struct mp_mw_summary s = {"x", 1, 2, 3};
	struct mp_layout l;
	int bad = 0;
	char keys[512];
	json_t *inv, *root;

	small_layout(&l);
	inv = mp_mw_inventory(&s, json_array(), json_array(), &bad);
	root = mp_mw_root(mp_mw_model(93, 2, 16, "cfg", &bad), mp_mw_expert_pack(&l, "idx", &bad),
			  inv, "inv", &bad);
	ck_assert_int_eq(bad, 0);
	keys_of(root, keys, sizeof keys);
	ck_assert_str_eq(keys, "format,complete,hard_constraints,model,expert_pack,source");
	keys_of(json_object_get(root, "hard_constraints"), keys, sizeof keys);
	ck_assert_str_eq(keys, "all_selected_experts_must_execute,expert_pruning_allowed,"
			       "requantization_allowed,top_k,top_k_is_immutable");
	keys_of(json_object_get(root, "model"), keys, sizeof keys);
	ck_assert_str_eq(keys, "num_hidden_layers,num_experts,num_experts_per_token,"
			       "active_moe_layer_ids,config_sha256");
	keys_of(json_object_get(root, "expert_pack"), keys, sizeof keys);
	ck_assert_str_eq(keys, "path,size,physical_role_order,roles,object_bytes,data_start,"
			       "alignment,index_sha256");
	keys_of(json_object_get(root, "source"), keys, sizeof keys);
	ck_assert_str_eq(keys, "summary,shards,tensors,inventory_sha256");
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(root, "model"),
							  "active_moe_layer_ids")), 92);
	/* the source is a copy: the caller's inventory is left as it was */
	ck_assert_ptr_null(json_object_get(inv, "inventory_sha256"));
	json_decref(root);
	json_decref(inv);
}
END_TEST

START_TEST(test_manifest_text)
{
	struct mp_layout l;
	int bad = 0;
	json_t *root;
	char *text, *sorted;

	small_layout(&l);
	root = json_object();
	mp_mw_put(root, "b", json_true(), &bad);
	mp_mw_put(root, "expert_pack", mp_mw_expert_pack(&l, "idx", &bad), &bad);
	mp_mw_put(root, "a", json_null(), &bad);
	ck_assert_int_eq(bad, 0);
	text = mp_mw_text(root, "/p\xff.pack", false);
	sorted = mp_mw_text(root, "/p.pack", true);
	/* two-space indent, insertion order, the path as surrogate escapes */
	ck_assert_ptr_nonnull(strstr(text, "{\n  \"b\": true,\n  \"expert_pack\": {\n"
					   "    \"path\": \"/p\\udcff.pack\",\n    \"size\": "));
	ck_assert_ptr_nonnull(strstr(text, "\n  },\n  \"a\": null\n}\n"));
	ck_assert_ptr_nonnull(strstr(sorted, "{\n  \"a\": null,\n  \"b\": true,\n"));
	ck_assert_ptr_nonnull(strstr(sorted, "\"path\": \"/p.pack\",\n"));
	free(text);
	free(sorted);
	json_decref(root);
}
END_TEST

static char *scratch_dir(void)
{
	char dir[PATH_MAX];

	fx_mkdtemp(dir, sizeof dir);
	return strdup(dir);
}

static char *read_text(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

START_TEST(test_write_atomic)
{
	char *dir = scratch_dir();
	char *path = mp_path_join(dir, "m.json"), *other = mp_path_join(dir, "other");
	char *tmp = mp_path_with_suffix(path, ".tmp"), *missing = mp_path_join(dir, "no/m");
	struct stat st;
	struct mp_error err;
	FILE *f = fopen(other, "w");

	fputs("keep", f);
	fclose(f);
	/* a link at the name is replaced, never written through; one at
	 * the temporary's name is a leftover and goes */
	ck_assert_int_eq(symlink(other, path), 0);
	ck_assert_int_eq(symlink(other, tmp), 0);
	ck_assert_int_eq(mp_output_write_atomic(path, MP_TMP_SIBLING, MP_E_PACK_IO, "{}\n", 3, &err), MP_OK);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_str_eq(read_text(path), "{}\n");
	ck_assert_str_eq(read_text(other), "keep");
	ck_assert_int_ne(lstat(tmp, &st), 0);
	ck_assert_int_eq(mp_output_write_atomic(missing, MP_TMP_SIBLING, MP_E_PACK_IO, "x", 1,
						&err), MP_E_PACK_IO);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot write file "));
	unlink(path);
	unlink(other);
	rmdir(dir);
	free(missing);
	free(tmp);
	free(other);
	free(path);
	free(dir);
}
END_TEST

/* Entries of dir, . and .. not counted. */
static unsigned entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* A private temporary, as -o metrics_file and the seal write it: replaced
 * whole, links at the name or the temporary's first name never followed,
 * and nothing left behind on failure. */
START_TEST(test_write_atomic_private)
{
	char *dir = scratch_dir();
	char *path = mp_path_join(dir, "m.prom"), *victim = mp_path_join(dir, "victim");
	char *missing = mp_path_join(dir, "nope/m.prom"), planted[PATH_MAX + 64];
	struct mp_error err;
	struct stat st;
	FILE *f = fopen(victim, "w");

	fputs("keep", f);
	fclose(f);
	ck_assert_int_eq(mp_output_write_atomic(path, MP_TMP_PRIVATE, MP_E_PACK_IO, "a 1\n", 4,
						&err), MP_OK);
	ck_assert_int_eq(mp_output_write_atomic(path, MP_TMP_PRIVATE, MP_E_PACK_IO, "b 2\n", 4,
						&err), MP_OK);
	ck_assert_str_eq(read_text(path), "b 2\n");
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644);
	ck_assert_uint_eq(entries(dir), 2);

	unlink(path);
	ck_assert_int_eq(symlink(victim, path), 0);
	/* every name a predictable scheme (.NAME.tmp-PID-N, N < 1000) would
	 * try, taken by someone else in advance: the write still happens */
	for (int n = 0; n < 1000; n++) {
		snprintf(planted, sizeof planted, "%s/.m.prom.tmp-%ld-%d", dir, (long)getpid(), n);
		ck_assert_int_eq(symlink(victim, planted), 0);
	}
	ck_assert_int_eq(mp_output_write_atomic(path, MP_TMP_PRIVATE, MP_E_PACK_IO, "c 3\n", 4,
						&err), MP_OK);
	ck_assert_str_eq(read_text(victim), "keep");
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	for (int n = 0; n < 1000; n++) {
		snprintf(planted, sizeof planted, "%s/.m.prom.tmp-%ld-%d", dir, (long)getpid(), n);
		ck_assert_int_eq(lstat(planted, &st), 0); /* someone else's: left alone */
		unlink(planted);
	}

	/* a directory at the name: refused at the rename, the temporary gone */
	unlink(path);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(mp_output_write_atomic(path, MP_TMP_PRIVATE, MP_E_PACK_IO, "d 4\n", 4,
						&err), MP_E_PACK_IO);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot rename"));
	ck_assert_uint_eq(entries(dir), 2);
	rmdir(path);

	ck_assert_int_eq(mp_output_write_atomic(missing, MP_TMP_PRIVATE, MP_E_SEAL_IO, "e 5\n", 4,
						&err), MP_E_SEAL_IO);
	ck_assert_ptr_nonnull(strstr(err.msg, "No such file or directory"));
	unlink(victim);
	ck_assert_int_eq(rmdir(dir), 0);
	free(missing);
	free(victim);
	free(path);
	free(dir);
}
END_TEST

/* The temporary is there from the open on, with nothing at the name. */
static void assert_only_temporary(const struct mp_output_tmp *t)
{
	struct stat st;

	ck_assert_ptr_nonnull(t->tmp);
	ck_assert_int_ge(t->fd, 0);
	ck_assert_int_eq(lstat(t->tmp, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
}

START_TEST(test_tmp_open_missing_dir)
{
	char *dir = scratch_dir();
	char *missing = mp_path_join(dir, "no/m.json");
	struct mp_output_tmp t;
	struct mp_error err;

	/* fails at the open, before anything is written: both namings */
	ck_assert_int_eq(mp_output_tmp_open(&t, missing, MP_TMP_PRIVATE, MP_E_PACK_IO, &err), MP_E_PACK_IO);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot write file "));
	ck_assert_ptr_null(t.tmp);
	ck_assert_int_eq(t.fd, -1);
	mp_output_tmp_abandon(&t);
	ck_assert_int_eq(mp_output_tmp_open(&t, missing, MP_TMP_SIBLING, MP_E_PACK_IO, &err), MP_E_PACK_IO);
	ck_assert_ptr_nonnull(strstr(err.msg, "/no/m.json.tmp: "));
	mp_output_tmp_abandon(&t);
	rmdir(dir);
	free(missing);
	free(dir);
}
END_TEST

START_TEST(test_tmp_abandon)
{
	char *dir = scratch_dir();
	char *path = mp_path_join(dir, "m.json");
	struct mp_output_tmp t;
	struct mp_error err;
	struct stat st;
	char *tmp;

	ck_assert_int_eq(mp_output_tmp_open(&t, path, MP_TMP_PRIVATE, MP_E_PACK_IO, &err), MP_OK);
	assert_only_temporary(&t);
	ck_assert_ptr_nonnull(strstr(t.tmp, "/.m.json.tmp-"));
	ck_assert_str_eq(t.shown, path);
	tmp = strdup(t.tmp);
	/* the signal handler's cleanup finds it too */
	mp_output_remove_temporaries();
	ck_assert_int_ne(lstat(tmp, &st), 0);
	mp_output_tmp_abandon(&t);
	ck_assert_ptr_null(t.tmp);
	free(tmp);

	ck_assert_int_eq(mp_output_tmp_open(&t, path, MP_TMP_SIBLING, MP_E_PACK_IO, &err), MP_OK);
	assert_only_temporary(&t);
	ck_assert_str_eq(t.shown, t.tmp);
	tmp = strdup(t.tmp);
	ck_assert_int_eq(pwrite(t.fd, "x", 1, 0), 1);
	mp_output_tmp_abandon(&t);
	ck_assert_int_ne(lstat(tmp, &st), 0);
	ck_assert_int_ne(lstat(path, &st), 0);
	rmdir(dir);
	free(tmp);
	free(path);
	free(dir);
}
END_TEST

START_TEST(test_tmp_commit_symlink)
{
	char *dir = scratch_dir();
	char *path = mp_path_join(dir, "m.json"), *other = mp_path_join(dir, "other");
	struct mp_output_tmp t;
	struct mp_error err;
	struct stat st;
	char *tmp;
	FILE *f = fopen(other, "w");

	fputs("keep", f);
	fclose(f);
	/* opened before the link appears, as mkdemo opens before its long write */
	ck_assert_int_eq(mp_output_tmp_open(&t, path, MP_TMP_PRIVATE, MP_E_PACK_IO, &err), MP_OK);
	ck_assert_int_eq(symlink(other, path), 0);
	tmp = strdup(t.tmp);
	ck_assert_int_eq(mp_output_tmp_write(&t, "{}\n", 3, &err), MP_OK);
	ck_assert_int_eq(mp_output_tmp_rename(&t, &err), MP_OK);
	ck_assert_ptr_null(t.tmp);
	ck_assert_int_eq(t.fd, -1);
	mp_output_tmp_abandon(&t);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_str_eq(read_text(path), "{}\n");
	ck_assert_str_eq(read_text(other), "keep");
	ck_assert_int_ne(lstat(tmp, &st), 0);
	/* renamed: the signal cleanup no longer knows it */
	mp_output_remove_temporaries();
	ck_assert_int_eq(lstat(path, &st), 0);
	unlink(path);
	unlink(other);
	rmdir(dir);
	free(tmp);
	free(other);
	free(path);
	free(dir);
}
END_TEST

START_TEST(test_output_resolve)
{
	char cwd[PATH_MAX], want[PATH_MAX + 8];
	char *name = NULL;
	struct mp_error err;

	ck_assert_int_eq(mp_output_resolve("/x.pack", NULL, &name, &err), MP_OK);
	ck_assert_str_eq(name, "/x.pack");
	free(name);
	ck_assert_ptr_nonnull(realpath(".", cwd));
	snprintf(want, sizeof want, "%s/y", cwd);
	ck_assert_int_eq(mp_output_resolve("y", NULL, &name, &err), MP_OK);
	ck_assert_str_eq(name, want);
	free(name);
	ck_assert_int_eq(mp_output_resolve("/nonexistent-dir/z", "--out", &name, &err),
			 MP_E_PACK_IO);
	ck_assert_str_eq(err.msg, "cannot write --out /nonexistent-dir/z: /nonexistent-dir: "
				  "No such file or directory");
	ck_assert_int_eq(mp_output_resolve("/nonexistent-dir/z", NULL, &name, &err),
			 MP_E_PACK_IO);
	ck_assert_str_eq(err.msg, "cannot write /nonexistent-dir/z: /nonexistent-dir: "
				  "No such file or directory");
}
END_TEST

/* v dumped as Python's json.dumps(v, ensure_ascii=ascii, indent=indent,
 * sort_keys=True) does (expected strings from CPython 3.11). */
static void assert_pyjson(const char *json, int indent, bool ascii, const char *want)
{
	json_error_t jerr;
	json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	size_t len;
	char *got;

	ck_assert_msg(v != NULL, "%s: %s", json, jerr.text);
	got = mp_pyjson_dumps(v, indent, ascii, &len);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	ck_assert_uint_eq(len, strlen(want));
	free(got);
	json_decref(v);
}

START_TEST(test_pyjson_nesting)
{
	assert_pyjson("{\"b\": [1, {\"y\": null, \"x\": true}], \"a\": {}, \"c\": []}", 2, false,
		      "{\n  \"a\": {},\n  \"b\": [\n    1,\n    {\n      \"x\": true,\n"
		      "      \"y\": null\n    }\n  ],\n  \"c\": []\n}");
	assert_pyjson("{\"b\": [1, {\"y\": null, \"x\": false}], \"a\": {}, \"c\": []}",
		      MP_PYJSON_ONE_LINE, false,
		      "{\"a\": {}, \"b\": [1, {\"x\": false, \"y\": null}], \"c\": []}");
	assert_pyjson("[]", 2, false, "[]");
	assert_pyjson("{}", MP_PYJSON_ONE_LINE, false, "{}");
	assert_pyjson("[[[]]]", 2, false, "[\n  [\n    []\n  ]\n]");
	/* code point order: "B" < "a" < "\u00e9" < "\u4e2d" */
	assert_pyjson("{\"\\u4e2d\": 1, \"a\": 2, \"\\u00e9\": 3, \"B\": 4}", MP_PYJSON_ONE_LINE,
		      false, "{\"B\": 4, \"a\": 2, \"\xc3\xa9\": 3, \"\xe4\xb8\xad\": 1}");
}
END_TEST

START_TEST(test_pyjson_escapes)
{
	assert_pyjson("\"q\\\" b\\\\ n\\n r\\r t\\t b\\b f\\f \\u0001 \\u001f \\u007f /\"", 2,
		      false, "\"q\\\" b\\\\ n\\n r\\r t\\t b\\b f\\f \\u0001 \\u001f \x7f /\"");
	assert_pyjson("\"nul\\u0000x\"", 2, false, "\"nul\\u0000x\"");
	/* non-ASCII: raw UTF-8, or \u escapes (surrogate pairs) with ensure_ascii */
	assert_pyjson("\"\\u00e9\\u4e2d\\ud83d\\ude00\"", 2, false,
		      "\"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\"");
	assert_pyjson("\"\\u00e9\\u4e2d\\ud83d\\ude00\\u007f\"", MP_PYJSON_ONE_LINE, true,
		      "\"\\u00e9\\u4e2d\\ud83d\\ude00\\u007f\"");
	assert_pyjson("{\"\\u00e9\": \"\\n\"}", MP_PYJSON_ONE_LINE, true,
		      "{\"\\u00e9\": \"\\n\"}");
}
END_TEST

START_TEST(test_pyjson_numbers)
{
	assert_pyjson("[0, -1, 9007199254740993, 1.0, 0.5, 0.1, 123.456, 1e16, 1.5e-05,"
		      " 0.0001, 1e22, -2.5, 1234567890123456.0, 3.141592653589793]",
		      MP_PYJSON_ONE_LINE, false,
		      "[0, -1, 9007199254740993, 1.0, 0.5, 0.1, 123.456, 1e+16, 1.5e-05, "
		      "0.0001, 1e+22, -2.5, 1234567890123456.0, 3.141592653589793]");
}
END_TEST

/* The builder's identities, against Python's hashlib (values from CPython). */
START_TEST(test_ep_identities)
{
	char model[MP_SHA256_HEX], source[MP_SHA256_HEX], config[MP_SHA256_HEX], hex[MP_SHA256_HEX];
	unsigned char id[MP_SHA256_LEN];

	for (int i = 0; i < 64; i += 2) {
		model[i] = 'a', model[i + 1] = 'b';
		source[i] = 'c', source[i + 1] = 'd';
		config[i] = 'e', config[i + 1] = 'f';
	}
	model[64] = source[64] = config[64] = '\0';
	ck_assert_uint_eq(mp_ep_generation(model, source, 1, 2), 1346525544250695593ULL);
	mp_ep_model_identity(source, config, id);
	mp_sha256_hex(id, hex);
	ck_assert_str_eq(hex, "4e664a1230cbee5896414896619ea40e067307f77665c60e3120d399dbd7fa58");
}
END_TEST

/* Encoding is the inverse of decoding, field by field. */
START_TEST(test_ep_encode_roundtrip)
{
	unsigned char raw[MP_EP_ENTRY_SIZE], again[MP_EP_ENTRY_SIZE];
	unsigned char hraw[MP_EP_HEADER_SIZE], hagain[MP_EP_HEADER_SIZE];
	struct mp_ep_entry e;
	struct mp_ep_header h;

	for (size_t i = 0; i < sizeof raw; i++)
		raw[i] = (unsigned char)(i * 37 + 11);
	for (size_t i = 0; i < sizeof hraw; i++)
		hraw[i] = (unsigned char)(i * 53 + 7);
	mp_ep_entry_decode(raw, &e);
	mp_ep_entry_encode(&e, again);
	ck_assert_mem_eq(raw, again, sizeof raw);
	mp_ep_header_decode(hraw, &h);
	mp_ep_header_encode(&h, hagain);
	ck_assert_mem_eq(hraw, hagain, sizeof hraw);
	/* a text field needs room for its NUL */
	ck_assert_int_eq(mp_ep_text_put(e.dtype, MP_EP_DTYPE_LEN, "MXFP4"), 0);
	ck_assert_mem_eq(e.dtype, "MXFP4\0\0\0\0\0\0\0\0\0\0\0", MP_EP_DTYPE_LEN);
	ck_assert_int_eq(mp_ep_text_put(e.dtype, MP_EP_DTYPE_LEN, "0123456789abcdef"), -1);
	ck_assert_int_eq(mp_ep_text_put(e.dtype, MP_EP_DTYPE_LEN, "0123456789abcde"), 0);
}
END_TEST

/* A plan of one layer of 4 MXFP4 experts of 64 x 32 weights, as a GGUF
 * would give it (mkdemo --sparse fills plans this way too). */
static void one_layer_plan(struct mp_epw_plan *p, struct mp_epw_tensor t[3])
{
	struct mp_epw_tensor down, gate, up;

	memset(p, 0, sizeof *p);
	memset(t, 0, 3 * sizeof *t);
	p->gguf_path = "x.gguf";
	p->layers = 1;
	p->experts = 4;
	p->top_k = 2;
	for (unsigned r = 0; r < 3; r++) {
		mp_ep_tensor_name(t[r].name, sizeof t[r].name, 0, r);
		t[r].type = 39;
		t[r].n_dims = 3;
		t[r].ne[0] = r == MP_EP_DOWN ? 32 : 64;
		t[r].ne[1] = r == MP_EP_DOWN ? 64 : 32;
		t[r].ne[2] = 4;
		t[r].nbytes = 4 * 1088;
		t[r].offset = 1024 + r * 4352;
	}
	/* sorted by name: down, gate, up */
	gate = t[0];
	up = t[1];
	down = t[2];
	t[0] = down;
	t[1] = gate;
	t[2] = up;
	p->tensors = t;
	p->ntensors = 3;
}

static void plan_refused(struct mp_epw_tensor *t, const char *want)
{
	struct mp_epw_plan p;
	struct mp_epw_tensor tensors[3];
	struct mp_error err;

	one_layer_plan(&p, tensors);
	if (t)
		tensors[1] = *t;
	ck_assert_int_eq(mp_epw_plan_check(&p, &err), MP_E_GGUF_EXPERTS);
	ck_assert_msg(strstr(err.msg, want) != NULL, "%s: not in %s", want, err.msg);
	free(p.routed);
}

/* The builder's checks no GGUF ggml reads can reach: a tensor of E slices
 * that are not whole, or whose size is not its weights'. */
START_TEST(test_ep_plan_slices)
{
	struct mp_epw_plan p;
	struct mp_epw_tensor tensors[3], gate;
	struct mp_error err;

	one_layer_plan(&p, tensors);
	ck_assert_int_eq(mp_epw_plan_check(&p, &err), MP_OK);
	ck_assert_uint_eq(p.role_bytes, 1088);
	ck_assert_uint_eq(p.object_stride, 4096);
	ck_assert_uint_eq(p.data_start, 8192);
	ck_assert_uint_eq(p.size, 8192 + 4 * 4096);
	free(p.routed);
	gate = tensors[1];
	gate.nbytes = 4 * 1088 + 1;
	plan_refused(&gate, "expert tensor is not evenly sliceable: blk.0.ffn_gate_exps.weight");
	gate.nbytes = 4 * 1105;
	plan_refused(&gate, "quantized slice size mismatch for blk.0.ffn_gate_exps.weight: "
			    "1105 != 1088");
	gate.nbytes = 4 * 1088;
	gate.ne[2] = 3;
	plan_refused(&gate, "unexpected expert shape for layer=0 role=gate: [64, 32, 3]");
}
END_TEST

static Suite *writer_suite(void)
{
	Suite *s = suite_create("writer");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_layout_small);
	tcase_add_test(tc, test_layout_entries);
	tcase_add_test(tc, test_layout_limits);
	tcase_add_test(tc, test_canonical_order);
	tcase_add_test(tc, test_canonical_sha256);
	tcase_add_test(tc, test_inventory);
	tcase_add_test(tc, test_manifest_parts);
	tcase_add_test(tc, test_manifest_text);
	tcase_add_test(tc, test_write_atomic);
	tcase_add_test(tc, test_write_atomic_private);
	tcase_add_test(tc, test_tmp_open_missing_dir);
	tcase_add_test(tc, test_tmp_abandon);
	tcase_add_test(tc, test_tmp_commit_symlink);
	tcase_add_test(tc, test_output_resolve);
	tcase_add_test(tc, test_pyjson_nesting);
	tcase_add_test(tc, test_pyjson_escapes);
	tcase_add_test(tc, test_pyjson_numbers);
	tcase_add_test(tc, test_ep_identities);
	tcase_add_test(tc, test_ep_encode_roundtrip);
	tcase_add_test(tc, test_ep_plan_slices);
	suite_add_tcase(s, tc);
	return s;
}

const struct fx_suite_def fx_suite = {.make = writer_suite};
