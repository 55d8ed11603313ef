/*
 * build.c - `moepack build`: the GGUF-to-pack builder of build.h, its
 * phases in order (plan, prepare, copy or keep, rename, judge, manifest,
 * seal last).  The phases' work is in the files beside it (build_internal.h):
 * the paths, locks and output checks in buildpaths.c, the resume state in
 * buildstate.c, the copy in buildcopy.c, the comparison with the shards in
 * buildcompare.c, the manifest in buildmanifest.c; the bytes they expect
 * (the pack's prefix, each entry's GGUF slice) in buildsource.c.
 *
 * Safety: the pack is written as PACK.partial (O_EXCL) under an exclusive
 * lock on PACK.lock, made durable (fsync), checked for size, renamed into
 * place and the directory fsynced; the manifest the same way afterwards.
 * The copy makes what it wrote durable at checkpoints and records how many
 * objects are done in PACK.partial.state, so that --resume continues from
 * there; the state also names the checkpoint's inventory digest and the
 * layout size, so a state from other shards is never trusted.
 *
 * Trust: every byte goes through user space once, in 16 MiB pread()/
 * pwrite() pieces, and is hashed from the buffer written into the chunk
 * digests of the pack's seal (buildseal.h); they are recorded beside
 * PACK.partial at each checkpoint, checked on --resume (a chunk that
 * differs is copied again), and become PACK.seal at the end.  The state
 * names every shard by identity, so a changed shard starts the build over.
 * Outputs are checked against the inputs and each other first (outputs.h)
 * and opened without following links (mp_open_output).
 */
#include "config.h"

#include "writer/kimi/build.h"
#include "writer/kimi/build_internal.h"
#include "writer/builder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "pack/digest.h"
#include "base/file.h"
#include "pack/kimi/index.h"
#include "base/jsonstr.h"
#include "writer/kimi/manifestwrite.h"
#include "writer/outputs.h"
#include "pack/kimi/manifest.h"
#include "base/outfile.h"
#include "base/quant.h"
#include "seal/seal.h"
#include "base/text.h"
#include "writer/kimi/buildseal.h"

void mp_gguf_build_result_free(struct mp_gguf_build_result *res)
{
	free(res->pack_path);
	free(res->manifest_path);
	res->pack_path = res->manifest_path = NULL;
}

/* ---- the whole build ----------------------------------------------------- */

static enum mp_err index_digest(struct build *b)
{
	struct mp_sha256 *h = mp_sha256_new();
	unsigned char d[MP_SHA256_LEN];

	if (!h)
		return MP_E_NOMEM;
	for (uint64_t pos = 0; pos < b->l.index_end;) {
		size_t n = b->l.index_end - pos < CHUNK ? (size_t)(b->l.index_end - pos) : CHUNK;

		mp_build_prefix_bytes(&b->l, pos, b->buf, n);
		mp_sha256_update(h, b->buf, n);
		pos += n;
	}
	mp_sha256_final(h, d);
	mp_sha256_hex(d, b->res->index_sha256);
	memcpy(b->index_raw, d, sizeof d);
	mp_sha256_free(h);
	return MP_OK;
}

static enum mp_err check_space(struct build *b, uint64_t have, struct mp_error *err)
{
	return mp_build_check_space(b->dir, b->l.size - have, b->o->margin, err);
}

static enum mp_err final_check(struct build *b, struct mp_error *err)
{
	struct mp_open_opts oo = {
		.manifest_path = b->res->manifest_path,
		.expect_layers = MP_K3_HIDDEN_LAYERS,
		.expect_experts = b->l.experts,
		.config_path = b->o->config_path,
		.cancel = b->o->cancel,
	};
	struct mp_pack *pack = NULL;
	enum mp_err rc = mp_pack_open(&pack, b->res->pack_path, &oo, err);

	mp_pack_close(pack);
	return rc;
}

static void remove_partial(struct build *b)
{
	unlink(b->partial);
	unlink(b->state);
	unlink(b->digests_path);
}

/*
 * Where a --resume build starts: the objects PACK.partial.state vouches for
 * when PACK.partial is still the file it names and as long as it says,
 * else 0 with the reason in res->notice.
 */
static enum mp_err find_resume_point(struct build *b, struct resume_point *rp, uint64_t *start,
				struct mp_error *err)
{
	struct stat st;
	char why[MP_MSG_MAX];
	enum mp_err rc;

	/* never written through a link, whatever the state says */
	if (lstat(b->partial, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)
		return mp_fail(err, MP_E_PACK_IO, "cannot write partial pack %s: %s, not "
			       "the file an interrupted build wrote; remove it",
			       b->partial, S_ISLNK(st.st_mode) ? "a symbolic link"
			       : !S_ISREG(st.st_mode) ? mp_file_kind(st.st_mode)
						      : "a file with more than one hard link");
	rc = mp_build_load_state(b, rp, why, sizeof why, err);
	if (rc)
		return rc;
	*start = rp->objects;
	if (*start && (st.st_dev != rp->partial.st_dev || st.st_ino != rp->partial.st_ino)) {
		snprintf(why, sizeof why, "%s is not the file the interrupted build wrote",
			 b->partial);
		*start = 0;
	}
	/* a partial file shorter than its state says was cut since: growing
	 * it back would put zeros in the pack */
	if (*start && (uint64_t)st.st_size < mp_layout_object_offset(&b->l, *start)) {
		snprintf(why, sizeof why, "%s is shorter than its state says", b->partial);
		*start = 0;
	}
	/* a reason near MP_MSG_MAX is cut, as every message is; the return
	 * value is looked at because, with mp_build_load_state() in buildstate.c,
	 * the compiler no longer sees how long `why` is */
	if (*start == 0 && why[0] &&
	    snprintf(b->res->notice, sizeof b->res->notice, "%s: starting over", why) < 0)
		b->res->notice[0] = '\0';
	return MP_OK;
}

/*
 * A failure that leaves the pack as PACK.partial for --resume says so, and
 * how to go on: err's message with that appended.
 */
static enum mp_err say_partial_kept(struct build *b, enum mp_err rc, struct mp_error *err)
{
	struct mp_error tail = {0};
	char msg[MP_MSG_MAX];

	if (!err)
		return rc;
	snprintf(msg, sizeof msg, "%s", err->msg);
	mp_fail(&tail, rc, ": %s is kept, run again with --resume to continue it", b->partial);
	return mp_fail_escaped(err, rc, "%s%s", msg, tail.msg);
}

/*
 * A failure before the rename.  A PACK.partial this run resumed was judged
 * usable by find_resume_point() (its state vouches for it and names these
 * very shards), and nothing that fails later makes it less so (a full
 * disk, a read error: the next --resume checks every chunk again), so it
 * stays with its state and digests; one this run created goes, except
 * after a signal, which keeps it for --resume.
 */
static enum mp_err fail_partial(struct build *b, enum mp_err rc, struct mp_error *err)
{
	if (rc == MP_E_INTERRUPTED)
		return rc; /* stop_copy() said so already */
	if (b->resumed)
		return say_partial_kept(b, rc, err);
	remove_partial(b);
	return rc;
}

static enum mp_err build_pack(struct build *b, struct mp_error *err)
{
	struct resume_point rp = {0};
	uint64_t start = 0;
	enum mp_err rc;

	if (mp_build_exists(b->partial) && !b->o->resume)
		return mp_fail(err, MP_E_USAGE, "invalid usage: %s is left from an interrupted "
			       "build: give --resume to continue it, or remove it", b->partial);
	if (b->o->resume && mp_build_exists(b->partial) &&
	    (rc = find_resume_point(b, &rp, &start, err)))
		return rc;
	if (start == 0)
		remove_partial(b); /* nothing durable to trust: start over */
	b->resumed = start > 0;
	b->res->resumed_at = start;
	rc = check_space(b, start ? mp_layout_object_offset(&b->l, start) : 0, err);
	if (!rc)
		rc = mp_build_write_partial(b, start, &rp, err);
	b->seal_ready = !rc;
	if (!rc && rename(b->partial, b->res->pack_path) != 0)
		rc = mp_fail(err, MP_E_PACK_IO, "cannot rename %s to %s: %s", b->partial,
			     b->res->pack_path, strerror(errno));
	if (rc)
		return fail_partial(b, rc, err);
	/* the state and digests stay until the manifest passes: they vouch
	 * for the pack if it has to go back to PACK.partial (settle_pack) */
	return mp_output_sync_dir(b->dir, err);
}

static bool is_written_pack(const struct build *b)
{
	struct stat st;

	return lstat(b->res->pack_path, &st) == 0 && st.st_dev == b->partial_st.st_dev &&
	       st.st_ino == b->partial_st.st_ino;
}

/*
 * The pack written now, renamed into place, after its comparison, manifest
 * and final check.  Passed: its state and digests go.  Failed: it does not
 * stay under its name without a manifest that passed.  After a signal, or
 * when this run resumed it, it goes back to PACK.partial, which its state
 * and digests still vouch for, so that --resume finishes it without copying
 * (a finished pack is never deleted because of a signal; should the rename
 * back fail, it stays at its name, and a later build keeps it only if
 * every byte equals the shards).  One this run created that failed its
 * checks (a shard changed under the build) is removed.
 */
static enum mp_err settle_pack(struct build *b, enum mp_err rc, struct mp_error *err)
{
	bool keep = rc == MP_E_INTERRUPTED || b->resumed;

	if (!rc || !is_written_pack(b)) {
		unlink(b->state);
		unlink(b->digests_path);
		return rc;
	}
	if (keep && rename(b->res->pack_path, b->partial) == 0) {
		(void)mp_output_sync_dir(b->dir, NULL);
		return say_partial_kept(b, rc, err);
	}
	unlink(b->state);
	unlink(b->digests_path);
	if (!keep)
		unlink(b->res->pack_path);
	return rc;
}

/* The layout the experts make, the paths around the pack, the buffers. */
static enum mp_err plan(struct build *b, struct mp_error *err)
{
	const struct mp_experts *ex = b->ex;
	enum mp_err rc;

	for (int r = 0; r < MP_ROLE_COUNT; r++)
		b->l.role_bytes[r] = ex->role_bytes[r];
	mp_layout_set_shapes(&b->l, ex->hidden, ex->inter);
	rc = mp_layout_compute(&b->l, ex->experts, ALIGNMENT, 0, err);
	if (!rc)
		rc = mp_build_paths(b, err);
	if (!rc)
		rc = mp_build_check_outputs(b, err);
	if (!rc && !b->o->check_only)
		rc = mp_build_seal_init(&b->seal, &b->l, err);
	if (rc)
		return rc;
	b->res->size = b->l.size;
	b->res->entries = b->l.index_count;
	b->buf = aligned_alloc(MP_PAGE, CHUNK);
	b->buf2 = aligned_alloc(MP_PAGE, CHUNK);
	if (!b->buf || !b->buf2)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	return MP_OK;
}

/* Before the pack is touched: the inventory and index digests, the
 * manifest checked ahead, and the lock. */
static enum mp_err prepare(struct build *b, json_t **inventory, struct mp_error *err)
{
	enum mp_err rc = mp_build_inventory_json(b, inventory, err);

	if (!rc && mp_mw_canonical_sha256(*inventory, b->res->inventory_sha256) != 0)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
	if (!rc)
		rc = index_digest(b) ? mp_fail(err, MP_E_NOMEM, "out of memory") : MP_OK;
	if (!rc)
		rc = mp_build_check_manifest_ahead(b, *inventory, err);
	if (!rc)
		rc = b->o->check_only ? mp_build_peek_lock(b, err) : mp_build_take_lock(b, err);
	return rc;
}

/*
 * A pack already at the name is kept only when every byte is shown to be
 * the shards' (the comparison hashes the seal's chunks as it reads them),
 * else removed, with why in res->detail.
 */
static enum mp_err judge_existing(struct build *b, struct mp_error *err)
{
	struct mp_gguf_build_result *res = b->res;
	struct mp_error why = {0};
	enum mp_err judged;

	if (!mp_build_exists(res->pack_path))
		return MP_OK;
	b->hash_judged = true;
	judged = mp_build_judge_pack(b, res->pack_path, true, &why);
	b->hash_judged = false;
	if (judged == MP_OK) {
		res->reused = true;
		b->seal_ready = true;
		return MP_OK;
	}
	/* not judged: the pack is neither kept nor removed */
	if (judged == MP_E_INTERRUPTED)
		return mp_fail_escaped(err, judged, "%s", why.msg);
	snprintf(res->detail, sizeof res->detail, "%s", why.msg);
	if (unlink(res->pack_path) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot remove the invalid %s: %s",
			       res->pack_path, strerror(errno));
	return MP_OK;
}

/* A pack kept, for --full-sha256: it was not written now, so hash what is
 * there. */
static enum mp_err hash_kept_pack(struct build *b, struct mp_error *err)
{
	unsigned char d[MP_SHA256_LEN];
	struct stat st;
	int fd;
	enum mp_err rc = mp_open_regular(b->res->pack_path, "pack", MP_E_PACK_IO, &fd, &st, err);

	if (rc)
		return rc;
	rc = mp_sha256_fd(fd, b->l.size, b->res->pack_path, b->o->progress, b->o->progress_arg,
			  b->o->cancel, d, err);
	close(fd);
	mp_sha256_hex(d, b->res->sha256);
	memcpy(b->pack_sha256, d, sizeof d);
	return rc;
}

/* The manifest beside the pack, checked with it as a reader opens them; a
 * manifest that does not pass must not stay. */
static enum mp_err publish_manifest(struct build *b, json_t *inventory, struct mp_error *err)
{
	enum mp_err rc = mp_build_write_manifest(b, inventory, err);

	if (!rc) {
		rc = final_check(b, err);
		if (rc)
			unlink(b->res->manifest_path);
	}
	return rc;
}

/* The pack built or kept, then its manifest, then its seal. */
static enum mp_err build_or_keep(struct build *b, json_t *inventory, struct mp_error *err)
{
	struct mp_gguf_build_result *res = b->res;
	enum mp_err rc = mp_build_check_existing(b, err);

	if (!rc)
		rc = judge_existing(b, err);
	if (rc)
		return rc;
	if (!res->reused) {
		/* a seal of the pack being replaced must not outlive it */
		unlink(b->seal_path);
		rc = build_pack(b, err);
		if (rc)
			return rc;
		mp_build_test_pause(b->o->cancel, "renamed");
		rc = mp_build_judge_pack(b, res->pack_path, false, err);
	} else if (b->o->full_sha256) {
		rc = hash_kept_pack(b, err);
	}
	if (!rc)
		rc = publish_manifest(b, inventory, err);
	if (!res->reused)
		rc = settle_pack(b, rc, err);
	/* the seal last, once pack and manifest are in place: anchored to
	 * the manifest's expert_pack.sha256 when there is one */
	if (!rc && b->seal_ready) {
		res->seal_unanchored = !b->o->full_sha256;
		rc = mp_build_seal_write(&b->seal, b->seal_path, b->index_raw,
					 b->o->full_sha256 ? b->pack_sha256 : NULL,
					 res->seal_digest, err);
	}
	return rc;
}

static void release(struct build *b)
{
	if (b->lock_fd >= 0)
		close(b->lock_fd);
	if (b->mlock_fd >= 0)
		close(b->mlock_fd);
	free(b->buf);
	free(b->buf2);
	free(b->partial);
	free(b->state);
	free(b->lock_path);
	free(b->mlock_path);
	free(b->seal_path);
	free(b->digests_path);
	mp_build_seal_free(&b->seal);
	free(b->dir);
}

enum mp_err mp_gguf_build(const struct mp_shard_set *set, const struct mp_experts *ex,
			  const struct mp_model_config *cfg,
			  const struct mp_gguf_build_opts *opts, struct mp_gguf_build_result *res,
			  struct mp_error *err)
{
	struct build b = {.set = set, .ex = ex, .cfg = cfg, .o = opts, .res = res,
			  .lock_fd = -1, .mlock_fd = -1, .seal = {.fd = -1}};
	json_t *inventory = NULL;
	enum mp_err rc;

	memset(res, 0, sizeof *res);
	rc = plan(&b, err);
	if (!rc)
		rc = prepare(&b, &inventory, err);
	if (!rc)
		rc = opts->check_only ? mp_build_judge_pack(&b, res->pack_path, false, err)
				      : build_or_keep(&b, inventory, err);
	json_decref(inventory);
	release(&b);
	return rc;
}
