/* checkgguf.c - `moepack check-gguf` of Kimi-K3 GGUF files: one file's
 * tensor quant types, or a split set's shards checked as one. */
#include "config.h"

#include "cli/kimi/kimi.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/text.h"
#include "cli/cli.h"
#include "cli/kimi/shards.h"
#include "writer/gguf.h"
#include "writer/kimi/ggufcheck.h"
#include "writer/kimi/shards.h"

/* A path escaped for the terminal: each byte may become \xNN. */
#define SAFE_PATH_MAX (PATH_MAX * 4 + 1)

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

/* The split sets met so far among the operands: each is checked once. */
struct sets {
	struct set_key *keys;
	size_t n, room;
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

static void set_key_free(struct set_key *k)
{
	free(k->dir_text);
	free(k->name);
	memset(k, 0, sizeof *k);
}

/* Whether path's set is new (and now remembered); -1 when out of memory. */
static int new_set(struct sets *s, const char *path)
{
	struct set_key *k;

	if (s->n == s->room) {
		size_t room = s->room ? 2 * s->room : 16;
		struct set_key *keys = realloc(s->keys, room * sizeof *keys);

		if (!keys)
			return -1;
		s->keys = keys;
		s->room = room;
	}
	k = &s->keys[s->n];
	memset(k, 0, sizeof *k);

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

int cli_kimi_check_gguf(void **state, const char *path, const struct cli_check_gguf_args *a)
{
	struct sets *s = *state;
	bool set = a->set, kimi = !a->any_geometry, json = a->json;
	int fresh;

	if (!is_split_name(path))
		return set ? check_set(path, kimi, json) : check_one(path, json);
	if (!s && !(*state = s = calloc(1, sizeof *s)))
		return -1;
	fresh = new_set(s, path);
	if (fresh <= 0)
		return fresh ? -1 : CLI_EXIT_OK;
	return check_set(path, kimi, json);
}

void cli_kimi_check_gguf_end(void *state)
{
	struct sets *s = state;

	if (!s)
		return;
	for (size_t k = 0; k < s->n; k++)
		set_key_free(&s->keys[k]);
	free(s->keys);
	free(s);
}
