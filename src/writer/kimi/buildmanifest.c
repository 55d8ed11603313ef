/*
 * buildmanifest.c - the manifest the Kimi builder writes beside the pack
 * (build_internal.h's mp_build_inventory_json(),
 * mp_build_check_manifest_ahead() and mp_build_write_manifest()): the
 * inventory of shards and tensors its source digest covers, the tokenizer
 * files, the model and pack sections, checked against the validator's
 * limits before anything is copied and written atomically once the pack
 * is in place.
 */
#include "config.h"

#include "writer/kimi/build.h"
#include "writer/kimi/build_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "base/jsonstr.h"
#include "base/outfile.h"
#include "base/quant.h"
#include "base/text.h"
#include "pack/digest.h"
#include "pack/kimi/manifest.h"
#include "writer/kimi/manifestwrite.h"

/* A path as a JSON string: jansson carries UTF-8 only. */
static json_t *path_json(const char *path, const char **bad_path)
{
	json_t *s = json_string(path);

	if (!s && !*bad_path)
		*bad_path = path;
	return s;
}

static int tensor_name_cmp(const void *a, const void *b)
{
	const struct mp_shard_tensor *x = *(const struct mp_shard_tensor *const *)a;
	const struct mp_shard_tensor *y = *(const struct mp_shard_tensor *const *)b;

	return strcmp(x->name, y->name);
}

/* jansson carries UTF-8 only; say which name, not "out of memory" */
static enum mp_err check_tensor_names(const struct mp_shard_set *set, struct mp_error *err)
{
	for (size_t i = 0; i < set->ntensors; i++)
		if (!mp_text_is_utf8(set->tensors[i].name, strlen(set->tensors[i].name)))
			return mp_fail(err, MP_E_USAGE, "invalid usage: tensor name %s in %s is "
				       "not valid UTF-8, which a manifest cannot record",
				       set->tensors[i].name,
				       set->shards[set->tensors[i].shard].path);
	return MP_OK;
}

/* inventory.shards: each shard with the digest of its GGUF metadata. */
static enum mp_err shards_json(const struct mp_shard_set *set, json_t *shards,
			       const char **bad_path, int *bad, struct mp_error *err)
{
	for (size_t i = 0; i < set->count; i++) {
		const struct mp_shard *s = &set->shards[i];
		unsigned char d[MP_SHA256_LEN];
		char hex[MP_SHA256_HEX];
		enum mp_err rc = mp_sha256_fd(s->fd, s->hdr.data_start, s->path, NULL, NULL, NULL,
					      d, err);
		json_t *o;

		if (rc)
			return rc;
		mp_sha256_hex(d, hex);
		o = json_object();
		mp_mw_put(o, "index", mp_mw_u64(i), bad);
		mp_mw_put(o, "path", path_json(s->real_path, bad_path), bad);
		mp_mw_put(o, "size", mp_mw_u64(s->size), bad);
		mp_mw_put(o, "metadata_nbytes", mp_mw_u64(s->hdr.data_start), bad);
		mp_mw_put(o, "metadata_sha256", json_string(hex), bad);
		mp_mw_put(o, "tensor_count", mp_mw_u64(s->tensor_count), bad);
		mp_mw_append(shards, o, bad);
	}
	return MP_OK;
}

static json_t *tensor_json(const struct mp_shard_tensor *t, int *bad)
{
	json_t *o = json_object(), *shape = json_array();
	const char *type = mp_gguf_type_name(t->type);

	for (uint32_t d = 0; d < t->n_dims; d++)
		mp_mw_append(shape, mp_mw_u64(t->dims[d]), bad);
	mp_mw_put(o, "name", json_string(t->name), bad);
	mp_mw_put(o, "shape", shape, bad);
	mp_mw_put(o, "dtype", json_string(type ? type : "?"), bad);
	mp_mw_put(o, "dtype_id", mp_mw_u64(t->type), bad);
	mp_mw_put(o, "shard_index", mp_mw_u64(t->shard), bad);
	mp_mw_put(o, "data_offset", mp_mw_u64(t->data_offset), bad);
	mp_mw_put(o, "nbytes", mp_mw_u64(t->nbytes), bad);
	return o;
}

/* inventory.tensors, by name. */
static void tensors_json(const struct mp_shard_set *set, json_t *tensors, int *bad)
{
	const struct mp_shard_tensor **sorted = malloc((set->ntensors ? set->ntensors : 1) *
						       sizeof *sorted);

	if (!sorted) {
		*bad = 1;
		return;
	}
	for (size_t i = 0; i < set->ntensors; i++)
		sorted[i] = &set->tensors[i];
	qsort(sorted, set->ntensors, sizeof *sorted, tensor_name_cmp);
	for (size_t i = 0; i < set->ntensors; i++)
		mp_mw_append(tensors, tensor_json(sorted[i], bad), bad);
	free(sorted);
}

/* {summary, shards, tensors}: what source.inventory_sha256 covers. */
enum mp_err mp_build_inventory_json(const struct build *b, json_t **out,
				    struct mp_error *err)
{
	const struct mp_shard_set *set = b->set;
	const struct mp_mw_summary summary = {set->architecture, set->count, set->ntensors,
					      set->total_bytes};
	json_t *shards = json_array(), *tensors = json_array(), *inv;
	const char *bad_path = NULL;
	int bad = 0;
	enum mp_err rc = check_tensor_names(set, err);

	if (!rc)
		rc = shards_json(set, shards, &bad_path, &bad, err);
	if (!rc)
		tensors_json(set, tensors, &bad);
	inv = mp_mw_inventory(&summary, shards, tensors, &bad);
	if (!rc && bad_path)
		rc = mp_fail(err, MP_E_USAGE, "invalid usage: %s is not valid UTF-8, which a "
			     "manifest cannot record", bad_path);
	if (!rc && bad)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
	if (rc) {
		json_decref(inv);
		return rc;
	}
	*out = inv;
	return MP_OK;
}

/* Code point order, as Python's sorted(): not the locale's alphasort(). */
static int name_order(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* tokenizer.files += the file at path (named name), if a regular file. */
static enum mp_err tokenizer_file(const char *path, const char *name, json_t *files,
				  const char **bad_path, int *bad, struct mp_error *err)
{
	unsigned char d[MP_SHA256_LEN];
	char hex[MP_SHA256_HEX];
	struct stat st;
	enum mp_err rc;
	json_t *o;
	int fd;

	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return MP_OK;
	if (!mp_text_is_utf8(name, strlen(name)))
		return mp_fail(err, MP_E_USAGE, "invalid usage: tokenizer file %s is not valid "
			       "UTF-8, which a manifest cannot record", path);
	rc = mp_open_regular(path, "tokenizer file", MP_E_CONFIG_IO, &fd, &st, err);
	if (rc)
		return rc;
	rc = mp_sha256_fd(fd, (uint64_t)st.st_size, path, NULL, NULL, NULL, d, err);
	close(fd);
	if (rc)
		return rc;
	mp_sha256_hex(d, hex);
	o = json_object();
	mp_mw_put(o, "name", path_json(name, bad_path), bad);
	mp_mw_put(o, "size", mp_mw_u64((uint64_t)st.st_size), bad);
	mp_mw_put(o, "sha256", json_string(hex), bad);
	mp_mw_append(files, o, bad);
	return MP_OK;
}

/* The regular files of the directory real (given as dir), by name. */
static enum mp_err tokenizer_files(const char *dir, const char *real, json_t *files,
				   const char **bad_path, int *bad, struct mp_error *err)
{
	struct dirent **names = NULL;
	enum mp_err rc = MP_OK;
	int n = scandir(real, &names, NULL, name_order);

	if (n < 0)
		return mp_fail(err, MP_E_USAGE, "invalid usage: --tokenizer-dir %s: %s", dir,
			       strerror(errno));
	for (int i = 0; i < n; i++) {
		char *path = rc ? NULL : mp_path_join(real, names[i]->d_name);

		if (path)
			rc = tokenizer_file(path, names[i]->d_name, files, bad_path, bad, err);
		free(path);
		free(names[i]);
	}
	free(names);
	return rc;
}

static enum mp_err tokenizer_json(const char *dir, json_t **out, const char **bad_path,
				  struct mp_error *err)
{
	char *real = realpath(dir, NULL);
	char hex[MP_SHA256_HEX] = "";
	json_t *tok, *files;
	int bad = 0;
	enum mp_err rc;

	if (!real)
		return mp_fail(err, MP_E_USAGE, "invalid usage: --tokenizer-dir %s: %s", dir,
			       strerror(errno));
	/* named here: *bad_path must not point into memory freed below */
	if (!mp_text_is_utf8(real, strlen(real))) {
		rc = mp_fail(err, MP_E_USAGE, "invalid usage: tokenizer directory %s is not "
			     "valid UTF-8, which a manifest cannot record", real);
		free(real);
		return rc;
	}
	tok = json_object();
	files = json_array();
	rc = tokenizer_files(dir, real, files, bad_path, &bad, err);
	if (!rc && mp_mw_canonical_sha256(files, hex) != 0)
		bad = 1;
	mp_mw_put(tok, "path", path_json(real, bad_path), &bad);
	mp_mw_put(tok, "files", files, &bad);
	mp_mw_put(tok, "inventory_sha256", json_string(hex), &bad);
	free(real);
	if (!rc && bad && !*bad_path)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
	if (rc) {
		json_decref(tok);
		return rc;
	}
	*out = tok;
	return MP_OK;
}

static void iso_now(char *buf, size_t len)
{
	struct timeval tv;
	struct tm tm;
	char base[32];

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
	/* datetime.isoformat() leaves out zero microseconds */
	if (tv.tv_usec)
		snprintf(buf, len, "%s.%06ld+00:00", base, (long)tv.tv_usec);
	else
		snprintf(buf, len, "%s+00:00", base);
}

/* What the manifest records that the copy and checks decide. */
struct manifest_vals {
	const char *created;     /* created_at */
	const char *pack_real;   /* expert_pack.path */
	uint64_t samples;        /* payload samples compared */
	const char *sha256;      /* of the whole pack, with --full-sha256 */
};

/* model: the shared keys and the config's other numbers. */
static json_t *model_json(const struct build *b, const char *config_real,
			  const char **bad_path, int *bad)
{
	const struct mp_model_config *c = b->cfg;
	json_t *model = mp_mw_model(c->num_hidden_layers, c->num_experts, c->top_k, c->sha256,
				    bad);

	mp_mw_put(model, "config_path", config_real ? path_json(config_real, bad_path) : NULL,
		  bad);
	mp_mw_put(model, "architecture", json_string("KimiLinearForCausalLM"), bad);
	mp_mw_put(model, "num_shared_experts", mp_mw_u64(c->num_shared_experts), bad);
	mp_mw_put(model, "hidden_size", mp_mw_u64(c->hidden_size), bad);
	mp_mw_put(model, "routed_expert_hidden_size", mp_mw_u64(c->routed_expert_hidden_size),
		  bad);
	mp_mw_put(model, "moe_intermediate_size", mp_mw_u64(c->moe_intermediate_size), bad);
	mp_mw_put(model, "hidden_act", json_string(c->hidden_act), bad);
	return model;
}

/* expert_pack: the shared keys and the reference's format constants,
 * entry counts and verification summary. */
static json_t *pack_json(const struct build *b, const struct manifest_vals *v, int *bad)
{
	const struct mp_layout *l = &b->l;
	json_t *pack = mp_mw_expert_pack(l, b->res->index_sha256, bad);
	json_t *roles = json_object_get(pack, "roles");
	uint64_t entries = (uint64_t)(MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1) * l->experts;

	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		json_t *role = json_object_get(roles, mp_role_name((enum mp_role)r));

		mp_mw_put(role, "entry_count", mp_mw_u64(entries), bad);
		mp_mw_put(role, "payload_bytes", mp_mw_u64(entries * l->role_bytes[r]), bad);
	}
	mp_mw_put(pack, "magic", json_string(MP_MAGIC), bad);
	mp_mw_put(pack, "version", json_integer(MP_VERSION), bad);
	mp_mw_put(pack, "header_bytes", json_integer(MP_HEADER_SIZE), bad);
	mp_mw_put(pack, "entry_bytes", json_integer(MP_ENTRY_SIZE), bad);
	mp_mw_put(pack, "index_count", mp_mw_u64(l->index_count), bad);
	mp_mw_put(pack, "active_moe_layer_ids", mp_mw_layer_ids(bad), bad);
	mp_mw_put(pack, "num_experts", mp_mw_u64(l->experts), bad);
	mp_mw_put(pack, "top_k", json_integer(MP_TOP_K), bad);
	mp_mw_put(pack, "payload_samples_verified", mp_mw_u64(v->samples), bad);
	mp_mw_put(pack, "full_pack_hash", json_boolean(b->o->full_sha256), bad);
	if (b->o->full_sha256)
		mp_mw_put(pack, "sha256", json_string(v->sha256), bad);
	return pack;
}

static json_t *verification_json(const struct build *b, uint64_t samples, int *bad)
{
	json_t *verification = json_object();

	mp_mw_put(verification, "structure", json_string("complete"), bad);
	mp_mw_put(verification, "payload_samples", mp_mw_u64(samples), bad);
	mp_mw_put(verification, "full_source_hashes", json_false(), bad);
	mp_mw_put(verification, "full_pack_hash", json_boolean(b->o->full_sha256), bad);
	return verification;
}

/* Why the manifest cannot be written, once every part is built. */
static enum mp_err manifest_problem(const struct build *b, const char *config_real,
				    const char *pack_real, const char *bad_path, int bad,
				    struct mp_error *err)
{
	if (!config_real || !pack_real)
		return mp_fail(err, MP_E_PACK_IO, "cannot resolve %s: %s",
			       config_real ? b->res->pack_path : b->o->config_path,
			       strerror(errno));
	if (bad_path)
		return mp_fail(err, MP_E_USAGE, "invalid usage: %s is not valid UTF-8, which a "
			       "manifest cannot record", bad_path);
	if (bad)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	return MP_OK;
}

/* The manifest's text, malloc'd into *out. */
static enum mp_err manifest_text(struct build *b, json_t *inventory,
				 const struct manifest_vals *v, char **out,
				 struct mp_error *err)
{
	const char *bad_path = NULL;
	char *config_real = realpath(b->o->config_path, NULL);
	int bad = 0;
	json_t *model = model_json(b, config_real, &bad_path, &bad);
	json_t *pack = pack_json(b, v, &bad);
	json_t *root = mp_mw_root(model, pack, inventory, b->res->inventory_sha256, &bad);
	enum mp_err rc = MP_OK;

	*out = NULL;
	mp_mw_put(root, "created_at", json_string(v->created), &bad);
	mp_mw_put(root, "sglang_git_sha", json_string("unknown"), &bad);
	if (b->o->tokenizer_dir) {
		json_t *tok = NULL;

		rc = tokenizer_json(b->o->tokenizer_dir, &tok, &bad_path, err);
		if (!rc)
			mp_mw_put(root, "tokenizer", tok, &bad);
	}
	mp_mw_put(root, "verification", verification_json(b, v->samples, &bad), &bad);
	if (!rc)
		rc = manifest_problem(b, config_real, v->pack_real, bad_path, bad, err);
	if (!rc) {
		*out = mp_mw_text(root, v->pack_real, true);
		if (!*out)
			rc = mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	json_decref(root);
	free(config_real);
	return rc;
}

enum mp_err mp_build_write_manifest(struct build *b, json_t *inventory, struct mp_error *err)
{
	char created[64], *text = NULL;
	char *pack_real = realpath(b->res->pack_path, NULL);
	struct manifest_vals v = {created, pack_real, b->res->samples_compared, b->res->sha256};
	enum mp_err rc;

	iso_now(created, sizeof created);
	rc = manifest_text(b, inventory, &v, &text, err);
	if (!rc)
		rc = mp_output_write_atomic(b->res->manifest_path, MP_TMP_SIBLING, MP_E_PACK_IO, text,
					    strlen(text), err);
	free(text);
	free(pack_real);
	return rc;
}

/*
 * Before anything is copied: the manifest this build will write, with the
 * values still to come at their longest (created_at with microseconds, a
 * digest) or as they will be (the samples), must record every name and
 * pass the limits a validator reads it with.  A checkpoint of 100,000
 * tiny tensors is refused here, not after a terabyte is copied.
 */
enum mp_err mp_build_check_manifest_ahead(struct build *b, json_t *inventory,
					  struct mp_error *err)
{
	char zeros[MP_SHA256_HEX], *text = NULL, *dir_real = realpath(b->dir, NULL);
	const char *slash = strrchr(b->res->pack_path, '/');
	const char *base = slash ? slash + 1 : b->res->pack_path;
	char *pack_real = dir_real ? malloc(strlen(dir_real) + strlen(base) + 2) : NULL;
	struct manifest_vals v = {"0000-00-00T00:00:00.000000+00:00", NULL,
				  mp_build_planned_samples(b->o, b->l.index_count), zeros};
	enum mp_err rc;

	memset(zeros, '0', MP_SHA256_HEX - 1);
	zeros[MP_SHA256_HEX - 1] = '\0';
	if (pack_real)
		sprintf(pack_real, "%s/%s", strcmp(dir_real, "/") ? dir_real : "", base);
	/* a directory that cannot be resolved fails later, naming itself */
	v.pack_real = pack_real ? pack_real : b->res->pack_path;
	rc = manifest_text(b, inventory, &v, &text, err);
	if (!rc && strlen(text) > MP_MANIFEST_MAX)
		rc = mp_fail(err, MP_E_MANIFEST_LIMIT, "%s: the manifest of these %zu tensors "
			     "would be %zu bytes, more than the %u MiB a manifest may have",
			     mp_err_summary(MP_E_MANIFEST_LIMIT), b->set->ntensors, strlen(text),
			     MP_MANIFEST_MAX >> 20);
	if (!rc)
		rc = mp_json_check_limits(text, strlen(text), "the manifest of these tensors",
					  &mp_manifest_limits, err);
	free(text);
	free(pack_real);
	free(dir_real);
	return rc;
}
