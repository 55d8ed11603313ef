/*
 * check_expertpack.c - mp_ep_open() against the SGLANG-EXPERTPACK-v1 corpus
 * and what a valid pack gives back.
 *
 * tests/data/expertpack/mkcorpus.py writes, at test time, a small valid pack,
 * its manifest and its source GGUF, one variant per check of
 * moepack-pack(5)'s SGLANG-EXPERTPACK-v1 section and per spot where the
 * reference is lax, and expect.txt: for each variant the options, the exact
 * code and the fragments its message (or, for a valid pack, a warning) must
 * hold.  Variants with two faults check that the one the reference reaches
 * first wins.  The acceptance tests compare what a valid pack answers with
 * the bytes of the file, hashed here with OpenSSL; the generator tests
 * compare src/pack/pyrandom.c with values python3 3.11 printed.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "fixture.h"
#include "base/u64map.h"
#include "namespace/node.h"
#include "pack/expertpack/expertpack.h"
#include "pack/mjson.h"
#include "pack/expertpack/pyrandom.h"

/* ---- the corpus, written by mkcorpus.py --------------------------------- */

/*
 * Run mkcorpus.py with args; false (and a SKIP line) when there is no
 * python3, which is the only reason to skip.
 */
static bool run_generator(const char *args)
{
	char gen[PATH_MAX], cmd[3 * PATH_MAX], line[512], last[512] = "";
	FILE *p;
	int status;

	snprintf(cmd, sizeof cmd, "python3 '%s' %s 2>&1",
		 fx_data_path("expertpack/mkcorpus.py", gen, sizeof gen), args);
	p = popen(cmd, "r");
	ck_assert_msg(p != NULL, "cannot run %s", cmd);
	while (fgets(line, sizeof line, p))
		snprintf(last, sizeof last, "%s", line);
	status = pclose(p);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		printf("SKIP: check_expertpack: no python3 to write the corpus\n");
		return false;
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed: %s", cmd, last);
	return true;
}

static bool make_corpus(char dir[PATH_MAX])
{
	char args[PATH_MAX + 16];

	fx_mkdtemp(dir, PATH_MAX);
	snprintf(args, sizeof args, "corpus '%s'", dir);
	return run_generator(args);
}

/* One line of expect.txt, its options parsed. */
struct expect {
	char *name, *opts, *code, *ref;
	const char *frags[8];
	unsigned nfrags;
	char pack[PATH_MAX], manifest[PATH_MAX], source[PATH_MAX];
	char digest[3][MP_SHA256_HEX + 8];
	struct mp_ep_opts o;
};

static void corpus_file(const char *dir, const char *name, char out[PATH_MAX])
{
	ck_assert_int_lt(snprintf(out, PATH_MAX, "%s/%s", dir, name), PATH_MAX);
}

/* "key=value" or "flag" of the options column into e->o. */
static void parse_option(const char *dir, char *opt, struct expect *e)
{
	char *eq = strchr(opt, '=');
	const char *v = eq ? eq + 1 : "";

	if (eq)
		*eq = '\0';
	if (!strcmp(opt, "layers") || !strcmp(opt, "experts") || !strcmp(opt, "topk")) {
		uint64_t n = strtoull(v, NULL, 10);
		*(opt[0] == 'l' ? &e->o.expect_layers
		  : opt[0] == 'e' ? &e->o.expect_experts : &e->o.expect_top_k) = n;
	} else if (!strcmp(opt, "src") || !strcmp(opt, "model") || !strcmp(opt, "config")) {
		int k = opt[0] == 's' ? 0 : opt[0] == 'm' ? 1 : 2;
		snprintf(e->digest[k], sizeof e->digest[k], "%s", v);
		*(k == 0 ? &e->o.expect_source_sha256
		  : k == 1 ? &e->o.expect_model_identity_sha256 : &e->o.expect_config_sha256) =
			e->digest[k];
	} else if (!strcmp(opt, "runtime")) {
		e->o.runtime_only = true;
	} else if (!strcmp(opt, "full")) {
		e->o.full = true;
	} else if (!strcmp(opt, "nosamples")) {
		e->o.samples = MP_EP_NO_SAMPLES;
	} else if (!strcmp(opt, "samples")) {
		e->o.samples = strtoull(v, NULL, 10);
	} else if (!strcmp(opt, "source")) {
		corpus_file(dir, v, e->source);
		e->o.source_path = e->source;
	} else if (!strcmp(opt, "pack")) {
		corpus_file(dir, v, e->pack);
	} else if (!strcmp(opt, "manifest")) {
		corpus_file(dir, v, e->manifest);
		e->o.manifest_path = e->manifest;
	} else {
		ck_abort_msg("expect.txt: unknown option %s", opt);
	}
}

/* line (modified in place) into e; false for a comment. */
static bool parse_expect(const char *dir, char *line, struct expect *e)
{
	char *save = NULL, *opt;

	memset(e, 0, sizeof *e);
	line[strcspn(line, "\n")] = '\0';
	if (line[0] == '#' || !line[0])
		return false;
	e->name = strtok_r(line, "\t", &save);
	e->opts = strtok_r(NULL, "\t", &save);
	e->code = strtok_r(NULL, "\t", &save);
	e->ref = strtok_r(NULL, "\t", &save);
	ck_assert_msg(e->name && e->opts && e->code && e->ref, "expect.txt: short line");
	while (e->nfrags < 8 && (e->frags[e->nfrags] = strtok_r(NULL, "\t", &save)))
		e->nfrags++;
	ck_assert_int_lt(snprintf(e->pack, sizeof e->pack, "%s/%s.pack", dir, e->name),
			 (int)sizeof e->pack);
	for (opt = strtok_r(strcmp(e->opts, "-") ? e->opts : NULL, ",", &save); opt;
	     opt = strtok_r(NULL, ",", &save))
		parse_option(dir, opt, e);
	return true;
}

static enum mp_err code_by_name(const char *name)
{
	for (int c = 0; c < MP_ERR_COUNT; c++)
		if (strcmp(mp_err_name(c), name) == 0)
			return c;
	ck_abort_msg("expect.txt: no error code named %s", name);
	return MP_E_USAGE;
}

/* A valid pack: each fragment in one of its warnings ("nowarn": none). */
static bool warnings_match(const struct mp_ep *ep, const struct expect *e, char *why,
			   size_t len)
{
	for (unsigned f = 0; f < e->nfrags; f++) {
		bool found = false;

		if (!strcmp(e->frags[f], "nowarn")) {
			if (ep->file.nwarnings == 0)
				continue;
			snprintf(why, len, "expected no warning, got \"%s\"", ep->file.warnings[0]);
			return false;
		}
		for (unsigned w = 0; w < ep->file.nwarnings; w++)
			found |= strstr(ep->file.warnings[w], e->frags[f]) != NULL;
		if (!found) {
			snprintf(why, len, "no warning holds \"%s\" (%u warnings%s%s)", e->frags[f],
				 ep->file.nwarnings, ep->file.nwarnings ? ", first: " : "",
				 ep->file.nwarnings ? ep->file.warnings[0] : "");
			return false;
		}
	}
	return true;
}

/* Open the variant as expect.txt says; why gets what is wrong. */
static bool check_variant(const struct expect *e, char *why, size_t len)
{
	enum mp_err want = code_by_name(e->code);
	struct mp_error err = {.code = MP_OK};
	struct mp_ep *ep = NULL;
	const char *needles[9] = {NULL};
	enum mp_err rc = mp_ep_open(&ep, e->pack, &e->o, &err);
	bool ok;

	if (rc != err.code || (rc == MP_OK) != (ep != NULL)) {
		snprintf(why, len, "returned %s, err says %s, pack %p", mp_err_name(rc),
			 mp_err_name(err.code), (void *)ep);
		mp_ep_close(ep);
		return false;
	}
	if (rc == MP_OK && want == MP_OK) {
		ok = warnings_match(ep, e, why, len);
		mp_ep_close(ep);
		return ok;
	}
	for (unsigned f = 0; f < e->nfrags; f++)
		needles[f] = e->frags[f];
	/* every message starts with its code's summary */
	if (rc != MP_OK && strncmp(err.msg, mp_err_summary(rc), strlen(mp_err_summary(rc)))) {
		snprintf(why, len, "message does not start with \"%s\": \"%s\"",
			 mp_err_summary(rc), err.msg);
		return false;
	}
	return fx_err_matches(&err, want, needles, why, len);
}

START_TEST(test_corpus)
{
	char dir[PATH_MAX], path[PATH_MAX], line[4096], why[1024];
	char failures[8192] = "";
	unsigned lines = 0, ok = 0, failed = 0;
	size_t used = 0;
	FILE *f;

	if (!make_corpus(dir))
		return;
	corpus_file(dir, "expect.txt", path);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	while (fgets(line, sizeof line, f)) {
		struct expect e;

		if (!parse_expect(dir, line, &e))
			continue;
		lines++;
		ok += strcmp(e.code, "ok") == 0;
		if (check_variant(&e, why, sizeof why))
			continue;
		failed++;
		if (used < sizeof failures)
			used += (size_t)snprintf(failures + used, sizeof failures - used,
						 "\n  %s (%s): %s", e.name, e.ref, why);
	}
	fclose(f);
	fx_rmtree(dir);
	ck_assert_msg(failed == 0, "%u of %u corpus variants wrong:%s", failed, lines, failures);
	/* the corpus must exercise both sides */
	ck_assert_uint_ge(lines, 150);
	ck_assert_uint_ge(ok, 20);
	ck_assert_uint_ge(lines - ok, 120);
}
END_TEST

/* ---- what a valid pack answers ------------------------------------------ */

static void pread_exact(const char *path, uint64_t off, void *buf, size_t n)
{
	FILE *f = fopen(path, "rb");

	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseeko(f, (off_t)off, SEEK_SET), 0);
	ck_assert_uint_eq(fread(buf, 1, n, f), n);
	fclose(f);
}

static void hex_of(const unsigned char d[32], char out[MP_SHA256_HEX])
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* The object generation as SGLang's builder makes it, computed here. */
static uint64_t builder_generation(const struct mp_ep *ep, unsigned l, unsigned e)
{
	char model[MP_SHA256_HEX], source[MP_SHA256_HEX], text[200];
	unsigned char d[32];
	uint64_t g = 0;

	hex_of(ep->header.model_identity_sha256, model);
	hex_of(ep->header.source_blob_sha256, source);
	snprintf(text, sizeof text, "%s:%s:%u:%u", model, source, l, e);
	fx_sha256_of(text, strlen(text), d);
	for (int i = 7; i >= 0; i--)
		g = g << 8 | d[i];
	return g ? g : 1;
}

/* The geometry of mkcorpus.py's valid pack. */
static void check_geometry(const struct mp_ep *ep)
{
	ck_assert_uint_eq(ep->num_layers, 2);
	ck_assert_uint_eq(ep->num_experts, 4);
	ck_assert_uint_eq(ep->top_k, 2);
	ck_assert_uint_eq(ep->alignment, 256);
	ck_assert_uint_eq(ep->data_start, 8192);
	ck_assert_uint_eq(ep->object_stride, 3328);
	ck_assert_uint_eq(ep->role_bytes, 1088);
	ck_assert_uint_eq(ep->index_count, 24);
	ck_assert_uint_eq(ep->object_count, 8);
	ck_assert_uint_eq(ep->file.size, 8192 + 8 * 3328);
	ck_assert(!ep->page_aligned);
	ck_assert_uint_eq(ep->file.nwarnings, 1);
	ck_assert_ptr_nonnull(strstr(ep->file.warnings[0], "direct I/O"));
}

/* Each role: its range, its checksum = SHA-256 of those bytes, the rest of
 * its entry; each object's generation the builder's. */
static void check_roles(const struct mp_ep *ep)
{
	static const char *const role[3] = {"gate", "up", "down"};
	unsigned char buf[1088], d[32];

	for (unsigned l = 0; l < 2; l++)
		for (unsigned x = 0; x < 4; x++) {
			uint64_t k = mp_ep_object(ep, l, x), off, n;
			char name[64];

			ck_assert_uint_eq(mp_ep_object_offset(ep, k), 8192 + k * 3328);
			ck_assert_uint_eq(ep->generation[k], builder_generation(ep, l, x));
			for (unsigned r = 0; r < 3; r++) {
				const struct mp_ep_role_info *ri = mp_ep_role_at(ep, k, r);

				mp_ep_role_range(ep, k, r, &off, &n);
				ck_assert_uint_eq(off, 8192 + k * 3328 + r * 1088);
				ck_assert_uint_eq(n, 1088);
				pread_exact(ep->file.path, off, buf, sizeof buf);
				fx_sha256_of(buf, sizeof buf, d);
				ck_assert_mem_eq(ri->checksum, d, 32);
				snprintf(name, sizeof name, "blk.%u.ffn_%s_exps.weight", l, role[r]);
				ck_assert_str_eq(ri->tensor_name, name);
				ck_assert_uint_eq(ri->dtype_id, 39);
				ck_assert_uint_eq(ri->rank, 2);
				ck_assert_uint_eq(ri->shape[0], r == 2 ? 32 : 64);
				ck_assert_uint_eq(ri->shape[1], r == 2 ? 64 : 32);
				ck_assert_uint_eq(ri->shape[2], 0);
			}
		}
}

/* The digests against the manifest's text and the file's bytes. */
static void check_digests(const struct mp_ep *ep)
{
	json_t *m = json_loads(ep->file.manifest_raw, 0, NULL);
	size_t n = 24 * 328;
	unsigned char *index = malloc(n), d[32];
	char hex[MP_SHA256_HEX];

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(index);
	ck_assert_str_eq(ep->pack_sha256, json_string_value(json_object_get(m, "pack_sha256")));
	ck_assert_str_eq(ep->index_sha256, json_string_value(json_object_get(m, "index_sha256")));
	pread_exact(ep->file.path, 176, index, n);
	fx_sha256_of(index, n, d);
	ck_assert_mem_eq(ep->index_digest, d, 32);
	hex_of(d, hex);
	ck_assert_str_eq(ep->index_sha256, hex);
	json_decref(m);
	free(index);
}

START_TEST(test_valid_answers)
{
	char dir[PATH_MAX], pack[PATH_MAX], source[PATH_MAX], real[PATH_MAX];
	struct fx_progress prog = {0};
	struct mp_ep_opts o = {.expect_layers = 2, .expect_experts = 4, .expect_top_k = 2,
			       .full = true, .source_path = source,
			       .progress = fx_progress_log, .progress_arg = &prog};
	struct mp_error err;
	struct mp_ep *ep;

	if (!make_corpus(dir))
		return;
	corpus_file(dir, "valid.pack", pack);
	corpus_file(dir, "source.gguf", source);
	ck_assert_msg(mp_ep_open(&ep, pack, &o, &err) == MP_OK, "%s", err.msg);
	check_geometry(ep);
	check_roles(ep);
	check_digests(ep);
	ck_assert(ep->full_checked);
	ck_assert_ptr_nonnull(realpath(pack, real));
	ck_assert_str_eq(ep->file.real_path, real);
	ck_assert_str_eq(ep->file.path, pack);
	ck_assert_uint_eq(ep->header.flags, 3);
	ck_assert_mem_eq(ep->header.magic, "SGLANG-EXPERTPACK-v1\0\0\0\0", 24);
	/* the full read told its progress, to the end of the pack, never back */
	ck_assert_uint_gt(prog.calls, 0);
	ck_assert_uint_eq(prog.done, ep->file.size);
	ck_assert(!prog.backwards && !prog.past_total);
	mp_ep_close(ep);
	fx_rmtree(dir);
}
END_TEST

/* A stop asked (a build's signal during its final check) ends the full
 * read and the source comparison, each naming what it was doing. */
START_TEST(test_stop_asked)
{
	char dir[PATH_MAX], pack[PATH_MAX], source[PATH_MAX];
	struct mp_cancel stop = {0};
	struct mp_ep_opts o = {.full = true, .source_path = source, .cancel = &stop};
	struct mp_error err;
	struct mp_ep *ep = NULL;

	if (!make_corpus(dir))
		return;
	corpus_file(dir, "valid.pack", pack);
	corpus_file(dir, "source.gguf", source);
	ck_assert_msg(mp_ep_open(&ep, pack, &o, &err) == MP_OK, "%s", err.msg);
	mp_ep_close(ep);
	mp_cancel_request(&stop, 15);
	ck_assert_int_eq(mp_ep_open(&ep, pack, &o, &err), MP_E_INTERRUPTED);
	ck_assert_ptr_null(ep);
	ck_assert_msg(strstr(err.msg, "build interrupted by signal 15 while reading ") &&
		      strstr(err.msg, "valid.pack at byte 0"), "%s", err.msg);
	/* without the full read: the sampled comparison with the source */
	o.full = false;
	ck_assert_int_eq(mp_ep_open(&ep, pack, &o, &err), MP_E_INTERRUPTED);
	ck_assert_msg(strstr(err.msg, "build interrupted by signal 15 while comparing ") &&
		      strstr(err.msg, "source.gguf"), "%s", err.msg);
	fx_rmtree(dir);
}
END_TEST

/* Through a symlink the manifest is the resolved pack's, as the runtime
 * looks for it, and path is the name given. */
START_TEST(test_symlink_manifest)
{
	char dir[PATH_MAX], link[PATH_MAX], want[PATH_MAX];
	struct mp_error err;
	struct mp_ep *ep;

	if (!make_corpus(dir))
		return;
	corpus_file(dir, "link.pack", link);
	ck_assert_msg(mp_ep_open(&ep, link, NULL, &err) == MP_OK, "%s", err.msg);
	ck_assert_str_eq(ep->file.path, link);
	ck_assert_ptr_nonnull(realpath(link, want));
	strcat(want, ".manifest.json");
	ck_assert_str_eq(ep->file.manifest_path, want);
	mp_ep_close(ep);
	fx_rmtree(dir);
}
END_TEST

/* A file's user.moepack.shape is v. */
static void assert_shape_xattr(const struct mp_pack *p, enum mp_node_kind kind,
			       uint64_t object, enum mp_role role, const char *v)
{
	struct mp_node n = {.kind = kind, .layer_index = object / p->m.num_experts,
			    .expert = object % p->m.num_experts, .object = object,
			    .role = kind == MP_NODE_OBJECT ? MP_ROLE_COUNT : role};
	char buf[MP_XATTR_VALUE_MAX];

	ck_assert(mp_xattr_applies(p, kind, MP_XA_SHAPE));
	ck_assert_uint_eq(mp_xattr_value(p, &n, MP_XA_SHAPE, buf, sizeof buf), strlen(v));
	ck_assert_str_eq(buf, v);
}

/* Both checkers leave an entry's shape free, so experts may record
 * different ones: each file shows its own entry's, the view says the role's
 * shapes differ, and an object whose shapes are the first's shows those. */
START_TEST(test_shape_per_expert)
{
	char dir[PATH_MAX], pack[PATH_MAX], text[MP_SHAPE_TEXT_MAX];
	struct mp_error err;
	struct mp_pack *p;
	struct mp_role_info ri;

	if (!make_corpus(dir))
		return;
	corpus_file(dir, "ok_shape_per_expert.pack", pack);
	ck_assert_msg(mp_pack_open(&p, pack, NULL, &err) == MP_OK, "%s", err.msg);
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		ck_assert(p->m.roles[r].shape_varies);
	mp_pack_role_info(p, 1, MP_ROLE_UP, &ri);
	ck_assert_uint_eq(ri.shape_len, 1);
	ck_assert_uint_eq(ri.shape[0], 2048);
	ck_assert(!ri.shape_varies);
	ck_assert_uint_eq(ri.expert_bytes, 1088);
	mp_shape_text(&ri, text, sizeof text);
	ck_assert_str_eq(text, "[2048]");
	/* expert 1 of each layer, role and object files, .f32 views */
	for (uint64_t k = 1; k < 8; k += 4) {
		assert_shape_xattr(p, MP_NODE_ROLE, k, MP_ROLE_GATE, "[32, 64]");
		assert_shape_xattr(p, MP_NODE_ROLE, k, MP_ROLE_UP, "[2048]");
		assert_shape_xattr(p, MP_NODE_F32, k, MP_ROLE_DOWN, "[32, 32, 2]");
		assert_shape_xattr(p, MP_NODE_OBJECT, k, MP_ROLE_COUNT,
				   "[[32, 64], [2048], [32, 32, 2]]");
	}
	assert_shape_xattr(p, MP_NODE_ROLE, 6, MP_ROLE_UP, "[64, 32]");
	assert_shape_xattr(p, MP_NODE_OBJECT, 0, MP_ROLE_COUNT, "[[64, 32], [64, 32], [32, 64]]");
	mp_pack_close(p);
	/* the valid pack's roles each have one shape */
	corpus_file(dir, "valid.pack", pack);
	ck_assert_msg(mp_pack_open(&p, pack, NULL, &err) == MP_OK, "%s", err.msg);
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		ck_assert(!p->m.roles[r].shape_varies);
	assert_shape_xattr(p, MP_NODE_ROLE, 5, MP_ROLE_GATE, "[64, 32]");
	mp_pack_close(p);
	fx_rmtree(dir);
}
END_TEST

/* ---- bad calls and files that are not packs ------------------------------- */

START_TEST(test_usage_and_files)
{
	char dir[PATH_MAX];
	struct mp_ep_opts o = {.expect_source_sha256 = "abc"};
	struct mp_error err;
	struct mp_ep *ep = (struct mp_ep *)&o;

	/* a malformed digest is the caller's fault, said before any file is read */
	ck_assert_int_eq(mp_ep_open(&ep, "/nonexistent/x.pack", &o, &err), MP_E_USAGE);
	ck_assert_ptr_null(ep);
	fx_assert_err(&err, MP_E_USAGE, "expect_source_sha256 must be 64 hex digits");
	o.expect_source_sha256 = NULL;
	o.expect_config_sha256 =
		"zz00000000000000000000000000000000000000000000000000000000000000";
	ck_assert_int_eq(mp_ep_open(&ep, "/nonexistent/x.pack", &o, &err), MP_E_USAGE);
	fx_assert_err(&err, MP_E_USAGE, "expect_config_sha256");
	ck_assert_int_eq(mp_ep_open(&ep, "/nonexistent/x.pack", NULL, &err), MP_E_PACK_IO);
	fx_assert_err(&err, MP_E_PACK_IO, "/nonexistent/x.pack");
	fx_mkdtemp(dir, sizeof dir);
	ck_assert_int_eq(mp_ep_open(&ep, dir, NULL, &err), MP_E_PACK_IO);
	fx_assert_err(&err, MP_E_PACK_IO, "is a directory");
	/* a NULL error is allowed, as for every library call */
	ck_assert_int_eq(mp_ep_open(&ep, dir, NULL, NULL), MP_E_PACK_IO);
	ck_assert_ptr_null(ep);
	fx_rmtree(dir);
}
END_TEST

/* ---- full geometry ---------------------------------------------------------- */

/* DeepSeek-V4-Flash's 43 x 256 experts, data a hole: every entry checked,
 * the per-role arrays full, in well under a second. */
START_TEST(test_full_geometry)
{
	char dir[PATH_MAX], pack[PATH_MAX], args[PATH_MAX + 32];
	struct mp_ep_opts o = {.expect_layers = 43, .expect_experts = 256, .expect_top_k = 6};
	struct mp_error err;
	struct mp_ep *ep;

	fx_mkdtemp(dir, sizeof dir);
	corpus_file(dir, "deepseek.pack", pack);
	snprintf(args, sizeof args, "sparse '%s'", pack);
	if (!run_generator(args)) {
		fx_rmtree(dir);
		return;
	}
	ck_assert_msg(mp_ep_open(&ep, pack, &o, &err) == MP_OK, "%s", err.msg);
	ck_assert_uint_eq(ep->index_count, 33024);
	ck_assert_uint_eq(ep->object_count, 11008);
	ck_assert_uint_eq(ep->role_bytes, 4456448);
	ck_assert_uint_eq(ep->object_stride, 13369344);
	ck_assert_uint_eq(ep->data_start, 10833920);
	ck_assert_uint_eq(ep->file.size, 147180572672ull);
	ck_assert(ep->page_aligned);
	ck_assert_uint_eq(ep->file.nwarnings, 0);
	ck_assert_str_eq(mp_ep_role_at(ep, 11007, MP_EP_DOWN)->tensor_name,
			 "blk.42.ffn_down_exps.weight");
	ck_assert_uint_eq(mp_ep_role_at(ep, 11007, MP_EP_DOWN)->shape[0], 2048);
	mp_ep_close(ep);
	fx_rmtree(dir);
}
END_TEST

/* ---- Python's generator ------------------------------------------------------ */

/* Values printed by python3 3.11: random.Random(seed).getrandbits(k). */
START_TEST(test_pyrandom_bits)
{
	struct mp_pyrandom r;

	mp_pyrandom_seed(&r, 0x0123456789abcdefull);
	ck_assert_uint_eq(mp_pyrandom_bits(&r, 32), 3851240871u);
	ck_assert_uint_eq(mp_pyrandom_bits(&r, 32), 1496727489u);
	ck_assert_uint_eq(mp_pyrandom_bits(&r, 32), 1688815724u);
	ck_assert_uint_eq(mp_pyrandom_bits(&r, 1), 0);
	ck_assert_uint_eq(mp_pyrandom_bits(&r, 40), 562051490101ull);
	ck_assert_uint_eq(mp_pyrandom_bits(&r, 64), 13718433583605621427ull);
	mp_pyrandom_seed(&r, 0); /* one key word, 0 */
	ck_assert_uint_eq(mp_pyrandom_u32(&r), 3626764237u);
	ck_assert_uint_eq(mp_pyrandom_u32(&r), 1654615998u);
	mp_pyrandom_seed(&r, 5);
	ck_assert_uint_eq(mp_pyrandom_u32(&r), 2675342405u);
	ck_assert_uint_eq(mp_pyrandom_u32(&r), 1097127993u);
	mp_pyrandom_seed(&r, UINT64_MAX); /* two key words */
	ck_assert_uint_eq(mp_pyrandom_u32(&r), 93740670u);
	ck_assert_uint_eq(mp_pyrandom_u32(&r), 1068495656u);
	mp_pyrandom_seed(&r, 12345); /* _randbelow */
	ck_assert_uint_eq(mp_pyrandom_below(&r, 1000), 426);
	ck_assert_uint_eq(mp_pyrandom_below(&r, 1000), 750);
	ck_assert_uint_eq(mp_pyrandom_below(&r, 1000), 10);
	ck_assert_uint_eq(mp_pyrandom_below(&r, 1000), 839);
	ck_assert_uint_eq(mp_pyrandom_below(&r, 1000), 845);
	ck_assert_uint_eq(mp_pyrandom_below(&r, 1), 0);
	ck_assert_uint_eq(mp_pyrandom_below(&r, (1ull << 40) + 7), 811126642874ull);
}
END_TEST

/* sum of (i + 1) * sample[i]: one number for a whole sample */
static uint64_t sample_sum(uint64_t seed, uint64_t n, uint64_t k, uint64_t first[3])
{
	struct mp_pyrandom r;
	uint64_t *out = malloc((size_t)k * sizeof *out), sum = 0;

	ck_assert_ptr_nonnull(out);
	mp_pyrandom_seed(&r, seed);
	ck_assert_int_eq(mp_pyrandom_sample(&r, n, k, out), 0);
	for (uint64_t i = 0; i < k; i++)
		sum += (i + 1) * out[i];
	memcpy(first, out, 3 * sizeof *first);
	free(out);
	return sum;
}

/* random.Random(seed).sample(range(n), k), both of Python's methods and
 * either side of the size where it changes from one to the other. */
START_TEST(test_pyrandom_sample)
{
	static const struct {
		uint64_t seed, n, k, sum, first[3];
	} cases[] = {
		{42, 1045, 96, 2319261, {228, 51, 563}}, /* pool: n <= 21 + 4^5 */
		{42, 1046, 96, 2444534, {228, 51, 563}}, /* set */
		{0xfeedface12345678ull, 33024, 96, 73441258, {12804, 20572, 12554}},
		{1, 33024, 33024, 9007569737264ull, {8805, 4135, 16716}},
		{3, 6, 6, 46, {1, 4, 5}},
		{9, 100, 5, 577, {59, 78, 47}},
		{9, 22, 6, 167, {14, 19, 11}},
		{9, 21, 6, 167, {14, 19, 11}},
	};
	struct mp_pyrandom r;
	uint64_t big[4];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t first[3];

		ck_assert_msg(sample_sum(cases[i].seed, cases[i].n, cases[i].k, first) ==
				      cases[i].sum,
			      "case %zu", i);
		ck_assert_mem_eq(first, cases[i].first, sizeof first);
	}
	/* a population far larger than memory: the set method needs O(k) */
	mp_pyrandom_seed(&r, 7);
	ck_assert_int_eq(mp_pyrandom_sample(&r, 1000000000000ull, 4, big), 0);
	ck_assert_uint_eq(big[0], 434439589175ull);
	ck_assert_uint_eq(big[1], 54335349840ull);
	ck_assert_uint_eq(big[2], 902254243635ull);
	ck_assert_uint_eq(big[3], 105380810795ull);
	ck_assert_int_eq(mp_pyrandom_sample(&r, 3, 4, big), -1);
}
END_TEST

/* Fresh cases each run, against python3 itself when it is there. */
START_TEST(test_pyrandom_python)
{
	char gen[PATH_MAX], cmd[PATH_MAX + 64], line[8192];
	uint64_t seed = (uint64_t)time(NULL) * 2654435761u, n = 50 + seed % 5000,
		 k = 1 + seed % 97 % n;
	uint64_t *out = malloc((size_t)k * sizeof *out);
	struct mp_pyrandom r;
	char *p = line;
	FILE *f;

	ck_assert_ptr_nonnull(out);
	snprintf(cmd, sizeof cmd, "python3 '%s' sample %" PRIu64 " %" PRIu64 " %" PRIu64,
		 fx_data_path("expertpack/mkcorpus.py", gen, sizeof gen), seed, n, k);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	if (!fgets(line, sizeof line, f)) {
		printf("SKIP: check_expertpack: no python3 for fresh sample cases\n");
		pclose(f);
		free(out);
		return;
	}
	pclose(f);
	mp_pyrandom_seed(&r, seed);
	ck_assert_int_eq(mp_pyrandom_sample(&r, n, k, out), 0);
	for (uint64_t i = 0; i < k; i++) {
		char *end;
		uint64_t v = strtoull(p, &end, 10);

		ck_assert_msg(end != p, "python printed fewer than %" PRIu64 " numbers", k);
		ck_assert_msg(v == out[i], "seed %" PRIu64 " n %" PRIu64 " k %" PRIu64
			      ": item %" PRIu64 " is %" PRIu64 ", python says %" PRIu64,
			      seed, n, k, i, out[i], v);
		p = end;
	}
	free(out);
}
END_TEST

/* ---- the helpers it rests on ------------------------------------------------- */

START_TEST(test_u64map)
{
	struct mp_u64map m = MP_U64MAP_INIT;
	bool fresh;

	ck_assert_ptr_null(mp_u64map_find(&m, 1));
	for (uint64_t k = 0; k < 10000; k++) {
		uint64_t *v = mp_u64map_put(&m, k * 0x10000001ull, &fresh);

		ck_assert(fresh);
		*v = k;
	}
	ck_assert_uint_eq(m.count, 10000);
	ck_assert_uint_le(m.count * 2, m.cap);
	for (uint64_t k = 0; k < 10000; k++) {
		uint64_t *v = mp_u64map_find(&m, k * 0x10000001ull);

		ck_assert_ptr_nonnull(v);
		ck_assert_uint_eq(*v, k);
		ck_assert_uint_eq(*mp_u64map_put(&m, k * 0x10000001ull, &fresh), k);
		ck_assert(!fresh);
	}
	ck_assert_ptr_null(mp_u64map_find(&m, 3));
	mp_u64map_free(&m);
	ck_assert_ptr_null(mp_u64map_find(&m, 0));
}
END_TEST

/* Key paths with array indexes (mjson.h). */
START_TEST(test_json_paths)
{
	json_t *root = json_loads("{\"tensors\": [{\"name\": \"a\"}, {\"name\": 7}], "
				  "\"model\": {\"n\": [1, [2, 3]]}}",
				  0, NULL);
	struct mp_error err;
	const char *s;
	uint64_t u;
	json_t *v;

	ck_assert_ptr_nonnull(root);
	ck_assert_int_eq(mp_json_get_string(root, "tensors[0].name", &s, &err), MP_OK);
	ck_assert_str_eq(s, "a");
	ck_assert_int_eq(mp_json_get_uint(root, "model.n[1][0]", 0, &u, &err), MP_OK);
	ck_assert_uint_eq(u, 2);
	mp_json_get_string(root, "tensors[1].name", &s, &err);
	fx_assert_err(&err, MP_E_MANIFEST_TYPE, "tensors[1].name is an integer");
	mp_json_get(root, "tensors[2].name", &v, &err);
	fx_assert_err(&err, MP_E_MANIFEST_MISSING, "manifest key is missing: tensors[2]");
	mp_json_get(root, "tensors[0].size", &v, &err);
	fx_assert_err(&err, MP_E_MANIFEST_MISSING, "manifest key is missing: tensors[0].size");
	mp_json_get(root, "model[0]", &v, &err);
	fx_assert_err(&err, MP_E_MANIFEST_TYPE, "model is an object, must be an array");
	mp_json_get(root, "tensors.name", &v, &err);
	fx_assert_err(&err, MP_E_MANIFEST_TYPE, "tensors is an array, must be an object");
	mp_json_get(root, "tensors[x]", &v, &err);
	fx_assert_err(&err, MP_E_USAGE, "malformed");
	mp_json_get(root, "tensors[]", &v, &err);
	fx_assert_err(&err, MP_E_USAGE, "malformed");
	mp_json_get(root, "tensors[99999999999999999999]", &v, &err);
	fx_assert_err(&err, MP_E_USAGE, "malformed");
	json_decref(root);
}
END_TEST

static Suite *expertpack_suite(void)
{
	Suite *s = suite_create("expertpack");
	TCase *corpus = tcase_create("corpus");
	TCase *answers = tcase_create("answers");
	TCase *random = tcase_create("pyrandom");

	tcase_add_test(corpus, test_corpus);
	tcase_add_test(answers, test_valid_answers);
	tcase_add_test(answers, test_symlink_manifest);
	tcase_add_test(answers, test_shape_per_expert);
	tcase_add_test(answers, test_stop_asked);
	tcase_add_test(answers, test_usage_and_files);
	tcase_add_test(answers, test_full_geometry);
	tcase_add_test(answers, test_u64map);
	tcase_add_test(answers, test_json_paths);
	tcase_add_test(random, test_pyrandom_bits);
	tcase_add_test(random, test_pyrandom_sample);
	tcase_add_test(random, test_pyrandom_python);
	suite_add_tcase(s, corpus);
	suite_add_tcase(s, answers);
	suite_add_tcase(s, random);
	return s;
}

const struct fx_suite_def fx_suite = {.make = expertpack_suite};
