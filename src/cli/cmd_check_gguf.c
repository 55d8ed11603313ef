/* cmd_check_gguf.c - `moepack check-gguf`: Kimi-K3 tensor quant types of GGUF files,
 * checked before a loader spends hours finding them. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/buildep.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "writer/gguf.h"
#include "writer/kimi/ggufcheck.h"
#include "writer/kimi/shards.h"
#include "base/text.h"

/* A path escaped for the terminal: each byte may become \xNN. */
#define SAFE_PATH_MAX (PATH_MAX * 4 + 1)

struct check_args {
	bool set, json, kimi;
	const char *format; /* NULL: expertpack-v1 for MXFP4 routed experts */
	const char *config; /* expertpack-v1: the model's config.json */
};

enum { OPT_ANY_GEOMETRY = CLI_LONG_ONLY, OPT_SET, OPT_FORMAT };

const struct cli_option cli_check_gguf_options[] = {
	CLI_OPT_TRUE("set", OPT_SET, "check an unsplit FILE.gguf as a set of one", struct check_args,
		     set),
	CLI_OPT_FALSE("any-geometry", OPT_ANY_GEOMETRY, "any expert count and sizes, not "
		      "Kimi-K3's", struct check_args, kimi),
	CLI_OPT_TEXT("format", OPT_FORMAT, "FORMAT", "kimi or expertpack-v1 (default: expertpack-v1\n"
		     "for a file whose routed experts are MXFP4, else kimi)", struct check_args,
		     format),
	CLI_OPT_TEXT("config", 'c', "FILE", "expertpack-v1: the model's config.json (default:\n"
		     "layers and experts as the tensors say)", struct check_args, config),
	CLI_OPT_JSON("print one JSON object per file, one per line", struct check_args, json),
	{NULL},
};

/*
 * Everything printed comes escaped: a path (any bytes) goes through
 * mp_text_escape here, a message (naming tensors and keys from the file)
 * through mp_fail.  Both are then one line of valid UTF-8, which JSON
 * carries as it is.
 */
static int report_json(const char *safe_path, enum mp_err rc, const struct mp_error *err,
		       const struct mp_gguf_check_result *res)
{
	json_t *o = json_object();

	json_object_set_new(o, "file", cli_json_text(safe_path));
	json_object_set_new(o, "ok", json_boolean(rc == MP_OK));
	json_object_set_new(o, "code", json_string(mp_err_name(rc)));
	json_object_set_new(o, "message", cli_json_text(rc ? err->msg : "ok"));
	json_object_set_new(o, "tensors_checked",
			    json_integer((json_int_t)res->tensors_checked));
	return cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER) ? CLI_EXIT_IO : CLI_EXIT_OK;
}

static int check_one(const char *path, bool json)
{
	struct mp_gguf_check_result res = {0};
	struct mp_error err = {0};
	enum mp_err rc = mp_gguf_check_file(path, &res, &err);
	char safe[SAFE_PATH_MAX];

	mp_text_escape(safe, sizeof safe, path, strlen(path), 0);
	if (json) {
		int out = report_json(safe, rc, &err, &res);

		return out ? out : cli_exit_status(rc);
	}
	if (rc)
		return cli_report(path, &err);
	printf("%s: ok (%llu of %llu tensors checked)\n", safe,
	       (unsigned long long)res.tensors_checked, (unsigned long long)res.tensor_count);
	return CLI_EXIT_OK;
}

/* NAME-NNNNN-of-MMMMM.gguf: a shard of a split set */
static bool is_split_name(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n < 20)
		return false;
	base += n - 20;
	for (int i = 0; i < 20; i++) {
		const char *pat = "-99999-of-99999.gguf";

		if (pat[i] == '9' ? (base[i] < '0' || base[i] > '9') : base[i] != pat[i])
			return false;
	}
	return true;
}

/*
 * Which split set a shard operand names: its directory (by device and
 * inode, so "d/x" and "./d/x" agree) and the file name with the shard
 * number blanked.  A glob hands over every shard of a set; the set is
 * checked once, for the first of them.
 */
struct set_key {
	dev_t dev;
	ino_t ino;
	char *dir_text; /* when the directory cannot be stat()ed */
	char *name;     /* NAME-?????-of-MMMMM.gguf */
};

static bool set_key_make(const char *path, struct set_key *k)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t n = strlen(base);
	struct stat st;

	memset(k, 0, sizeof k[0]);
	k->dir_text = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
	k->name = strdup(base);
	if (!k->dir_text || !k->name)
		return false;
	memset(k->name + n - 19, '?', 5); /* the NNNNN of -NNNNN-of-MMMMM.gguf */
	if (stat(k->dir_text, &st) == 0) {
		k->dev = st.st_dev;
		k->ino = st.st_ino;
		free(k->dir_text);
		k->dir_text = NULL;
	}
	return true;
}

static bool set_key_equal(const struct set_key *a, const struct set_key *b)
{
	if (strcmp(a->name, b->name) != 0 || !a->dir_text != !b->dir_text)
		return false;
	return a->dir_text ? strcmp(a->dir_text, b->dir_text) == 0
			   : a->dev == b->dev && a->ino == b->ino;
}

static int print_set_json(const struct mp_shard_set *set, enum mp_err rc, const char *safe,
			  const char *arch)
{
	json_t *o = json_object(), *problems = json_array();
	size_t kept = cli_problems_kept(set);

	for (size_t i = 0; i < kept; i++) {
		json_t *p = json_object();

		json_object_set_new(p, "code", json_string(mp_err_name(set->problems[i].code)));
		json_object_set_new(p, "message", cli_json_text(set->problems[i].msg));
		json_array_append_new(problems, p);
	}
	json_object_set_new(o, "file", cli_json_text(safe));
	json_object_set_new(o, "ok", json_boolean(rc == MP_OK));
	json_object_set_new(o, "code", json_string(mp_err_name(rc)));
	json_object_set_new(o, "shards", json_integer((json_int_t)set->count));
	json_object_set_new(o, "tensors", json_integer((json_int_t)set->ntensors));
	json_object_set_new(o, "bytes", json_integer((json_int_t)set->total_bytes));
	json_object_set_new(o, "architecture", cli_json_text(arch));
	json_object_set_new(o, "problem_count", json_integer((json_int_t)set->nproblems));
	json_object_set_new(o, "problems", problems);
	return cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER) ? CLI_EXIT_IO : CLI_EXIT_OK;
}

/* The set's expert tensors, after its shards were read. */
static enum mp_err check_experts(struct mp_shard_set *set, bool kimi)
{
	struct mp_experts *ex = calloc(1, sizeof *ex);
	enum mp_err rc;

	if (!ex)
		return mp_shards_problem(set, MP_E_NOMEM, "out of memory");
	rc = mp_shards_experts(set, kimi, ex);
	free(ex);
	return rc;
}

static int check_set(const char *path, bool kimi, bool json)
{
	struct mp_shard_set *set = NULL;
	struct mp_error err = {0};
	enum mp_err rc = mp_shards_open(path, &set, &err);
	char name[PATH_MAX + 64], safe[SAFE_PATH_MAX], arch[4 * MP_GGUF_ARCH_MAX + 1];
	int status;

	if (!set)
		return cli_report(path, &err);
	if (!rc)
		rc = check_experts(set, kimi);
	mp_shards_name(set, path, name, sizeof name);
	mp_text_escape(safe, sizeof safe, name, strlen(name), 0);
	mp_text_escape(arch, sizeof arch, set->architecture, strlen(set->architecture), 0);
	status = cli_shard_problems(set, safe, !json);
	if (json)
		status = cli_worst(status, print_set_json(set, rc, safe, arch));
	else
		printf("%s: %s (%zu shard%s, %zu tensors, %llu bytes, architecture %s)\n", safe,
		       rc ? "INVALID" : "ok", set->count, set->count == 1 ? "" : "s",
		       set->ntensors, (unsigned long long)set->total_bytes,
		       arch[0] ? arch : "unknown");
	mp_shards_close(set);
	return status;
}

/* The split sets met so far: each is checked once. */
struct seen_sets {
	struct set_key *keys;
	size_t n;
};

static void set_key_free(struct set_key *k)
{
	free(k->dir_text);
	free(k->name);
	memset(k, 0, sizeof *k);
}

/* Whether path's set is new (and now remembered); -1 when out of memory. */
static int new_set(struct seen_sets *s, const char *path)
{
	struct set_key *k = &s->keys[s->n];

	if (!set_key_make(path, k)) {
		set_key_free(k);
		return -1;
	}
	for (size_t i = 0; i < s->n; i++) {
		if (set_key_equal(&s->keys[i], k)) {
			/* only new sets are kept, so a glob of one set
			 * costs one comparison */
			set_key_free(k);
			return 0;
		}
	}
	s->n++;
	return 1;
}

/* One DeepSeek-V4-Flash GGUF, as SGLang's expert-pack builder checks it. */
static int check_expertpack(const struct check_args *a, const char *path)
{
	struct mp_epw_plan p;
	struct mp_error err = {0};
	enum mp_err rc = mp_epw_plan_open(&p, path, a->config, &err);
	char safe[SAFE_PATH_MAX];
	json_t *o;
	int out = CLI_EXIT_OK;

	mp_text_escape(safe, sizeof safe, path, strlen(path), 0);
	if (a->json) {
		o = json_object();
		json_object_set_new(o, "file", cli_json_text(safe));
		json_object_set_new(o, "format", json_string("expertpack-v1"));
		json_object_set_new(o, "ok", json_boolean(rc == MP_OK));
		json_object_set_new(o, "code", json_string(mp_err_name(rc)));
		json_object_set_new(o, "message", cli_json_text(rc ? err.msg : "ok"));
		json_object_set_new(o, "tensors_checked",
				    json_integer(rc ? 0 : (json_int_t)(3 * p.layers)));
		out = cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER) ? CLI_EXIT_IO : 0;
	} else if (rc) {
		cli_report(rc == MP_E_CONFIG_IO || rc == MP_E_CONFIG_MISMATCH ? a->config : path,
			   &err);
	} else {
		printf("%s: ok (SGLANG-EXPERTPACK-v1: %llu layers x %llu experts, role %llu bytes, "
		       "%zu tensors)\n", safe, (unsigned long long)p.layers,
		       (unsigned long long)p.experts, (unsigned long long)p.role_bytes, p.ntensors);
	}
	mp_epw_plan_free(&p);
	return out ? out : cli_exit_status(rc);
}

/* One operand: its status, or -1 when out of memory. */
static int check_operand(const struct check_args *a, struct seen_sets *s, const char *path)
{
	bool ep = false;
	int fresh;

	if (a->format)
		cli_format_parse(a->format, &ep);
	else
		ep = mp_epw_gguf_is_mxfp4(path);
	if (ep)
		return check_expertpack(a, path);
	if (!is_split_name(path))
		return a->set ? check_set(path, a->kimi, a->json) : check_one(path, a->json);
	fresh = new_set(s, path);
	if (fresh <= 0)
		return fresh ? -1 : CLI_EXIT_OK;
	return check_set(path, a->kimi, a->json);
}

int cli_check_gguf_run(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct check_args a = {.kimi = true};
	struct cli_operands ops;
	struct seen_sets seen = {0};
	enum cli_parse p = cli_parse(&cli_check_gguf_command, argc, argv, &a, &ops);
	int status = CLI_EXIT_OK;

	if (p != CLI_RUN)
		return cli_parse_status(p, cmd);
	if (a.format && cli_format_parse(a.format, &(bool){false})) {
		cli_usage_error(cmd, "--format: %s is not kimi or expertpack-v1", a.format);
		return cli_parse_status(CLI_USAGE_ERROR, cmd);
	}
	seen.keys = calloc((size_t)ops.n, sizeof *seen.keys);
	if (!seen.keys) {
		fprintf(stderr, "moepack %s: out of memory\n", cmd);
		return CLI_EXIT_IO;
	}
	for (int i = 0; i < ops.n; i++) {
		int one = check_operand(&a, &seen, ops.v[i]);

		if (one < 0) {
			status = CLI_EXIT_IO;
			fprintf(stderr, "moepack %s: out of memory\n", cmd);
			break;
		}
		if (one > status)
			status = one;
	}
	for (size_t k = 0; k < seen.n; k++)
		set_key_free(&seen.keys[k]);
	free(seen.keys);
	return cli_worst(status, cli_finish_stdout(cmd));
}
