/*
 * pack.h - a validated Kimi GGML MoE expert pack (GGMLMOEPACKv1).
 *
 * The core library's main contract.  mp_pack_open() reads the manifest and
 * the pack's header and index, runs every check of moepack-pack(5) in the
 * reference loader's order, and on success returns an immutable mp_pack that
 * answers "where is (layer, expert, role)" in O(1).  Nothing here knows
 * about FUSE or prints anything; failures come back as an mp_error.
 *
 * An mp_pack is read-only after mp_pack_open() returns and may be shared by
 * any number of threads.
 */
#ifndef MOEPACK_PACK_H
#define MOEPACK_PACK_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>

#include "base/errors.h"
#include "base/progress_fn.h"
#include "pack/digest.h"
#include "pack/format.h"

struct mp_role_info {
	char dtype[16];        /* "Q2_K" / "Q3_K" */
	int dtype_id;          /* GGML type id: 10 / 11 */
	uint64_t expert_bytes; /* payload bytes of one expert's role */
	uint64_t role_offset;  /* offset of this role inside an object */
	uint64_t shape[MP_MAX_SHAPE];
	unsigned shape_len;
};

/* The manifest, typed.  Strings are owned by the mp_pack. */
struct mp_manifest {
	uint64_t num_hidden_layers;
	uint64_t num_experts;
	uint64_t top_k;
	uint32_t *layer_ids;   /* active_moe_layer_ids */
	size_t layer_count;
	char config_sha256[MP_SHA256_HEX];
	char *pack_path;       /* expert_pack.path as written */
	uint64_t size;
	struct mp_role_info roles[MP_ROLE_COUNT];
	uint64_t object_bytes;
	uint64_t data_start;
	uint64_t alignment;
	char index_sha256[MP_SHA256_HEX];
	char sha256[MP_SHA256_HEX]; /* "" when the manifest has none */
	char inventory_sha256[MP_SHA256_HEX]; /* source.inventory_sha256 */
};

/* What the caller expects, as the reference loader's caller passes it. */
struct mp_open_opts {
	const char *manifest_path; /* NULL: "<pack>.manifest.json" */
	uint64_t expect_layers;    /* 0: no expectation; else num_hidden_layers */
	uint64_t expect_experts;   /* 0: no expectation; else num_experts */
	const char *config_path;   /* NULL, or a file whose SHA-256 must be
	                              model.config_sha256 */
	bool full;                 /* also check expert_pack.sha256 */
	mp_progress_fn progress;   /* may be NULL */
	void *progress_arg;
};

#define MP_MAX_WARNINGS 4

struct mp_pack {
	int fd;                    /* the pack, open O_RDONLY */
	char *path;                /* pack path as given */
	char *real_path;           /* realpath() of the pack */
	char *manifest_path;       /* manifest path as used */
	char *manifest_raw;        /* the manifest's bytes, NUL-terminated */
	size_t manifest_len;
	uint64_t file_size;
	/* fstat() of fd when it was opened, before a byte was read: what the
	 * validated bytes are identified by when a mount watches the file */
	struct timespec file_mtime, file_ctime;
	uint64_t file_nlink;
	struct mp_manifest m;
	uint64_t index_count;
	uint64_t object_count;     /* layer_count * num_experts */
	uint64_t *object_offset;   /* object_count entries: offset of up */
	unsigned char index_digest[32];
	bool page_aligned;         /* every payload starts on a 4096 boundary */
	bool full_checked;         /* the whole-file digest was checked */
	unsigned nwarnings;
	char warnings[MP_MAX_WARNINGS][MP_MSG_MAX];
};

/*
 * Open and validate.  On success *out is a pack to free with
 * mp_pack_close().  On failure *out is NULL, err says why, and the code is
 * returned.  The order of checks is that of moepack-pack(5).
 */
enum mp_err mp_pack_open(struct mp_pack **out, const char *pack_path,
			 const struct mp_open_opts *opts, struct mp_error *err);
void mp_pack_close(struct mp_pack *pack);

/* Layer id (e.g. 17) -> index into m.layer_ids, or -1.  O(1). */
long mp_pack_layer_index(const struct mp_pack *pack, uint64_t layer_id);

/* Object number of (layer index, expert): layer_index * num_experts + expert. */
static inline uint64_t mp_pack_object(const struct mp_pack *pack,
				      uint64_t layer_index, uint64_t expert)
{
	return layer_index * pack->m.num_experts + expert;
}

/* Absolute byte range of one role of one object.  O(1), no I/O. */
static inline void mp_pack_role_range(const struct mp_pack *pack,
				      uint64_t object, enum mp_role role,
				      uint64_t *offset, uint64_t *nbytes)
{
	*offset = pack->object_offset[object] + pack->m.roles[role].role_offset;
	*nbytes = pack->m.roles[role].expert_bytes;
}

/* Absolute byte range of a whole object (up, gate, down).  O(1), no I/O. */
void mp_pack_object_range(const struct mp_pack *pack, uint64_t object, uint64_t *offset,
			  uint64_t *nbytes);

/* "<pack_path>.manifest.json", malloc'd; NULL when out of memory. */
char *mp_pack_default_manifest_path(const char *pack_path);

/*
 * The one check of the whole-file digest: sha256, the digest of the pack
 * file, against the manifest's expert_pack.sha256.  MP_E_FULL_DIGEST_MISSING
 * when the manifest has none (sha256 is not read then), MP_E_FULL_DIGEST
 * when it differs.  Setting full_checked is the caller's.
 */
enum mp_err mp_pack_check_digest(const struct mp_pack *pack,
				 const unsigned char sha256[MP_SHA256_LEN], struct mp_error *err);

/*
 * The same by real ids, checked: MP_E_NOT_FOUND (with a message naming the
 * id) when the layer is not active, the expert is out of range or role is not
 * a role.
 */
enum mp_err mp_pack_lookup(const struct mp_pack *pack, uint64_t layer_id,
			   uint64_t expert, enum mp_role role, uint64_t *offset,
			   uint64_t *nbytes, struct mp_error *err);

/*
 * The object generation of (layer, expert), the reference loader's cache
 * generation and the user.moepack.generation xattr: the first 8 bytes,
 * little-endian, of SHA-256("<index_sha256>:<layer>:<expert>"), or 1 if that
 * is 0.  Not the inode generation of the mounted tree (tree.h), which is one
 * number for every inode.
 */
uint64_t mp_object_generation(const char *index_sha256_hex, uint64_t layer_id,
			      uint64_t expert);

#endif
