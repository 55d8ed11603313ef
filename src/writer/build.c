/*
 * build.c - write a valid demo expert pack, its manifest and a config.
 *
 * Everything is first written to temporary files next to their targets and
 * renamed into place at the end, the manifest last: a failed or interrupted
 * run never leaves a half-written pack behind a manifest that vouches for it.
 * The pack is written front to back in one pass with large positioned
 * writes; the index digest and (on request) the whole-file digest are
 * computed from the same buffers as they go out.
 */
#include "config.h"

#include "writer/build.h"

#include "pack/digest.h"
#include "base/file.h"
#include "pack/index.h"
#include "base/jsonstr.h"
#include "writer/outputs.h"
#include "base/quant.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_EXPERTS 4
#define DEFAULT_ALIGNMENT 4096
#define NUM_HIDDEN_LAYERS 93
#define LAYER_COUNT (MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1)

/* Limits that keep all arithmetic far from overflow and reject nonsense
 * early with a message instead of a failed multi-terabyte write. */
#define MAX_DIM (1u << 24)
#define MAX_ALIGNMENT (1u << 30)
#define MAX_PACK_SIZE (1ULL << 50) /* 1 PiB */

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

/* Round v up to a multiple of the power of two a; -1 on overflow. */
static int round_up(uint64_t v, uint64_t a, uint64_t *out)
{
	uint64_t t;

	if (__builtin_add_overflow(v, a - 1, &t))
		return -1;
	*out = t & ~(a - 1);
	return 0;
}

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

static enum mp_err compute_geometry(const struct mp_build_opts *o, struct mp_layout *g,
				    struct mp_error *err)
{
	uint64_t weights = o->hidden * o->inter; /* both <= 2^24 */

	memset(g, 0, sizeof *g);
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const struct mp_quant_type *qt = mp_quant_by_id(mp_role_dtype[r]);

		g->role_bytes[r] = mp_quant_bytes(qt, weights);
		if (g->role_bytes[r] == 0)
			return mp_fail(err, MP_E_USAGE,
				       "invalid usage: --hidden %" PRIu64 " x --inter %" PRIu64
				       " is not a whole number of %s blocks",
				       o->hidden, o->inter, qt->name);
		/* GGUF ne[] order, the GGML row length first: up and gate
		 * rows read the hidden state, down rows the expert's. */
		if (r == MP_ROLE_DOWN) {
			g->role_shape[r][0] = o->inter;
			g->role_shape[r][1] = o->hidden;
		} else {
			g->role_shape[r][0] = o->hidden;
			g->role_shape[r][1] = o->inter;
		}
	}
	return mp_layout_compute(g, o->experts, o->alignment, o->gap, err);
}

enum mp_err mp_layout_compute(struct mp_layout *g, uint64_t experts, uint64_t alignment,
			      uint64_t gap, struct mp_error *err)
{
	uint64_t payload, gaps, t;

	g->experts = experts;
	g->alignment = alignment;
	g->object_bytes = 0;
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		if (__builtin_add_overflow(g->object_bytes, g->role_bytes[r], &g->object_bytes))
			return mp_fail(err, MP_E_USAGE, "invalid usage: an expert is larger "
				       "than 2^64 bytes");
	if (round_up(gap, alignment, &g->gap))
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: --gap %" PRIu64 " is too large", gap);
	g->objects = (uint64_t)LAYER_COUNT * experts;
	g->index_count = g->objects * 3;
	g->index_end = MP_HEADER_SIZE + (uint64_t)MP_ENTRY_SIZE * g->index_count;
	if (round_up(g->index_end, alignment, &g->data_start))
		return mp_fail(err, MP_E_USAGE, "invalid usage: --alignment %" PRIu64
			       " is too large", alignment);
	if (__builtin_mul_overflow(g->objects, g->object_bytes, &payload) ||
	    __builtin_mul_overflow(g->objects - 1, g->gap, &gaps) ||
	    __builtin_add_overflow(payload, gaps, &t) ||
	    __builtin_add_overflow(t, g->data_start, &g->size) || g->size > MAX_PACK_SIZE)
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: the pack would be larger than %llu bytes "
			       "(check --experts, --hidden, --inter and --gap)",
			       (unsigned long long)MAX_PACK_SIZE);
	return MP_OK;
}

uint64_t mp_layout_object_offset(const struct mp_layout *g, uint64_t object)
{
	return g->data_start + object * (g->object_bytes + g->gap);
}

void mp_layout_entry(const struct mp_layout *g, uint64_t i, unsigned char raw[MP_ENTRY_SIZE])
{
	uint64_t object = i / 3;
	enum mp_role role = (enum mp_role)(i % 3);
	uint64_t layer = MP_ACTIVE_FIRST + object / g->experts;
	uint64_t offset = mp_layout_object_offset(g, object);
	char name[MP_ENTRY_NAME_LEN];

	for (int r = 0; r < (int)role; r++)
		offset += g->role_bytes[r];
	mp_tensor_name(name, sizeof name, layer, role);
	mp_entry_encode(raw, name, (int32_t)(object % g->experts), offset, g->role_bytes[role]);
}

enum mp_err mp_build_resolve(struct mp_build_opts *o, struct mp_error *err)
{
	uint64_t need, h, i;
	struct mp_layout g;

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

	/*
	 * A role holds h*i*256 blocks (h = hidden/256, i = inter/256), so its
	 * size is aligned exactly when h*i is a multiple of `need`.
	 */
	need = units_needed(o->alignment);
	h = o->hidden / MP_QK_K;
	i = o->inter / MP_QK_K;
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
	return compute_geometry(o, &g, err);
}

/* ------------------------------------------------------------------ */
/* Output files: temporary siblings renamed into place at the end.     */

struct outfile {
	char *path;   /* the target */
	char *tmp;    /* the sibling being written; NULL once renamed */
	int fd;
	int slot;     /* in the temporaries table, or -1 */
};

/*
 * The temporaries being written, for mp_build_remove_temporaries() in a
 * signal handler: the one piece of global state, because a handler has no
 * other way to find them.  A slot's name is complete before it is marked
 * live, and it is unmarked only once the file is gone or renamed.
 */
#define MAX_TEMPORARIES 3
static char temporary_name[MAX_TEMPORARIES][PATH_MAX];
static volatile sig_atomic_t temporary_live[MAX_TEMPORARIES];

void mp_build_remove_temporaries(void)
{
	for (int i = 0; i < MAX_TEMPORARIES; i++)
		if (temporary_live[i])
			unlink(temporary_name[i]);
}

static void temporary_track(struct outfile *f)
{
	f->slot = -1;
	if (strlen(f->tmp) >= PATH_MAX)
		return; /* cannot happen: open() refused it */
	for (int i = 0; i < MAX_TEMPORARIES; i++) {
		if (!temporary_live[i]) {
			strcpy(temporary_name[i], f->tmp);
			temporary_live[i] = 1;
			f->slot = i;
			return;
		}
	}
}

static void temporary_untrack(struct outfile *f)
{
	if (f->slot >= 0)
		temporary_live[f->slot] = 0;
	f->slot = -1;
}

static void split_path(const char *path, char **dir, const char **base)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		*dir = strdup(".");
		*base = path;
	} else if (slash == path) {
		*dir = strdup("/");
		*base = slash + 1;
	} else {
		*dir = strndup(path, (size_t)(slash - path));
		*base = slash + 1;
	}
}

static enum mp_err outfile_create(struct outfile *f, const char *path, const char *option,
				  struct mp_error *err)
{
	struct stat st;
	const char *base;
	char *dir;
	size_t len;

	f->fd = -1;
	f->tmp = NULL;
	f->slot = -1;
	f->path = strdup(path);
	split_path(path, &dir, &base);
	if (!f->path || !dir) {
		free(dir);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
	    (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
		free(dir);
		return mp_fail(err, MP_E_USAGE, "invalid usage: %s %s is a directory", option,
			       path);
	}
	/* Replacing a FIFO, socket or device would surprise whoever made it. */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		free(dir);
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: not a regular file (%s)",
			       path, mp_file_kind(st.st_mode));
	}
	len = strlen(dir) + strlen(base) + 64;
	f->tmp = malloc(len);
	if (!f->tmp) {
		free(dir);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	for (unsigned attempt = 0; attempt < 1000; attempt++) {
		enum mp_err code;

		snprintf(f->tmp, len, "%s/.%s.tmp-%ld-%u", dir, base, (long)getpid(), attempt);
		code = mp_open_output(f->tmp, O_WRONLY | O_CREAT | O_EXCL, NULL, "file",
				      MP_E_PACK_IO, &f->fd, &st, err);
		if (code == MP_OK)
			break;
		/* only a name taken by another run is worth another attempt */
		if (lstat(f->tmp, &st) != 0 || attempt == 999) {
			free(dir);
			free(f->tmp);
			f->tmp = NULL;
			return code;
		}
	}
	free(dir);
	temporary_track(f);
	return MP_OK;
}

/* Close the file if still open and remove the temporary if not renamed. */
static void outfile_discard(struct outfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (f->tmp)
		unlink(f->tmp);
	temporary_untrack(f);
	free(f->tmp);
	free(f->path);
	f->tmp = NULL;
	f->path = NULL;
}

static enum mp_err outfile_close(struct outfile *f, struct mp_error *err)
{
	int fd = f->fd;
	int failed = fsync(fd) != 0;

	f->fd = -1;
	failed |= close(fd) != 0;
	if (failed)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", f->path,
			       strerror(errno));
	return MP_OK;
}

static enum mp_err outfile_commit(struct outfile *f, struct mp_error *err)
{
	if (rename(f->tmp, f->path) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot rename %s to %s: %s", f->tmp,
			       f->path, strerror(errno));
	temporary_untrack(f);
	free(f->tmp);
	f->tmp = NULL;
	return MP_OK;
}

static enum mp_err write_all(int fd, const void *data, size_t len, uint64_t pos,
			     const char *path, struct mp_error *err)
{
	const unsigned char *p = data;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)pos);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return mp_fail(err, MP_E_PACK_IO,
				       "cannot write %s at offset %" PRIu64 ": %s", path, pos,
				       n < 0 ? strerror(errno) : "no space");
		p += n;
		len -= (size_t)n;
		pos += (uint64_t)n;
	}
	return MP_OK;
}

/* ------------------------------------------------------------------ */
/* The pack writer: a big buffer flushed with pwrite.                  */

struct writer {
	struct outfile *file;
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
	rc = write_all(w->file->fd, w->buf, w->len, w->pos, w->file->path, err);
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
			       const struct mp_layout *g, struct mp_sha256 *index_hash,
			       struct mp_error *err)
{
	unsigned char *h, *e;
	enum mp_err rc;

	h = w->buf + w->len;
	mp_header_encode(h, g->index_count, g->data_start);
	mp_sha256_update(index_hash, h, MP_HEADER_SIZE);
	w->len += MP_HEADER_SIZE;

	for (uint64_t i = 0; i < g->index_count; i++) {
		rc = writer_reserve(w, MP_ENTRY_SIZE, err);
		if (rc)
			return rc;
		e = w->buf + w->len;
		mp_layout_entry(g, i, e);
		mp_sha256_update(index_hash, e, MP_ENTRY_SIZE);
		w->len += MP_ENTRY_SIZE;
	}
	return MP_OK;
}

static enum mp_err write_payload(struct writer *w, const struct mp_build_opts *o,
				 const struct mp_layout *g, struct mp_error *err)
{
	enum mp_err rc = writer_skip(w, g->data_start - g->index_end, err);

	for (uint64_t object = 0; !rc && object < g->objects; object++) {
		for (int r = 0; !rc && r < MP_ROLE_COUNT; r++) {
			const struct mp_quant_type *t = mp_quant_by_id(mp_role_dtype[r]);
			/* One stream per role payload, so any payload can be
			 * regenerated on its own from (seed, entry number). */
			uint64_t seed = mp_splitmix64(o->seed ^ mp_splitmix64(object * 3 + (uint64_t)r));
			uint64_t done = 0;

			while (!rc && done < g->role_bytes[r]) {
				size_t room = (WRITE_BUF - w->len) / t->block_bytes *
					      t->block_bytes;
				uint64_t left = g->role_bytes[r] - done;
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
		if (!rc && object + 1 < g->objects && g->gap)
			rc = writer_skip(w, g->gap, err);
	}
	return rc ? rc : writer_flush(w, err);
}

static enum mp_err set_size(struct outfile *f, uint64_t size, struct mp_error *err)
{
	if (ftruncate(f->fd, (off_t)size) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s (%" PRIu64 " bytes): %s",
			       f->path, size, strerror(errno));
	return MP_OK;
}

static enum mp_err write_pack(struct outfile *f, const struct mp_build_opts *o,
			      const struct mp_layout *g, char index_hex[MP_SHA256_HEX],
			      char full_hex[MP_SHA256_HEX], struct mp_error *err)
{
	struct writer w = {
		.file = f,
		.total = g->size,
		.progress = o->progress,
		.progress_arg = o->progress_arg,
	};
	struct mp_sha256 *index_hash = mp_sha256_new();
	unsigned char digest[MP_SHA256_LEN];
	enum mp_err rc = MP_OK;

	w.buf = malloc(WRITE_BUF);
	if (o->full_sha256)
		w.full = mp_sha256_new();
	if (!index_hash || !w.buf || (o->full_sha256 && !w.full)) {
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
		goto out;
	}
	/*
	 * A sparse pack gets its size up front; a dense one grows as it is
	 * written (filling a pre-truncated hole costs ext4 twice the time)
	 * and gets its size at the end, which only matters if it ends in a
	 * skipped region.
	 */
	if (o->sparse) {
		rc = set_size(f, g->size, err);
		if (rc)
			goto out;
	}
	rc = write_index(&w, g, index_hash, err);
	if (rc)
		goto out;
	mp_sha256_final(index_hash, digest);
	mp_sha256_hex(digest, index_hex);
	if (o->sparse)
		rc = writer_skip(&w, g->size - g->index_end, err);
	else
		rc = write_payload(&w, o, g, err);
	if (!rc)
		rc = writer_flush(&w, err);
	if (!rc && !o->sparse)
		rc = set_size(f, g->size, err);
	if (rc)
		goto out;
	writer_report(&w, 1);
	full_hex[0] = '\0';
	if (w.full) {
		mp_sha256_final(w.full, digest);
		mp_sha256_hex(digest, full_hex);
	}
	rc = outfile_close(f, err);
out:
	mp_sha256_free(index_hash);
	if (w.full)
		mp_sha256_free(w.full);
	free(w.buf);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Config and manifest.                                                */

static enum mp_err write_text(struct outfile *f, const char *text, struct mp_error *err)
{
	enum mp_err rc = write_all(f->fd, text, strlen(text), 0, f->path, err);

	return rc ? rc : outfile_close(f, err);
}

/* jansson's set_new steals val even on failure; collect failures in *bad. */
static void put(json_t *obj, const char *key, json_t *val, int *bad)
{
	if (!obj || !val || json_object_set_new(obj, key, val) != 0)
		*bad = 1;
}

static json_t *uint_json(uint64_t v) { return json_integer((json_int_t)v); }

static char *config_text(const struct mp_build_opts *o)
{
	json_t *root = json_object();
	int bad = !root;
	char *text;

	put(root, "model_type", json_string("kimi_k3"), &bad);
	put(root, "hidden_size", uint_json(o->hidden), &bad);
	put(root, "moe_intermediate_size", uint_json(o->inter), &bad);
	put(root, "n_routed_experts", uint_json(o->experts), &bad);
	put(root, "num_experts_per_tok", json_integer(MP_TOP_K), &bad);
	put(root, "num_hidden_layers", json_integer(NUM_HIDDEN_LAYERS), &bad);
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

static json_t *hard_constraints_json(int *bad)
{
	json_t *hc = json_object();

	put(hc, "all_selected_experts_must_execute", json_true(), bad);
	put(hc, "expert_pruning_allowed", json_false(), bad);
	put(hc, "requantization_allowed", json_false(), bad);
	put(hc, "top_k", json_integer(MP_TOP_K), bad);
	put(hc, "top_k_is_immutable", json_true(), bad);
	return hc;
}

static json_t *model_json(const struct mp_build_opts *o, const struct digests *d, int *bad)
{
	json_t *model = json_object();
	json_t *ids = json_array();

	for (int layer = MP_ACTIVE_FIRST; ids && layer <= MP_ACTIVE_LAST; layer++)
		if (json_array_append_new(ids, json_integer(layer)) != 0)
			*bad = 1;
	put(model, "num_hidden_layers", json_integer(NUM_HIDDEN_LAYERS), bad);
	put(model, "num_experts", uint_json(o->experts), bad);
	put(model, "num_experts_per_token", json_integer(MP_TOP_K), bad);
	put(model, "active_moe_layer_ids", ids, bad);
	put(model, "config_sha256", json_string(d->config), bad);
	return model;
}

static json_t *expert_pack_json(const struct mp_build_opts *o, const struct mp_layout *g,
				const struct digests *d, int *bad)
{
	json_t *pack = json_object();
	json_t *order = json_array();
	json_t *roles = json_object();

	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const struct mp_quant_type *t = mp_quant_by_id(mp_role_dtype[r]);
		json_t *role = json_object();
		json_t *shape = json_array();

		const char *name = mp_role_name((enum mp_role)r);

		if (!order || json_array_append_new(order, json_string(name)))
			*bad = 1;
		if (!shape || json_array_append_new(shape, uint_json(g->role_shape[r][0])) ||
		    json_array_append_new(shape, uint_json(g->role_shape[r][1])))
			*bad = 1;
		put(role, "dtype", json_string(t->name), bad);
		put(role, "dtype_id", json_integer(t->id), bad);
		put(role, "expert_bytes", uint_json(g->role_bytes[r]), bad);
		put(role, "logical_shape", shape, bad);
		put(roles, name, role, bad);
	}
	/* The path itself goes in last, see manifest_text(). */
	put(pack, "path", json_null(), bad);
	put(pack, "size", uint_json(g->size), bad);
	put(pack, "physical_role_order", order, bad);
	put(pack, "roles", roles, bad);
	put(pack, "object_bytes", uint_json(g->object_bytes), bad);
	put(pack, "data_start", uint_json(g->data_start), bad);
	put(pack, "alignment", uint_json(o->alignment), bad);
	put(pack, "index_sha256", json_string(d->index), bad);
	if (o->full_sha256)
		put(pack, "sha256", json_string(d->full), bad);
	return pack;
}

/*
 * The checkpoint inventory that source.inventory_sha256 covers.  A demo has
 * no checkpoint: no shards and no tensors, and a summary that says so.
 */
static json_t *inventory_json(int *bad)
{
	json_t *inv = json_object();
	json_t *summary = json_object();

	put(summary, "architecture", json_string("moepack-demo"), bad);
	put(summary, "full_source_hashes", json_false(), bad);
	put(summary, "shard_count", json_integer(0), bad);
	put(summary, "tensor_count", json_integer(0), bad);
	put(summary, "total_bytes", json_integer(0), bad);
	put(inv, "summary", summary, bad);
	put(inv, "shards", json_array(), bad);
	put(inv, "tensors", json_array(), bad);
	return inv;
}

/*
 * SHA-256 of the inventory's canonical JSON, as the reference builder
 * hashes it: keys sorted, no white space, non-ASCII as it is.
 */
static int inventory_digest(char hex[MP_SHA256_HEX])
{
	unsigned char digest[MP_SHA256_LEN];
	int bad = 0;
	json_t *inv = inventory_json(&bad);
	char *text = bad ? NULL : json_dumps(inv, JSON_COMPACT | JSON_SORT_KEYS);

	json_decref(inv);
	if (!text)
		return -1;
	mp_sha256_buf(text, strlen(text), digest);
	mp_sha256_hex(digest, hex);
	free(text);
	return 0;
}

static char *manifest_text(const struct mp_build_opts *o, const struct mp_layout *g,
			   const char *abs_path, const struct digests *d)
{
	json_t *root = json_object();
	json_t *source;
	int bad = !root;
	char *text;

	put(root, "format", json_string(MP_FORMAT), &bad);
	put(root, "complete", json_true(), &bad);
	put(root, "hard_constraints", hard_constraints_json(&bad), &bad);
	put(root, "model", model_json(o, d, &bad), &bad);
	put(root, "expert_pack", expert_pack_json(o, g, d, &bad), &bad);
	source = inventory_json(&bad);
	put(source, "inventory_sha256", json_string(d->inventory), &bad);
	put(root, "source", source, &bad);
	/* The path may not be UTF-8, which jansson cannot carry. */
	text = bad ? NULL
		   : mp_json_dump_with_path(root, json_object_get(root, "expert_pack"), "path",
					    abs_path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return text;
}

static void text_digest(const char *text, char hex[MP_SHA256_HEX])
{
	unsigned char digest[MP_SHA256_LEN];

	mp_sha256_buf(text, strlen(text), digest);
	mp_sha256_hex(digest, hex);
}

/* realpath() of the directory plus the file name: the pack itself does not
 * exist yet, and a symlink at its name would be replaced, not followed. */
static enum mp_err absolute_path(const char *path, char **out, struct mp_error *err)
{
	const char *base;
	char *dir, *real;
	size_t len;

	split_path(path, &dir, &base);
	if (!dir)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	real = realpath(dir, NULL);
	if (!real) {
		enum mp_err rc = mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s: %s", path,
					 dir, strerror(errno));

		free(dir);
		return rc;
	}
	free(dir);
	len = strlen(real) + strlen(base) + 2;
	*out = malloc(len);
	if (!*out) {
		free(real);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	snprintf(*out, len, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
	free(real);
	return MP_OK;
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

enum mp_err mp_build_demo(const struct mp_build_opts *opts, struct mp_error *err)
{
	struct mp_build_opts o = *opts;
	struct outfile pack = {.fd = -1, .slot = -1}, config = {.fd = -1, .slot = -1},
		       manifest = {.fd = -1, .slot = -1};
	char *manifest_path = NULL, *config_path = NULL, *abs_path = NULL;
	char *config_json = NULL, *manifest_json = NULL;
	struct digests d;
	struct mp_layout g;
	enum mp_err rc;

	memset(&d, 0, sizeof d);
	rc = mp_build_resolve(&o, err);
	if (!rc)
		rc = compute_geometry(&o, &g, err);
	if (rc)
		return rc;
	manifest_path = o.manifest ? strdup(o.manifest) : mp_pack_default_manifest_path(o.out);
	config_path = mp_path_with_suffix(o.out, ".config.json");
	if (!manifest_path || !config_path) {
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
		goto out;
	}
	rc = check_outputs(o.out, config_path, manifest_path, err);
	if (!rc)
		rc = absolute_path(o.out, &abs_path, err);
	if (rc)
		goto out;

	/* All temporaries exist before the long write: a missing directory
	 * for the manifest fails now, not after an hour. */
	rc = outfile_create(&pack, o.out, "--out", err);
	if (!rc)
		rc = outfile_create(&config, config_path, "--out", err);
	if (!rc)
		rc = outfile_create(&manifest, manifest_path, "--manifest", err);
	if (rc)
		goto out;

	config_json = config_text(&o);
	if (!config_json) {
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
		goto out;
	}
	text_digest(config_json, d.config);
	if (inventory_digest(d.inventory) != 0) {
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
		goto out;
	}

	rc = write_pack(&pack, &o, &g, d.index, d.full, err);
	if (rc)
		goto out;
	rc = write_text(&config, config_json, err);
	if (rc)
		goto out;
	manifest_json = manifest_text(&o, &g, abs_path, &d);
	if (!manifest_json) {
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
		goto out;
	}
	rc = write_text(&manifest, manifest_json, err);
	if (!rc)
		rc = outfile_commit(&pack, err);
	if (!rc)
		rc = outfile_commit(&config, err);
	if (!rc)
		rc = outfile_commit(&manifest, err);
out:
	outfile_discard(&pack);
	outfile_discard(&config);
	outfile_discard(&manifest);
	free(manifest_json);
	free(config_json);
	free(abs_path);
	free(config_path);
	free(manifest_path);
	return rc;
}
