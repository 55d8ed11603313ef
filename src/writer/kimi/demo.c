/*
 * demo.c - write a valid demo expert pack, its manifest and a config.
 *
 * Everything is first written to temporary files next to their targets and
 * renamed into place at the end, the manifest last: a failed or interrupted
 * run never leaves a half-written pack behind a manifest that vouches for it.
 * The pack is written front to back in one pass with large positioned
 * writes; the index digest and (on request) the whole-file digest are
 * computed from the same buffers as they go out.
 */
#include "config.h"

#include "writer/kimi/demo.h"

#include "pack/digest.h"
#include "base/file.h"
#include "pack/kimi/index.h"
#include "base/jsonstr.h"
#include "writer/kimi/layout.h"
#include "writer/kimi/manifestwrite.h"
#include "writer/outputs.h"
#include "base/outfile.h"
#include "base/quant.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_EXPERTS 4
#define DEFAULT_ALIGNMENT 4096

/* Limits that keep all arithmetic far from overflow and reject nonsense
 * early with a message instead of a failed multi-terabyte write. */
#define MAX_DIM (1u << 24)
#define MAX_ALIGNMENT (1u << 30)

#define WRITE_BUF (8u << 20)
#define PROGRESS_STEP (8u << 20)

static const unsigned char zeros[64 * 1024];

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static int is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

/*
 * How many 256 x 256 weight units (h * i, with h = hidden/256 and
 * i = inter/256) a role must hold for every role's size to be a multiple of
 * the alignment.  A role holds hidden * inter / 256 = 256 * h * i blocks.
 */
static uint64_t units_needed(uint64_t alignment)
{
	uint64_t need = 1;

	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const struct mp_quant_type *t = mp_quant_by_id(mp_role_dtype[r]);
		uint64_t per_unit = (uint64_t)MP_QK_K * t->block_bytes;
		uint64_t q = alignment / gcd_u64(alignment, per_unit);

		/* q is a power of two, so lcm(need, q) is the larger one. */
		if (q > need)
			need = q;
	}
	return need;
}

/* The pack's layout for o's expert: role sizes, shapes and offsets. */
static enum mp_err demo_layout(const struct mp_demo_opts *o, struct mp_layout *l,
			       struct mp_error *err)
{
	uint64_t weights = o->hidden * o->inter; /* both <= 2^24 */

	memset(l, 0, sizeof *l);
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const struct mp_quant_type *qt = mp_quant_by_id(mp_role_dtype[r]);

		l->role_bytes[r] = mp_quant_bytes(qt, weights);
		if (l->role_bytes[r] == 0)
			return mp_fail(err, MP_E_USAGE,
				       "invalid usage: --hidden %" PRIu64 " x --inter %" PRIu64
				       " is not a whole number of %s blocks",
				       o->hidden, o->inter, qt->name);
	}
	mp_layout_set_shapes(l, o->hidden, o->inter);
	return mp_layout_compute(l, o->experts, o->alignment, o->gap, err);
}

/* Defaults for the counts, and every option within its limits. */
static enum mp_err check_options(struct mp_demo_opts *o, struct mp_error *err)
{
	if (!o->out || !*o->out)
		return mp_fail(err, MP_E_USAGE, "invalid usage: --out is required");
	if (o->experts == 0)
		o->experts = DEFAULT_EXPERTS;
	/* The validator's limit: mkdemo never writes a pack verify refuses. */
	if (o->experts > MP_MAX_EXPERTS)
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: --experts %" PRIu64
			       " is too large (at most %u)", o->experts, MP_MAX_EXPERTS);
	if (o->alignment == 0)
		o->alignment = DEFAULT_ALIGNMENT;
	if (!is_pow2(o->alignment))
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: --alignment %" PRIu64 " is not a power of two",
			       o->alignment);
	if (o->alignment > MAX_ALIGNMENT)
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: --alignment %" PRIu64
			       " is too large (at most %u)", o->alignment, MAX_ALIGNMENT);
	if (o->hidden % MP_QK_K || o->hidden > MAX_DIM)
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: --hidden %" PRIu64
			       " must be a multiple of %d of at most %u",
			       o->hidden, MP_QK_K, MAX_DIM);
	if (o->inter % MP_QK_K || o->inter > MAX_DIM)
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: --inter %" PRIu64
			       " must be a multiple of %d of at most %u",
			       o->inter, MP_QK_K, MAX_DIM);
	return MP_OK;
}

/*
 * hidden and inter, the 0 ones chosen: a role holds h*i*256 blocks
 * (h = hidden/256, i = inter/256), so its size is aligned exactly when
 * h*i is a multiple of `need`.
 */
static enum mp_err choose_dimensions(struct mp_demo_opts *o, struct mp_error *err)
{
	uint64_t need = units_needed(o->alignment);
	uint64_t h = o->hidden / MP_QK_K, i = o->inter / MP_QK_K;

	if (h == 0 && i == 0) {
		i = 1;
		h = need;
	} else if (h == 0) {
		h = need / gcd_u64(need, i);
	} else if (i == 0) {
		i = need / gcd_u64(need, h);
	} else if ((h * i) % need != 0) {
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: --hidden %" PRIu64 " x --inter %" PRIu64
			       " gives role sizes that are not multiples of --alignment %"
			       PRIu64 " (hidden x inter must be a multiple of %" PRIu64 ")",
			       o->hidden, o->inter, o->alignment, need * MP_QK_K * MP_QK_K);
	}
	if (h > MAX_DIM / MP_QK_K || i > MAX_DIM / MP_QK_K)
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: --alignment %" PRIu64
			       " needs an expert larger than %u x %u",
			       o->alignment, MAX_DIM, MAX_DIM);
	o->hidden = h * MP_QK_K;
	o->inter = i * MP_QK_K;
	return MP_OK;
}

enum mp_err mp_demo_resolve(struct mp_demo_opts *o, struct mp_error *err)
{
	struct mp_layout l;
	enum mp_err rc = check_options(o, err);

	if (!rc)
		rc = choose_dimensions(o, err);
	return rc ? rc : demo_layout(o, &l, err);
}

/* ------------------------------------------------------------------ */
/* Output files: temporary siblings renamed into place at the end.     */

/* The target may be replaced: a regular file or nothing, not a directory.
 * Replacing a FIFO, socket or device would surprise whoever made it. */
static enum mp_err check_target(const char *path, const char *option, struct mp_error *err)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	struct stat st;

	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
	    (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
		return mp_fail(err, MP_E_USAGE, "invalid usage: %s %s is a directory", option,
			       path);
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: not a regular file (%s)",
			       path, mp_file_kind(st.st_mode));
	return MP_OK;
}

/* A private temporary for path, a replaceable target checked first. */
static enum mp_err outfile_create(struct mp_output_tmp *f, const char *path,
				  const char *option, struct mp_error *err)
{
	enum mp_err rc = check_target(path, option, err);

	return rc ? rc : mp_output_tmp_open(f, path, MP_TMP_PRIVATE, MP_E_PACK_IO, err);
}

/* ------------------------------------------------------------------ */
/* The pack writer: a big buffer flushed with pwrite.                  */

struct writer {
	struct mp_output_tmp *file;
	unsigned char *buf;
	size_t len;
	uint64_t pos;             /* file offset of buf[0] */
	struct mp_sha256 *full;   /* whole-file digest, or NULL */
	uint64_t total;
	uint64_t last_report;
	mp_progress_fn progress;
	void *progress_arg;
};

static void writer_report(struct writer *w, int force)
{
	uint64_t done = w->pos + w->len;

	if (w->progress && (force || done - w->last_report >= PROGRESS_STEP)) {
		w->progress(done, w->total, w->progress_arg);
		w->last_report = done;
	}
}

static enum mp_err writer_flush(struct writer *w, struct mp_error *err)
{
	enum mp_err rc;

	if (w->len == 0)
		return MP_OK;
	rc = mp_pwrite_full(w->file->fd, w->buf, w->len, w->pos, w->file->path, err);
	if (rc)
		return rc;
	if (w->full)
		mp_sha256_update(w->full, w->buf, w->len);
	w->pos += w->len;
	w->len = 0;
	writer_report(w, 0);
	return MP_OK;
}

/* Room for at least `need` bytes at buf + len. */
static enum mp_err writer_reserve(struct writer *w, size_t need, struct mp_error *err)
{
	if (WRITE_BUF - w->len >= need)
		return MP_OK;
	return writer_flush(w, err);
}

/* Leave n bytes as a hole; they read as zeros, so that is what the full
 * digest sees. */
static enum mp_err writer_skip(struct writer *w, uint64_t n, struct mp_error *err)
{
	enum mp_err rc = writer_flush(w, err);

	if (rc)
		return rc;
	if (!w->full) {
		w->pos += n;
		writer_report(w, 0);
		return MP_OK;
	}
	while (n > 0) {
		size_t chunk = n < sizeof zeros ? (size_t)n : sizeof zeros;

		mp_sha256_update(w->full, zeros, chunk);
		w->pos += chunk;
		n -= chunk;
		writer_report(w, 0);
	}
	return MP_OK;
}

/* Header and index; the index digest covers exactly these bytes. */
static enum mp_err write_index(struct writer *w,
			       const struct mp_layout *l, struct mp_sha256 *index_hash,
			       struct mp_error *err)
{
	unsigned char *h, *e;
	enum mp_err rc;

	h = w->buf + w->len;
	mp_header_encode(h, l->index_count, l->data_start);
	mp_sha256_update(index_hash, h, MP_HEADER_SIZE);
	w->len += MP_HEADER_SIZE;

	for (uint64_t i = 0; i < l->index_count; i++) {
		rc = writer_reserve(w, MP_ENTRY_SIZE, err);
		if (rc)
			return rc;
		e = w->buf + w->len;
		mp_layout_entry(l, i, e);
		mp_sha256_update(index_hash, e, MP_ENTRY_SIZE);
		w->len += MP_ENTRY_SIZE;
	}
	return MP_OK;
}

static enum mp_err write_payload(struct writer *w, const struct mp_demo_opts *o,
				 const struct mp_layout *l, struct mp_error *err)
{
	enum mp_err rc = writer_skip(w, l->data_start - l->index_end, err);

	for (uint64_t object = 0; !rc && object < l->objects; object++) {
		for (int r = 0; !rc && r < MP_ROLE_COUNT; r++) {
			const struct mp_quant_type *t = mp_quant_by_id(mp_role_dtype[r]);
			/* One stream per role payload, so any payload can be
			 * regenerated on its own from (seed, entry number). */
			uint64_t seed = mp_splitmix64(o->seed ^ mp_splitmix64(object * 3 + (uint64_t)r));
			uint64_t done = 0;

			while (!rc && done < l->role_bytes[r]) {
				size_t room = (WRITE_BUF - w->len) / t->block_bytes *
					      t->block_bytes;
				uint64_t left = l->role_bytes[r] - done;
				size_t chunk = left < room ? (size_t)left : room;

				if (chunk == 0) {
					rc = writer_flush(w, err);
					continue;
				}
				mp_quant_fill_demo(t, seed, done, w->buf + w->len, chunk);
				w->len += chunk;
				done += chunk;
			}
		}
		if (!rc && object + 1 < l->objects && l->gap)
			rc = writer_skip(w, l->gap, err);
	}
	return rc ? rc : writer_flush(w, err);
}

static enum mp_err set_size(struct mp_output_tmp *f, uint64_t size, struct mp_error *err)
{
	if (ftruncate(f->fd, (off_t)size) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s (%" PRIu64 " bytes): %s",
			       f->path, size, strerror(errno));
	return MP_OK;
}

/*
 * Header, index and payload, the index digest into index_hex.  A sparse
 * pack gets its size up front; a dense one grows as it is written (filling
 * a pre-truncated hole costs ext4 twice the time) and gets its size at the
 * end, which only matters if it ends in a skipped region.
 */
static enum mp_err write_contents(struct writer *w, const struct mp_demo_opts *o,
				  const struct mp_layout *l, struct mp_sha256 *index_hash,
				  char index_hex[MP_SHA256_HEX], struct mp_error *err)
{
	unsigned char digest[MP_SHA256_LEN];
	enum mp_err rc = o->sparse ? set_size(w->file, l->size, err) : MP_OK;

	if (!rc)
		rc = write_index(w, l, index_hash, err);
	if (rc)
		return rc;
	mp_sha256_final(index_hash, digest);
	mp_sha256_hex(digest, index_hex);
	if (o->sparse)
		rc = writer_skip(w, l->size - l->index_end, err);
	else
		rc = write_payload(w, o, l, err);
	if (!rc)
		rc = writer_flush(w, err);
	if (!rc && !o->sparse)
		rc = set_size(w->file, l->size, err);
	return rc;
}

static enum mp_err write_pack(struct mp_output_tmp *f, const struct mp_demo_opts *o,
			      const struct mp_layout *l, char index_hex[MP_SHA256_HEX],
			      char full_hex[MP_SHA256_HEX], struct mp_error *err)
{
	struct writer w = {
		.file = f,
		.total = l->size,
		.progress = o->progress,
		.progress_arg = o->progress_arg,
	};
	struct mp_sha256 *index_hash = mp_sha256_new();
	unsigned char digest[MP_SHA256_LEN];
	enum mp_err rc;

	w.buf = malloc(WRITE_BUF);
	if (o->full_sha256)
		w.full = mp_sha256_new();
	if (!index_hash || !w.buf || (o->full_sha256 && !w.full))
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
	else
		rc = write_contents(&w, o, l, index_hash, index_hex, err);
	if (!rc) {
		writer_report(&w, 1);
		full_hex[0] = '\0';
		if (w.full) {
			mp_sha256_final(w.full, digest);
			mp_sha256_hex(digest, full_hex);
		}
		rc = mp_output_tmp_close(f, err);
	}
	mp_sha256_free(index_hash);
	if (w.full)
		mp_sha256_free(w.full);
	free(w.buf);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Config and manifest.                                                */

static char *config_text(const struct mp_demo_opts *o)
{
	json_t *root = json_object();
	int bad = !root;
	char *text;

	mp_mw_put(root, "model_type", json_string("kimi_k3"), &bad);
	mp_mw_put(root, "hidden_size", mp_mw_u64(o->hidden), &bad);
	mp_mw_put(root, "moe_intermediate_size", mp_mw_u64(o->inter), &bad);
	mp_mw_put(root, "n_routed_experts", mp_mw_u64(o->experts), &bad);
	mp_mw_put(root, "num_experts_per_tok", json_integer(MP_TOP_K), &bad);
	mp_mw_put(root, "num_hidden_layers", json_integer(MP_K3_HIDDEN_LAYERS), &bad);
	text = bad ? NULL : mp_json_dump_line(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return text;
}

struct digests {
	char config[MP_SHA256_HEX];
	char index[MP_SHA256_HEX];
	char full[MP_SHA256_HEX];
	char inventory[MP_SHA256_HEX];
};

/*
 * The checkpoint inventory that source.inventory_sha256 covers.  A demo has
 * no checkpoint: no shards and no tensors, and a summary that says so.
 */
static json_t *inventory_json(int *bad)
{
	static const struct mp_mw_summary none = {.architecture = "moepack-demo"};

	return mp_mw_inventory(&none, json_array(), json_array(), bad);
}

/* SHA-256 of the inventory's canonical JSON, as the reference hashes it. */
static int inventory_digest(char hex[MP_SHA256_HEX])
{
	int bad = 0;
	json_t *inv = inventory_json(&bad);
	int rc = bad ? -1 : mp_mw_canonical_sha256(inv, hex);

	json_decref(inv);
	return rc;
}

static char *manifest_text(const struct mp_demo_opts *o, const struct mp_layout *l,
			   const char *abs_path, const struct digests *d)
{
	int bad = 0;
	json_t *inventory = inventory_json(&bad);
	json_t *model = mp_mw_model(MP_K3_HIDDEN_LAYERS, o->experts, MP_TOP_K, d->config, &bad);
	json_t *pack = mp_mw_expert_pack(l, d->index, &bad);
	json_t *root;
	char *text;

	if (o->full_sha256)
		mp_mw_put(pack, "sha256", json_string(d->full), &bad);
	root = mp_mw_root(model, pack, inventory, d->inventory, &bad);
	text = bad ? NULL : mp_mw_text(root, abs_path, false);
	json_decref(root);
	json_decref(inventory);
	return text;
}

static void text_digest(const char *text, char hex[MP_SHA256_HEX])
{
	unsigned char digest[MP_SHA256_LEN];

	mp_sha256_buf(text, strlen(text), digest);
	mp_sha256_hex(digest, hex);
}

/* mkdemo reads nothing, but its three outputs must be three files. */
static enum mp_err check_outputs(const char *pack, const char *config, const char *manifest,
				 struct mp_error *err)
{
	struct mp_path_set ps;
	enum mp_err rc;

	mp_path_set_init(&ps);
	rc = mp_path_set_output(&ps, pack, "--out", err);
	if (!rc)
		rc = mp_path_set_output(&ps, manifest, "--manifest", err);
	if (!rc)
		rc = mp_path_set_output(&ps, config, "the config", err);
	if (!rc)
		rc = mp_path_set_check(&ps, err);
	mp_path_set_free(&ps);
	return rc;
}

/* One mkdemo run: its options, layout, outputs and what goes into them. */
struct demo_run {
	struct mp_demo_opts o;
	struct mp_layout l;
	struct mp_output_tmp pack, config, manifest;
	char *manifest_path, *config_path, *abs_path;
	char *config_json, *manifest_json;
	struct digests d;
};

/* The output names, checked, and the pack's absolute name. */
static enum mp_err name_outputs(struct demo_run *run, struct mp_error *err)
{
	const struct mp_demo_opts *o = &run->o;
	enum mp_err rc;

	run->manifest_path = o->manifest ? strdup(o->manifest)
					 : mp_pack_default_manifest_path(o->out);
	run->config_path = mp_path_with_suffix(o->out, ".config.json");
	if (!run->manifest_path || !run->config_path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	rc = check_outputs(o->out, run->config_path, run->manifest_path, err);
	return rc ? rc : mp_output_resolve(o->out, NULL, &run->abs_path, err);
}

/* All temporaries exist before the long write: a missing directory for
 * the manifest fails now, not after an hour. */
static enum mp_err create_outputs(struct demo_run *run, struct mp_error *err)
{
	enum mp_err rc = outfile_create(&run->pack, run->o.out, "--out", err);

	if (!rc)
		rc = outfile_create(&run->config, run->config_path, "--out", err);
	if (!rc)
		rc = outfile_create(&run->manifest, run->manifest_path, "--manifest", err);
	return rc;
}

/* Everything written, then renamed into place, the manifest last. */
static enum mp_err write_outputs(struct demo_run *run, struct mp_error *err)
{
	enum mp_err rc;

	run->config_json = config_text(&run->o);
	if (!run->config_json)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	text_digest(run->config_json, run->d.config);
	if (inventory_digest(run->d.inventory) != 0)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	rc = write_pack(&run->pack, &run->o, &run->l, run->d.index, run->d.full, err);
	if (!rc)
		rc = mp_output_tmp_write(&run->config, run->config_json,
					 strlen(run->config_json), err);
	if (rc)
		return rc;
	run->manifest_json = manifest_text(&run->o, &run->l, run->abs_path, &run->d);
	if (!run->manifest_json)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	rc = mp_output_tmp_write(&run->manifest, run->manifest_json,
				 strlen(run->manifest_json), err);
	if (!rc)
		rc = mp_output_tmp_rename(&run->pack, err);
	if (!rc)
		rc = mp_output_tmp_rename(&run->config, err);
	if (!rc)
		rc = mp_output_tmp_rename(&run->manifest, err);
	return rc;
}

enum mp_err mp_demo_write(const struct mp_demo_opts *opts, struct mp_error *err)
{
	struct demo_run run = {
		.o = *opts,
		.pack = {.fd = -1, .slot = -1},
		.config = {.fd = -1, .slot = -1},
		.manifest = {.fd = -1, .slot = -1},
	};
	enum mp_err rc = mp_demo_resolve(&run.o, err);

	if (!rc)
		rc = demo_layout(&run.o, &run.l, err);
	if (rc)
		return rc;
	rc = name_outputs(&run, err);
	if (!rc)
		rc = create_outputs(&run, err);
	if (!rc)
		rc = write_outputs(&run, err);
	mp_output_tmp_abandon(&run.pack);
	mp_output_tmp_abandon(&run.config);
	mp_output_tmp_abandon(&run.manifest);
	free(run.manifest_json);
	free(run.config_json);
	free(run.abs_path);
	free(run.config_path);
	free(run.manifest_path);
	return rc;
}
