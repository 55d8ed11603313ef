/* epwrite.c - `moepack build` of an SGLANG-EXPERTPACK-v1 pack: its outputs,
 * its index, the check of what was written, and its rename into place. */
#include "config.h"

#include "writer/expertpack/write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/file.h"
#include "base/outfile.h"
#include "base/quant.h"
#include "base/text.h"
#include "pack/expertpack/ident.h"
#include "pack/expertpack/expertpack.h"
#include "writer/builder.h"
#include "writer/expertpack/job.h"
#include "writer/outputs.h"

/* Test hook, as the Kimi build's: skip the free-space check. */

/* ---- outputs ------------------------------------------------------------------ */

static enum mp_err name_outputs(struct mp_epw_job *j, struct mp_error *err)
{
	struct mp_epw_result *r = j->res;
	const char *base;

	mp_path_split(j->o->gguf_path, &j->dir, &base);
	r->pack_path = j->o->out ? strdup(j->o->out)
				 : j->dir ? mp_path_join(j->dir, MP_EPW_DEFAULT_NAME) : NULL;
	free(j->dir);
	j->dir = NULL;
	if (r->pack_path) {
		r->manifest_path = j->o->manifest ? strdup(j->o->manifest)
						  : mp_path_with_suffix(r->pack_path, ".manifest.json");
		j->partial = mp_path_with_suffix(r->pack_path, ".partial");
		j->lock_path = mp_path_with_suffix(r->pack_path, ".lock");
		mp_path_split(r->pack_path, &j->dir, &base);
	}
	if (!r->pack_path || !r->manifest_path || !j->partial || !j->lock_path || !j->dir)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	return MP_OK;
}

/* A final name must be free (or, with force, a regular file to replace). */
static enum mp_err check_final(const char *path, const char *what, bool force,
			       struct mp_error *err)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return MP_OK;
	if (S_ISLNK(st.st_mode))
		return mp_fail(err, MP_E_USAGE, "%s: %s %s is a symbolic link: moepack never "
			       "writes through one", mp_err_summary(MP_E_USAGE), what, path);
	if (!force)
		return mp_fail(err, MP_E_USAGE, "%s: %s %s exists (--force replaces it)",
			       mp_err_summary(MP_E_USAGE), what, path);
	if (!S_ISREG(st.st_mode))
		return mp_fail(err, MP_E_USAGE, "%s: %s %s is %s, not a file to replace",
			       mp_err_summary(MP_E_USAGE), what, path, mp_file_kind(st.st_mode));
	return MP_OK;
}

static enum mp_err check_outputs(struct mp_epw_job *j, struct mp_error *err)
{
	struct mp_path_set s;
	enum mp_err rc = MP_OK;

	mp_path_set_init(&s);
	if (!j->sparse)
		rc = mp_path_set_input(&s, j->o->gguf_path, "GGUF", err);
	if (!rc && j->o->config_path)
		rc = mp_path_set_input(&s, j->o->config_path, "config", err);
	if (!rc &&
	    !(rc = mp_path_set_output(&s, j->res->pack_path, "--out", err)) &&
	    !(rc = mp_path_set_output(&s, j->res->manifest_path, "--manifest", err)) &&
	    !(rc = mp_path_set_output(&s, j->partial, "PACK.partial", err)) &&
	    !(rc = mp_path_set_output(&s, j->lock_path, "PACK.lock", err)))
		rc = mp_path_set_check(&s, err);
	mp_path_set_free(&s);
	if (!rc)
		rc = check_final(j->res->pack_path, "--out", j->o->force, err);
	if (!rc)
		rc = check_final(j->res->manifest_path, "--manifest", j->o->force, err);
	return rc;
}

/* PACK.lock, as the Kimi build takes it: two builds of one pack never
 * share PACK.partial or race to rename it. */
static enum mp_err take_lock(struct mp_epw_job *j, struct mp_error *err)
{
	struct stat st;
	enum mp_err rc = mp_open_output(j->lock_path, O_RDWR | O_CREAT, NULL, "lock", MP_E_PACK_IO,
					&j->lock_fd, &st, err);

	if (rc)
		return rc;
	if (flock(j->lock_fd, LOCK_EX | LOCK_NB) != 0)
		return mp_fail(err, errno == EWOULDBLOCK ? MP_E_BUILD_LOCKED : MP_E_PACK_IO,
			       "%s: %s", mp_err_summary(MP_E_BUILD_LOCKED), j->lock_path);
	return MP_OK;
}

/* ---- header and index --------------------------------------------------------- */

static void fill_entry(const struct mp_epw_job *j, uint64_t l, uint64_t e, unsigned r,
		       uint64_t gen, struct mp_ep_entry *en)
{
	const struct mp_epw_plan *p = j->p;
	const struct mp_epw_tensor *t = mp_epw_routed(p, l, r);
	const struct mp_quant_type *q = mp_ggml_type(t->type);
	const unsigned char *slice =
		j->d.slice + ((l * p->experts + e) * MP_EP_ROLES + r) * MP_SHA256_LEN;

	memset(en, 0, sizeof *en);
	en->layer = (uint16_t)l;
	en->expert = (uint16_t)e;
	en->role_id = (uint8_t)r;
	en->rank = 2; /* the tensor's ne without the expert dimension */
	en->dtype_id = (uint16_t)t->type;
	mp_ep_text_put(en->dtype, MP_EP_DTYPE_LEN, q->name);
	mp_ep_text_put(en->tensor_name, MP_EP_NAME_LEN, t->name);
	en->source_tensor_offset = t->offset;
	en->source_tensor_nbytes = t->nbytes;
	en->source_slice_offset = t->offset + e * p->role_bytes;
	en->source_slice_nbytes = en->pack_nbytes = p->role_bytes;
	en->pack_offset = p->data_start + (l * p->experts + e) * p->object_stride + r * p->role_bytes;
	memcpy(en->source_tensor_sha256, t->sha256, MP_SHA256_LEN);
	memcpy(en->source_slice_sha256, slice, MP_SHA256_LEN);
	memcpy(en->checksum, slice, MP_SHA256_LEN);
	en->shape[0] = t->ne[0];
	en->shape[1] = t->ne[1];
	mp_ep_text_put(en->quant_scheme, MP_EP_DTYPE_LEN, q->name);
	mp_ep_text_put(en->transform_id, MP_EP_DTYPE_LEN, MP_EP_TRANSFORM);
	en->block_size = q->block_weights;
	en->generation = gen;
}

static void fill_header(const struct mp_epw_job *j, struct mp_ep_header *h)
{
	const struct mp_epw_plan *p = j->p;

	memset(h, 0, sizeof *h);
	memcpy(h->magic, MP_EP_MAGIC, sizeof MP_EP_MAGIC - 1);
	h->version = MP_EP_VERSION;
	h->header_bytes = MP_EP_HEADER_SIZE;
	h->entry_bytes = MP_EP_ENTRY_SIZE;
	h->flags = MP_EP_FLAGS_REQUIRED;
	h->index_count = p->index_count;
	h->data_start = p->data_start;
	h->alignment = MP_EPW_ALIGNMENT;
	h->num_layers = (uint32_t)p->layers;
	h->num_experts = (uint32_t)p->experts;
	h->top_k = (uint32_t)p->top_k;
	h->role_count = MP_EP_ROLES;
	memcpy(h->model_identity_sha256, j->d.model, MP_SHA256_LEN);
	memcpy(h->source_blob_sha256, j->d.source, MP_SHA256_LEN);
	memcpy(h->config_sha256, j->p->config_sha256, MP_SHA256_LEN);
}

/* The first data_start bytes of the pack, and the index digest. */
static enum mp_err make_head(struct mp_epw_job *j, struct mp_error *err)
{
	const struct mp_epw_plan *p = j->p;
	char model_hex[MP_SHA256_HEX], source_hex[MP_SHA256_HEX];
	unsigned char d[MP_SHA256_LEN], *at;
	struct mp_ep_header h;
	struct mp_ep_entry en;

	if (!(j->head = calloc(1, (size_t)p->data_start)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	fill_header(j, &h);
	mp_ep_header_encode(&h, j->head);
	mp_sha256_hex(j->d.model, model_hex);
	mp_sha256_hex(j->d.source, source_hex);
	at = j->head + MP_EP_HEADER_SIZE;
	for (uint64_t l = 0; l < p->layers; l++)
		for (uint64_t e = 0; e < p->experts; e++) {
			uint64_t gen = mp_ep_generation(model_hex, source_hex, l, e);

			for (unsigned r = 0; r < MP_EP_ROLES; r++, at += MP_EP_ENTRY_SIZE) {
				fill_entry(j, l, e, r, gen, &en);
				mp_ep_entry_encode(&en, at);
			}
		}
	mp_sha256_buf(j->head + MP_EP_HEADER_SIZE, (size_t)(MP_EP_ENTRY_SIZE * p->index_count), d);
	mp_sha256_hex(d, j->res->index_sha256);
	return MP_OK;
}

/* ---- PACK.partial ------------------------------------------------------------- */

static enum mp_err check_space(const struct mp_epw_job *j, uint64_t have, struct mp_error *err)
{
	return mp_build_check_space(j->dir, j->p->size > have ? j->p->size - have : 0,
				    j->o->margin, err);
}

static enum mp_err open_partial(struct mp_epw_job *j, struct mp_error *err)
{
	struct stat st;
	bool exists = lstat(j->partial, &st) == 0;
	enum mp_err rc;

	if (exists && !j->o->resume)
		return mp_fail(err, MP_E_USAGE, "%s: %s is left from an interrupted build: give "
			       "--resume to continue it, or remove it", mp_err_summary(MP_E_USAGE),
			       j->partial);
	rc = mp_open_output(j->partial, O_RDWR | (exists ? 0 : O_CREAT | O_EXCL), NULL,
			    "PACK.partial", MP_E_PACK_IO, &j->out_fd, &j->out_st, err);
	j->resumed = exists;
	if (!rc && !j->sparse) /* a hole takes no space */
		rc = check_space(j, exists ? (uint64_t)j->out_st.st_blocks * 512 : 0, err);
	if (!rc && ftruncate(j->out_fd, (off_t)j->p->size) != 0)
		rc = mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", j->partial, strerror(errno));
	if (!rc && !(j->partial_real = realpath(j->partial, NULL)))
		rc = mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", j->partial, strerror(errno));
	return rc;
}

/* ---- the manifest, the check, the rename ------------------------------------------ */

static char *manifest_for(struct mp_epw_job *j, const char *pack_path, size_t *len)
{
	struct mp_epw_manifest_in in = {
		.plan = j->p, .d = &j->d, .pack_path = pack_path, .source_path = j->source_real,
		.model_ref = j->o->model_ref ? j->o->model_ref : MP_EPW_DEFAULT_REF,
		.command = j->o->command ? j->o->command : "moepack build",
	};
	struct timespec now;

	memcpy(in.index_sha256, j->res->index_sha256, MP_SHA256_HEX);
	if (!j->sparse)
		mp_sha256_hex(j->pack_sha256, in.pack_sha256);
	memcpy(in.inventory_sha256, j->res->inventory_sha256, MP_SHA256_HEX);
	mp_epw_tool_sha256(in.tool_sha256);
	memcpy(in.started_at, j->started_at, MP_EPW_TIME_LEN);
	mp_epw_now(in.created_at);
	clock_gettime(CLOCK_MONOTONIC, &now);
	in.elapsed_s = (double)((now.tv_sec - j->t0.tv_sec) * 1000 +
				(now.tv_nsec - j->t0.tv_nsec) / 1000000) / 1000.0;
	return mp_epw_manifest_text(&in, len);
}

/* PACK.partial through every check of mp_ep_open(): the whole-file digest,
 * every checksum, every slice against the GGUF and the GGUF's digests. */
static enum mp_err check_written(struct mp_epw_job *j, struct mp_error *err)
{
	char model_hex[MP_SHA256_HEX], source_hex[MP_SHA256_HEX], config_hex[MP_SHA256_HEX];
	size_t len = 0;
	char *text = manifest_for(j, j->partial_real, &len);
	struct mp_ep *ep = NULL;
	struct mp_ep_opts eo = {
		.manifest_text = text, .manifest_text_len = len, .expect_layers = j->p->layers,
		.expect_experts = j->p->experts, .expect_top_k = j->p->top_k,
		.expect_source_sha256 = source_hex, .expect_model_identity_sha256 = model_hex,
		.expect_config_sha256 = config_hex, .full = !j->sparse,
		.source_path = j->sparse ? NULL : j->o->gguf_path, .samples = j->p->index_count,
		.cancel = j->o->cancel,
	};
	enum mp_err rc;

	if (!text)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	mp_sha256_hex(j->d.model, model_hex);
	mp_sha256_hex(j->d.source, source_hex);
	mp_sha256_hex(j->p->config_sha256, config_hex);
	mp_build_test_pause(j->o->cancel, "final-check");
	rc = mp_ep_open(&ep, j->partial, &eo, err);
	mp_ep_close(ep);
	free(text);
	return rc;
}

/*
 * A stop asked during the final check (rc MP_E_INTERRUPTED, the check's
 * message in *err) or after it: PACK.partial is whole and stays for
 * --resume, which compares every object and checks it again.
 */
static enum mp_err stop_checked(const struct mp_epw_job *j, enum mp_err rc,
				struct mp_error *err)
{
	char why[MP_MSG_MAX], part[MP_MSG_MAX];

	if (rc == MP_OK && !mp_cancel_sig(j->o->cancel))
		return MP_OK;
	if (rc == MP_OK)
		mp_fail(err, MP_E_INTERRUPTED, "%s by signal %d after the final check",
			mp_err_summary(MP_E_INTERRUPTED), mp_cancel_sig(j->o->cancel));
	else if (rc != MP_E_INTERRUPTED)
		return rc;
	/* the check's message is escaped already; the path is escaped here */
	snprintf(why, sizeof why, "%s", err->msg);
	mp_text_escape(part, sizeof part, j->partial, strlen(j->partial), 0);
	return mp_fail_escaped(err, MP_E_INTERRUPTED, "%s: %s is kept, run again with --resume "
			       "to continue it", why, part);
}

static enum mp_err finish(struct mp_epw_job *j, struct mp_error *err)
{
	size_t len = 0;
	char *text;
	enum mp_err rc;

	if (rename(j->partial, j->res->pack_path) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot rename %s to %s: %s", j->partial,
			       j->res->pack_path, strerror(errno));
	if ((rc = mp_output_sync_dir(j->dir, err)))
		return rc;
	if (!(text = manifest_for(j, j->pack_real, &len)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	rc = mp_output_write_atomic(j->res->manifest_path, MP_TMP_PRIVATE, MP_E_PACK_IO, text, len,
				    err);
	free(text);
	return rc;
}

/* The manifest records both paths as JSON text, which holds only UTF-8. */
static enum mp_err paths_are_text(const struct mp_epw_job *j, struct mp_error *err)
{
	const char *path[2] = {j->pack_real, j->source_real};
	const char *what[2] = {"pack", "GGUF"};

	for (int i = 0; i < 2; i++)
		if (!mp_text_is_utf8(path[i], strlen(path[i])))
			return mp_fail(err, MP_E_USAGE, "%s: the %s path %s is not UTF-8, and "
				       "the manifest records it as JSON text: rename it",
				       mp_err_summary(MP_E_USAGE), what[i], path[i]);
	return MP_OK;
}

static enum mp_err resolve_inputs(struct mp_epw_job *j, struct mp_error *err)
{
	struct stat st;
	enum mp_err rc = mp_output_resolve(j->res->pack_path, "--out", &j->pack_real, err);

	if (rc)
		return rc;
	if (!(j->source_real = realpath(j->o->gguf_path, NULL)))
		return mp_fail(err, MP_E_GGUF_IO, "%s %s: %s", mp_err_summary(MP_E_GGUF_IO),
			       j->o->gguf_path, strerror(errno));
	if ((rc = paths_are_text(j, err)))
		return rc;
	return mp_open_regular(j->o->gguf_path, "GGUF file", MP_E_GGUF_IO, &j->src_fd, &st, err);
}

static enum mp_err run(struct mp_epw_job *j, struct mp_error *err)
{
	enum mp_err rc;

	if ((rc = name_outputs(j, err)) || (rc = check_outputs(j, err)) ||
	    (rc = resolve_inputs(j, err)) || (rc = take_lock(j, err)) ||
	    (rc = open_partial(j, err)))
		return rc;
	if ((rc = mp_epw_hash_source(j->p, &j->d, j->o->cancel, err)) ||
	    (rc = mp_epw_inventory_sha256(j->p, j->res->inventory_sha256, err)) ||
	    (rc = make_head(j, err)) || (rc = mp_epw_copy(j, err)))
		return rc;
	close(j->out_fd);
	j->out_fd = -1;
	if ((rc = stop_checked(j, check_written(j, err), err)))
		return rc;
	mp_sha256_hex(j->pack_sha256, j->res->pack_sha256);
	return finish(j, err);
}

static enum mp_err run_sparse(struct mp_epw_job *j, struct mp_error *err)
{
	enum mp_err rc;

	if ((rc = name_outputs(j, err)) || (rc = check_outputs(j, err)) ||
	    (rc = mp_output_resolve(j->res->pack_path, "--out", &j->pack_real, err)) ||
	    (rc = mp_output_resolve(j->o->gguf_path, NULL, &j->source_real, err)) ||
	    (rc = paths_are_text(j, err)) || (rc = take_lock(j, err)) ||
	    (rc = open_partial(j, err)) ||
	    (rc = mp_epw_inventory_sha256(j->p, j->res->inventory_sha256, err)) ||
	    (rc = make_head(j, err)) ||
	    (rc = mp_pwrite_full(j->out_fd, j->head, (size_t)j->p->data_start, 0, j->partial,
				 err)))
		return rc;
	if (fsync(j->out_fd) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", j->partial, strerror(errno));
	close(j->out_fd);
	j->out_fd = -1;
	if ((rc = check_written(j, err)))
		return rc;
	return finish(j, err);
}

static bool is_file(const char *path, const struct stat *want)
{
	struct stat st;

	return lstat(path, &st) == 0 && st.st_ino == want->st_ino && st.st_dev == want->st_dev;
}

/*
 * After a failure: PACK.partial is kept for --resume when a signal stopped
 * the build, and always when this run resumed it (a full disk, a GGUF that
 * changed: a resume compares every object it holds, so nothing it may hold
 * makes it unusable, and a 147 GB copy is not thrown away for a failure of
 * something else); one this run created goes.  A pack renamed into place
 * without its manifest goes, back to PACK.partial when it was resumed.
 */
static void clean_up(struct mp_epw_job *j, enum mp_err rc)
{
	if (!rc || j->out_st.st_ino == 0 || rc == MP_E_INTERRUPTED)
		return;
	if (is_file(j->partial, &j->out_st)) {
		if (!j->resumed)
			unlink(j->partial);
	} else if (is_file(j->res->pack_path, &j->out_st)) {
		if (!j->resumed || rename(j->res->pack_path, j->partial) != 0)
			unlink(j->res->pack_path);
	}
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static enum mp_err run_job(struct mp_epw_job *j, struct mp_error *err)
{
	enum mp_err rc;

	memset(j->res, 0, sizeof *j->res);
	mp_epw_now(j->started_at);
	clock_gettime(CLOCK_MONOTONIC, &j->t0);
	rc = j->sparse ? run_sparse(j, err) : run(j, err);
	clean_up(j, rc);
	if (j->out_fd >= 0)
		close(j->out_fd);
	if (j->src_fd >= 0)
		close(j->src_fd);
	if (j->lock_fd >= 0)
		close(j->lock_fd);
	j->res->size = j->p->size;
	j->res->entries = j->p->index_count;
	j->res->objects = j->p->layers * j->p->experts;
	j->res->seconds = seconds_since(&j->t0);
	free(j->d.slice);
	free(j->partial);
	free(j->lock_path);
	free(j->pack_real);
	free(j->partial_real);
	free(j->source_real);
	free(j->dir);
	free(j->head);
	return rc;
}

enum mp_err mp_epw_build(struct mp_epw_plan *plan, const struct mp_epw_opts *opts,
			 struct mp_epw_result *res, struct mp_error *err)
{
	struct mp_epw_job j = {.p = plan, .o = opts, .res = res, .src_fd = -1, .out_fd = -1,
			       .lock_fd = -1};

	return run_job(&j, err);
}

enum mp_err mp_epw_write_sparse(struct mp_epw_plan *p, struct mp_epw_digests *d,
				const struct mp_epw_opts *o, struct mp_epw_result *res,
				struct mp_error *err)
{
	struct mp_epw_job j = {.p = p, .o = o, .res = res, .src_fd = -1, .out_fd = -1,
			       .lock_fd = -1, .d = *d, .sparse = true};

	d->slice = NULL;
	return run_job(&j, err);
}

void mp_epw_result_free(struct mp_epw_result *res)
{
	free(res->pack_path);
	free(res->manifest_path);
	memset(res, 0, sizeof *res);
}
