/*
 * ggufdemo.c - a small Kimi-K3-shaped split GGUF checkpoint (ggufdemo.h),
 * written with writer/ggufwrite.h.
 */
#include "config.h"

#include "writer/kimi/ggufdemo.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/outfile.h"
#include "base/quant.h"
#include "pack/pack.h"

#define MAX_DIM 65536u
#define MAX_EXPERTS 65536u
#define PAGE_WEIGHTS (1u << 19) /* hidden x inter for whole pages of Q2_K and Q3_K */

enum mp_err mp_gguf_demo_resolve(struct mp_gguf_demo_opts *o, struct mp_error *err)
{
	if (!o->experts)
		o->experts = 2;
	if (!o->hidden)
		o->hidden = 512;
	if (!o->inter)
		o->inter = 1024;
	if (o->experts > MAX_EXPERTS)
		return mp_fail(err, MP_E_USAGE, "invalid usage: --experts %" PRIu64
			       " is too large (at most %u)", o->experts, MAX_EXPERTS);
	if (o->hidden % MP_QK_K || o->hidden > MAX_DIM)
		return mp_fail(err, MP_E_USAGE, "invalid usage: --hidden %" PRIu64 " must be "
			       "a multiple of 256 up to %u", o->hidden, MAX_DIM);
	if (o->inter % MP_QK_K || o->inter > MAX_DIM)
		return mp_fail(err, MP_E_USAGE, "invalid usage: --inter %" PRIu64 " must be "
			       "a multiple of 256 up to %u", o->inter, MAX_DIM);
	if ((o->hidden * o->inter) % PAGE_WEIGHTS)
		return mp_fail(err, MP_E_USAGE, "invalid usage: --hidden %" PRIu64
			       " x --inter %" PRIu64 " must be a multiple of %u, so that one "
			       "expert of every role is whole 4096-byte pages, as build needs "
			       "(e.g. 512 x 1024)", o->hidden, o->inter, PAGE_WEIGHTS);
	return MP_OK;
}

/* The Kimi demo's tensors: seeds spread, so that neighbours differ. */
static void tensor(struct mp_gguf_out_tensor *t, const char *name, uint32_t type,
		   uint32_t n_dims, uint64_t d0, uint64_t d1, uint64_t d2, uint64_t seed)
{
	mp_gguf_out_tensor_init(t, name, type, n_dims, d0, d1, d2, mp_splitmix64(seed));
}

/* The tensors of shard s (layers 0..30, 31..61, 62..92): *n of them. */
static struct mp_gguf_out_tensor *demo_tensors(const struct mp_gguf_demo_opts *o, int s,
					       size_t *n)
{
	int first = s * 31, last = s == MP_GGUF_DEMO_SHARDS - 1 ? MP_ACTIVE_LAST : first + 30;
	struct mp_gguf_out_tensor *t = calloc((size_t)(last - first + 1) * 5 + 2, sizeof *t);
	char name[MP_GGUF_NAME_MAX + 1];
	size_t k = 0;

	if (!t)
		return NULL;
	if (s == 0)
		tensor(&t[k++], "token_embd.weight", MP_GGML_F32, 2, 64, 32, 1, o->seed);
	for (int layer = first; layer <= last; layer++) {
		uint64_t seed = o->seed ^ ((uint64_t)layer << 8);

		snprintf(name, sizeof name, "blk.%d.attn_k_b.weight", layer);
		tensor(&t[k++], name, MP_GGML_Q4_0, 2, 128, 64, 1, seed);
		snprintf(name, sizeof name, "blk.%d.attn_v_b.weight", layer);
		tensor(&t[k++], name, MP_GGML_Q2_K, 2, 256, 64, 1, seed + 1);
		if (layer < MP_ACTIVE_FIRST)
			continue;
		/* llama.cpp's order (gate, up, down), not the pack's */
		mp_tensor_name(name, sizeof name, (uint64_t)layer, MP_ROLE_GATE);
		tensor(&t[k++], name, mp_role_dtype[MP_ROLE_GATE], 3, o->hidden, o->inter,
		       o->experts, seed + 2);
		mp_tensor_name(name, sizeof name, (uint64_t)layer, MP_ROLE_UP);
		tensor(&t[k++], name, mp_role_dtype[MP_ROLE_UP], 3, o->hidden, o->inter,
		       o->experts, seed + 3);
		mp_tensor_name(name, sizeof name, (uint64_t)layer, MP_ROLE_DOWN);
		tensor(&t[k++], name, mp_role_dtype[MP_ROLE_DOWN], 3, o->inter, o->hidden,
		       o->experts, seed + 4);
	}
	if (s == MP_GGUF_DEMO_SHARDS - 1)
		tensor(&t[k++], "output_norm.weight", MP_GGML_F32, 1, 64, 1, 1, o->seed + 5);
	*n = k;
	return t;
}

static char *config_text(const struct mp_gguf_demo_opts *o)
{
	json_t *root = json_pack("{s:[s], s:s, s:{s:i, s:i, s:I, s:i, s:i, s:i, s:I, s:I, "
				 "s:s, s:f, s:f}}",
				 "architectures", "KimiK3LinearForCausalLM",
				 "model_type", "kimi_linear",
				 "text_config",
				 "num_hidden_layers", MP_K3_HIDDEN_LAYERS,
				 "first_k_dense_replace", MP_ACTIVE_FIRST,
				 "num_experts", (json_int_t)o->experts,
				 "num_experts_per_token", MP_TOP_K,
				 "num_shared_experts", 2,
				 "hidden_size", 7168,
				 "routed_expert_hidden_size", (json_int_t)o->hidden,
				 "moe_intermediate_size", (json_int_t)o->inter,
				 "hidden_act", "situ",
				 "activation_situ_beta", 4.0,
				 "activation_situ_linear_beta", 25.0);
	char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
	char *line = text ? malloc(strlen(text) + 2) : NULL;

	if (line)
		sprintf(line, "%s\n", text);
	free(text);
	json_decref(root);
	return line;
}

struct target {
	char *path, *tmp;
	int fd;
};

/* An empty temporary sibling of t->path, opened without following links. */
static enum mp_err target_open(struct target *t, const char *dir, const char *name,
			       struct mp_error *err)
{
	size_t n = strlen(dir) + strlen(name) + 64;

	t->fd = -1;
	t->path = mp_path_join(dir, name);
	t->tmp = malloc(n);
	if (!t->path || !t->tmp)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (unsigned attempt = 0; attempt < 1000; attempt++) {
		snprintf(t->tmp, n, "%s/.%s.tmp-%ld-%u", dir, name, (long)getpid(), attempt);
		t->fd = open(t->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (t->fd >= 0 || errno != EEXIST)
			break;
	}
	if (t->fd < 0) {
		enum mp_err rc = mp_fail(err, MP_E_GGUF_IO, "cannot write %s: %s", t->path,
					 strerror(errno));

		free(t->tmp);
		t->tmp = NULL;
		return rc;
	}
	return MP_OK;
}

static enum mp_err target_close(struct target *t, struct mp_error *err)
{
	int failed = fsync(t->fd) != 0;
	int saved = failed ? errno : 0;

	if (close(t->fd) != 0) {
		failed = 1;
		if (!saved)
			saved = errno;
	}
	t->fd = -1;
	if (failed)
		return mp_fail(err, MP_E_GGUF_IO, "cannot write %s: %s", t->path,
			       strerror(saved));
	return MP_OK;
}

static void target_discard(struct target *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->tmp)
		unlink(t->tmp);
	free(t->tmp);
	free(t->path);
	memset(t, 0, sizeof *t);
	t->fd = -1;
}

/* No *.gguf (not hidden) in dir but the demo's own shards. */
static enum mp_err check_directory(const char *dir, struct mp_error *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	enum mp_err rc = MP_OK;

	if (!d)
		return mp_fail(err, MP_E_GGUF_IO, "cannot read directory %s: %s", dir,
			       strerror(errno));
	while (!rc && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		bool ours = false;

		if (e->d_name[0] == '.' || n < 5 || strcmp(e->d_name + n - 5, ".gguf") != 0)
			continue;
		for (int i = 1; i <= MP_GGUF_DEMO_SHARDS; i++) {
			char name[64];

			snprintf(name, sizeof name, MP_GGUF_DEMO_PREFIX "-%05d-of-%05d.gguf", i,
				 MP_GGUF_DEMO_SHARDS);
			ours |= strcmp(e->d_name, name) == 0;
		}
		if (ours)
			continue;
		rc = mp_fail(err, MP_E_USAGE, "invalid usage: %s holds %s, and build takes every "
			     "*.gguf file of a directory as one checkpoint: use another "
			     "directory", dir, e->d_name);
	}
	closedir(d);
	return rc;
}

static enum mp_err prepare_directory(const struct mp_gguf_demo_opts *o, struct mp_error *err)
{
	struct stat st;

	if (mkdir(o->dir, 0777) != 0 && errno != EEXIST)
		return mp_fail(err, MP_E_GGUF_IO, "cannot create directory %s: %s", o->dir,
			       strerror(errno));
	if (stat(o->dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return mp_fail(err, MP_E_USAGE, "invalid usage: --gguf %s is not a directory",
			       o->dir);
	return check_directory(o->dir, err);
}

static enum mp_err refuse_existing(const char *dir, const char *name, struct mp_error *err)
{
	struct stat st;
	char *path = mp_path_join(dir, name);
	enum mp_err rc = MP_OK;

	if (!path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	if (lstat(path, &st) == 0)
		rc = mp_fail(err, MP_E_USAGE, "invalid usage: %s exists: give --force to "
			     "replace the demo checkpoint", path);
	free(path);
	return rc;
}

static enum mp_err write_shard(const struct mp_gguf_demo_opts *o, int s, size_t total,
			       struct target *t, uint64_t *ntensors, struct mp_error *err)
{
	struct mp_gguf_out_kv kv[] = {
		{"general.architecture", MP_GGUF_STRING, "kimi-k3", 0},
		{"general.name", MP_GGUF_STRING, "moepack mkdemo --gguf checkpoint", 0},
		{"split.no", MP_GGUF_U16, NULL, (uint32_t)s},
		{"split.count", MP_GGUF_U16, NULL, MP_GGUF_DEMO_SHARDS},
		{"split.tensors.count", MP_GGUF_I32, NULL, (uint32_t)total},
	};
	size_t n = 0;
	struct mp_gguf_out_tensor *tensors = demo_tensors(o, s, &n);
	enum mp_err rc;

	if (!tensors)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	rc = mp_gguf_write(t->fd, t->path, kv, sizeof kv / sizeof kv[0], tensors, n, err);
	free(tensors);
	*ntensors += n;
	return rc ? rc : target_close(t, err);
}

static enum mp_err write_config(const struct mp_gguf_demo_opts *o, struct target *t,
				struct mp_error *err)
{
	char *text = config_text(o);
	enum mp_err rc;
	size_t done;
	int e;

	if (!text)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	e = mp_pwrite_all(t->fd, text, strlen(text), 0, &done);
	free(text);
	rc = e ? mp_fail(err, MP_E_GGUF_IO, "cannot write GGUF file %s at byte %zu: %s",
			 t->path, done, mp_write_failure(e)) : MP_OK;
	return rc ? rc : target_close(t, err);
}

#define DEMO_FILES (MP_GGUF_DEMO_SHARDS + 1) /* the shards, then config.json */

static void demo_names(char names[DEMO_FILES][64])
{
	for (int i = 0; i < DEMO_FILES; i++)
		if (i < MP_GGUF_DEMO_SHARDS)
			snprintf(names[i], 64, MP_GGUF_DEMO_PREFIX "-%05d-of-%05d.gguf", i + 1,
				 MP_GGUF_DEMO_SHARDS);
		else
			snprintf(names[i], 64, "config.json");
}

/* split.tensors.count: every shard's tensors. */
static enum mp_err count_tensors(const struct mp_gguf_demo_opts *o, size_t *total,
				 struct mp_error *err)
{
	*total = 0;
	for (int s = 0; s < MP_GGUF_DEMO_SHARDS; s++) {
		size_t n = 0;
		struct mp_gguf_out_tensor *x = demo_tensors(o, s, &n);

		if (!x)
			return mp_fail(err, MP_E_NOMEM, "out of memory");
		free(x);
		*total += n;
	}
	return MP_OK;
}

/* All written: into place, the config last, and the directory synced
 * (at best: the files are complete either way). */
static enum mp_err commit_targets(struct target t[DEMO_FILES], const char *dir,
				  struct mp_gguf_demo_result *res, struct mp_error *err)
{
	int dfd;

	for (int i = 0; i < DEMO_FILES; i++) {
		struct stat st;

		if (rename(t[i].tmp, t[i].path) != 0)
			return mp_fail(err, MP_E_GGUF_IO, "cannot rename %s to %s: %s", t[i].tmp,
				       t[i].path, strerror(errno));
		free(t[i].tmp);
		t[i].tmp = NULL;
		if (i < MP_GGUF_DEMO_SHARDS && lstat(t[i].path, &st) == 0)
			res->bytes += (uint64_t)st.st_size;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	for (int i = 0; i < MP_GGUF_DEMO_SHARDS; i++) {
		res->shard[i] = t[i].path;
		t[i].path = NULL;
	}
	res->config = t[MP_GGUF_DEMO_SHARDS].path;
	t[MP_GGUF_DEMO_SHARDS].path = NULL;
	return MP_OK;
}

enum mp_err mp_gguf_demo_write(const struct mp_gguf_demo_opts *o,
			       struct mp_gguf_demo_result *res, struct mp_error *err)
{
	struct target t[DEMO_FILES];
	char names[DEMO_FILES][64];
	size_t total = 0;
	enum mp_err rc;

	memset(res, 0, sizeof *res);
	for (int i = 0; i < DEMO_FILES; i++) {
		memset(&t[i], 0, sizeof t[i]);
		t[i].fd = -1;
	}
	demo_names(names);
	if ((rc = prepare_directory(o, err)))
		return rc;
	for (int i = 0; !o->force && i < DEMO_FILES; i++)
		if ((rc = refuse_existing(o->dir, names[i], err)))
			return rc;
	if ((rc = count_tensors(o, &total, err)))
		return rc;
	for (int i = 0; !rc && i < DEMO_FILES; i++) {
		rc = target_open(&t[i], o->dir, names[i], err);
		if (!rc)
			rc = i < MP_GGUF_DEMO_SHARDS
				     ? write_shard(o, i, total, &t[i], &res->tensors, err)
				     : write_config(o, &t[i], err);
	}
	if (!rc)
		rc = commit_targets(t, o->dir, res, err);
	if (!rc)
		return MP_OK;
	for (int i = 0; i < DEMO_FILES; i++)
		target_discard(&t[i]);
	res->tensors = 0;
	return rc;
}

void mp_gguf_demo_result_free(struct mp_gguf_demo_result *res)
{
	for (int i = 0; i < MP_GGUF_DEMO_SHARDS; i++)
		free(res->shard[i]);
	free(res->config);
	memset(res, 0, sizeof *res);
}
