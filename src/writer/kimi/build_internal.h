/*
 * build_internal.h - what the files of the Kimi GGUF builder (build.h)
 * share and nothing outside them may use: the build in progress, the bytes
 * it expects, and the phases one file hands another.  build.c runs the
 * phases; buildcompare.c judges a pack that is there; buildstate.c keeps
 * the resume state; buildcopy.c writes PACK.partial; buildmanifest.c, the
 * manifest; buildpaths.c names, locks and checks the files.
 */
#ifndef MP_BUILD_INTERNAL_H
#define MP_BUILD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/errors.h"
#include "pack/digest.h"
#include "writer/kimi/buildseal.h"
#include "writer/kimi/layout.h"
#include "writer/kimi/shards.h"

/* build.h's, named by pointer only: including build.h would make a cycle
 * of modules (build.c includes both). */
struct mp_gguf_build_opts;
struct mp_gguf_build_result;

#define ALIGNMENT MP_PAGE
#define CHUNK (16u << 20)                /* the reference's copy chunk */

/* The build in progress: what every phase reads and fills. */
struct build {
	const struct mp_shard_set *set;
	const struct mp_experts *ex;
	const struct mp_model_config *cfg;
	const struct mp_gguf_build_opts *o;
	struct mp_gguf_build_result *res;
	struct mp_layout l;
	char *dir;             /* of the pack */
	char *partial, *state, *lock_path, *seal_path, *digests_path;
	struct stat partial_st, digests_st; /* identities of what this build wrote */
	struct mp_build_seal seal;          /* chunk digests of what is written */
	bool seal_ready;                    /* seal.digests cover every chunk */
	bool resumed;                       /* PACK.partial was continued, not created */
	bool hash_judged;                   /* mp_build_judge_pack() feeds the seal */
	unsigned char index_raw[MP_SHA256_LEN];
	unsigned char pack_sha256[MP_SHA256_LEN]; /* with full_sha256 */
	char *mlock_path;      /* the manifest's lock when not the pack's, or NULL */
	int lock_fd, mlock_fd;
	unsigned char *buf;    /* CHUNK bytes */
	unsigned char *buf2;   /* CHUNK bytes, for comparisons */
	bool all;              /* mp_build_judge_pack(): compare every entry */
};

/* What PACK.partial.state vouches for (mp_build_load_state()). */
struct resume_point {
	uint64_t objects;
	struct stat partial, digests; /* st_dev and st_ino only */
};

/* Bytes [pos, pos + n) of the pack's first data_start bytes: header,
 * entries, zeros. */
void mp_build_prefix_bytes(const struct mp_layout *l, uint64_t pos, unsigned char *out,
			   size_t n);

/* The GGUF slice entry i comes from: its shard, offset and length there,
 * and where it goes in the pack. */
void mp_build_entry_source(const struct build *b, uint64_t i, const struct mp_shard **shard,
			   uint64_t *offset, uint64_t *nbytes, uint64_t *pack_offset);

/* The reference's validation of the pack at path by the shards: layout and
 * samples, or with `all` (or --compare-all) every payload byte; with
 * b->hash_judged the bytes read feed b->seal. */
enum mp_err mp_build_judge_pack(struct build *b, const char *path, bool all,
				struct mp_error *err);

/* The samples the manifest will record for count entries: what
 * mp_build_judge_pack() compares when the pack is kept. */
uint64_t mp_build_planned_samples(const struct mp_gguf_build_opts *o, uint64_t count);

/* Record in PACK.partial.state that the first `objects` objects are
 * copied and durable, with what vouches for them (layout, PACK.partial,
 * its digests, every shard by identity); rewritten atomically. */
enum mp_err mp_build_save_state(struct build *b, uint64_t objects, struct mp_error *err);

/* What PACK.partial.state vouches for.  0 objects when there is no state;
 * 0 with `why` filled when there is one that cannot be trusted any more. */
enum mp_err mp_build_load_state(const struct build *b, struct resume_point *rp, char *why,
				size_t why_len, struct mp_error *err);

/* Write PACK.partial from object `start` on (rp: what its state vouched
 * for, on a --resume), checkpointing as it goes, then make it durable and
 * check its size; with full_sha256 the whole-file digest goes to
 * b->pack_sha256 and b->res->sha256.  A stop asked keeps PACK.partial and
 * its state and returns MP_E_INTERRUPTED. */
enum mp_err mp_build_write_partial(struct build *b, uint64_t start,
				   const struct resume_point *rp, struct mp_error *err);

/* {summary, shards, tensors}: what source.inventory_sha256 covers. */
enum mp_err mp_build_inventory_json(const struct build *b, json_t **out,
				    struct mp_error *err);

/* Before anything is copied: the manifest this build will write, with the
 * values still to come at their longest, must record every name and pass
 * the limits a validator reads it with. */
enum mp_err mp_build_check_manifest_ahead(struct build *b, json_t *inventory,
					  struct mp_error *err);

/* Write the manifest of the pack now in place, atomically. */
enum mp_err mp_build_write_manifest(struct build *b, json_t *inventory, struct mp_error *err);

/* The pack's path (-o, or beside the shards) and every path derived from
 * it into b->res and b: PACK.partial, its state and digests, PACK.lock,
 * PACK.seal, the manifest and its lock, the pack's directory. */
enum mp_err mp_build_paths(struct build *b, struct mp_error *err);

/* Take the exclusive locks that cover the pack, the files beside it and
 * the manifest; MP_E_BUILD_LOCKED when another build holds one. */
enum mp_err mp_build_take_lock(struct build *b, struct mp_error *err);

/* --check-only's lock: a shared one on PACK.lock if it exists, else none;
 * nothing is written. */
enum mp_err mp_build_peek_lock(struct build *b, struct mp_error *err);

/* Every output against every input and each other, before anything is
 * written. */
enum mp_err mp_build_check_outputs(struct build *b, struct mp_error *err);

/* Outputs that already exist must be of their kind, or --force must say
 * they may go. */
enum mp_err mp_build_check_existing(struct build *b, struct mp_error *err);

/* Whether anything (a link too) is at path. */
int mp_build_exists(const char *path);

#endif
