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

#include "base/cancel.h"
#include "base/errors.h"
#include "base/progress_fn.h"
#include "pack/digest.h"
#include "pack/role.h"
#include "pack/openhook.h"
#include "pack/packfile.h"

struct mp_role_info {
	char dtype[16];        /* "Q2_K" / "Q3_K" */
	int dtype_id;          /* GGML type id: 10 / 11 */
	uint64_t expert_bytes; /* payload bytes of one expert's role */
	uint64_t role_offset;  /* offset of this role inside an object */
	/* the logical shape, GGUF ne[] order: in struct mp_model the first
	 * object's (a format may record one per entry: mp_pack_role_info()) */
	uint64_t shape[MP_MAX_SHAPE];
	unsigned shape_len;
	/* in struct mp_model: some object's entry records another shape */
	bool shape_varies;
};

/*
 * What a pack holds, whatever its format: the one view of it that
 * namespace/, seal/, payload/, daemon/ and the CLI read.  Filled by the
 * format's module (struct mp_pack_format) at open.
 */
struct mp_model {
	/* the model's layer count, what --expect-layers compares (the Kimi
	 * manifest's num_hidden_layers, 93, counts a dense layer the pack
	 * does not hold; SGLang's header num_layers) */
	uint64_t model_layers;
	uint64_t num_experts;
	uint64_t top_k;
	/* the format's own layer numbers, ascending by one: the Kimi format's
	 * 1..92, SGLang's 0..L-1 (see mp_pack_layer_index) */
	uint32_t *layer_ids;
	size_t layer_count;
	struct mp_role_info roles[MP_ROLE_COUNT];  /* by role */
	enum mp_role order[MP_ROLE_COUNT];         /* the roles as they lie in an object */
	uint64_t object_bytes;                     /* the roles of one object */
	uint64_t data_start;
	uint64_t alignment;
	char index_sha256[MP_SHA256_HEX];          /* the index digest the manifest binds */
	char sha256[MP_SHA256_HEX];                /* the whole file's it records, "" none */
};

struct mp_pack;
struct mp_open_opts;

/* A fact only one format has, for `moepack info` (text and JSON). */
struct mp_pack_fact {
	const char *key;    /* its JSON key: "config_sha256" */
	const char *label;  /* its text label: "config sha256" */
	bool number;        /* u64 is the value; else text ("" is none: null) */
	bool tail;          /* listed after the common facts, not before */
	uint64_t u64;
	char text[128];
};
#define MP_PACK_FACTS_MAX 8

/*
 * One pack format: what detects it, validates it into an mp_pack, and
 * answers what only it knows.  A new format is one module that provides
 * such a table (HACKING.md, "A third format"); nothing outside src/pack/
 * switches on the format.
 */
struct mp_pack_format {
	const char *name;          /* "GGMLMOEPACKv1", "SGLANG-EXPERTPACK-v1" */
	const char *model;         /* what it holds: "Kimi K3", "DeepSeek-V4-Flash" */
	const char *magic;         /* the file's first bytes */
	size_t magic_len;
	/* the manifest's "format": what tells the format of a file that has
	 * neither magic (see mp_pack_format_of) */
	const char *manifest_format;
	/* Validate the pack at path into p (p->format set, the rest zero). */
	enum mp_err (*open)(struct mp_pack *p, const char *path,
			    const struct mp_open_opts *o, struct mp_error *err);
	void (*close)(struct mp_pack *p);
	/* The loader's per-object cache generation (user.moepack.generation). */
	uint64_t (*generation)(const struct mp_pack *p, uint64_t object);
	/* The source tensor a role came from, into buf. */
	void (*tensor_name)(const struct mp_pack *p, uint64_t object, enum mp_role role,
			    char *buf, size_t len);
	/* Its own facts for `moepack info`, at most MP_PACK_FACTS_MAX. */
	unsigned (*facts)(const struct mp_pack *p, struct mp_pack_fact *out);
	/* The SHA-256 of a role's bytes that the format records, or NULL. */
	const unsigned char *(*role_sha256)(const struct mp_pack *p, uint64_t object,
					    enum mp_role role);
	/* The logical shape of a role of an object, into ri->shape and
	 * ri->shape_len: its own entry's, or the format's one per role. */
	void (*role_shape)(const struct mp_pack *p, uint64_t object, enum mp_role role,
			   struct mp_role_info *ri);
	/* The manifest's text with the pack's path (path_key) replaced, every
	 * other value kept: the mounted <pack>.manifest.json.  *out malloc'd. */
	enum mp_err (*manifest_with_path)(const struct mp_pack *p, const char *path,
					  char **out, size_t *out_len, struct mp_error *err);
	/* The manifest's keys that name the pack and record its whole SHA-256,
	 * and the name of model_layers. */
	const char *path_key, *sha256_key, *layers_key;
	/* How a pack of this format gets a whole-file digest, or has its every
	 * byte checked otherwise: the end of a full_digest_missing message. */
	const char *sha256_hint;
};

/*
 * A format's functions in its table, by the one naming every format
 * follows: PREFIX_open, PREFIX_close, PREFIX_generation, ... (static in
 * the format's file).  The table then lists only what is its data.
 */
#define MP_PACK_FORMAT_OPS(prefix)                                                \
	.open = prefix##_open, .close = prefix##_close,                            \
	.generation = prefix##_generation, .tensor_name = prefix##_tensor_name,    \
	.facts = prefix##_facts, .role_sha256 = prefix##_role_sha256,              \
	.role_shape = prefix##_role_shape,                                         \
	.manifest_with_path = prefix##_manifest_with_path

/* The formats, in the order their magics are tried. */
extern const struct mp_pack_format mp_format_kimi, mp_format_expertpack;

/*
 * The format whose magic the file at path starts with.  For a file with
 * neither magic (missing, not a regular file, short, another magic), the
 * format whose manifest_format is the manifest's "format" (the manifest of
 * o: its text, its path, else the default beside the pack), so that the
 * checks that fail are those of the format the manifest describes; the
 * Kimi format when that says nothing either (its open then says why,
 * naming both magics).  Reads 64 bytes of the pack and, for neither magic,
 * the manifest; validates nothing.  o may be NULL.
 */
const struct mp_pack_format *mp_pack_format_of(const char *path,
					       const struct mp_open_opts *o);

/* What the caller expects, as the reference loader's caller passes it. */
struct mp_open_opts {
	const char *manifest_path; /* NULL: "<pack>.manifest.json" */
	/*
	 * The manifest's bytes, already in memory, instead of reading the
	 * file (NULL: read it): `moepack relocate` checks the text it is about
	 * to write.  manifest_path still names it in messages and is what a
	 * relative expert_pack.path resolves against.  At most
	 * MP_MANIFEST_MAX bytes.
	 */
	const char *manifest_text;
	size_t manifest_text_len;
	uint64_t expect_layers;    /* 0: no expectation; else num_hidden_layers */
	uint64_t expect_experts;   /* 0: no expectation; else num_experts */
	/* SGLANG-EXPERTPACK-v1 only (its loader's constructor arguments): */
	uint64_t expect_top_k;     /* 0: none */
	const char *expect_source_sha256;         /* NULL: not compared */
	const char *expect_model_identity_sha256;
	const char *expect_config_sha256;
	const char *source_path;   /* the source GGUF: its checks run (NULL: none) */
	const char *config_path;   /* NULL, or a file whose SHA-256 must be
	                              model.config_sha256 */
	bool full;                 /* also check expert_pack.sha256 */
	mp_progress_fn progress;   /* may be NULL */
	void *progress_arg;
	/*
	 * Called with the pack's descriptor right after it is opened, before
	 * it is looked at: a mount takes its read lease here, so that the
	 * identity below (and every byte validated) is taken with the lease
	 * held.  A failure stops the open with its code.  May be NULL.
	 */
	mp_opened_fn opened;
	void *opened_arg;
	/* A stop asked (a build's signal): every long read, digest and
	 * comparison ends with MP_E_INTERRUPTED.  May be NULL. */
	const struct mp_cancel *cancel;
};

struct mp_ep;
struct mp_manifest;

struct mp_pack {
	const struct mp_pack_format *format;
	/* the files, their identity and the warnings (pack/packfile.h),
	 * filled by the format's open as by every format's */
	struct mp_pack_file file;
	struct mp_model m;
	struct mp_manifest *kimi;  /* GGMLMOEPACKv1's manifest, else NULL */
	struct mp_ep *ep;          /* SGLANG-EXPERTPACK-v1's state, else NULL */
	uint64_t index_count;
	uint64_t object_count;     /* layer_count * num_experts */
	uint64_t *object_offset;   /* object_count entries: where each object starts */
	unsigned char index_digest[32];
	bool page_aligned;         /* every payload starts on a 4096 boundary */
	bool full_checked;         /* the whole-file digest was checked */
};

/*
 * Open and validate.  The format is told by the file's first bytes (its
 * magic); a file with neither magic is refused by the Kimi module's own
 * magic check, whose message names both.  On success *out is a pack to
 * free with mp_pack_close().  On failure *out is NULL, err says why, and
 * the code is returned.  The order of checks is that of moepack-pack(5),
 * the format's reference loader's.
 */
enum mp_err mp_pack_open(struct mp_pack **out, const char *pack_path,
			 const struct mp_open_opts *opts, struct mp_error *err);
void mp_pack_close(struct mp_pack *pack);

/* Layer id (e.g. 17, or 0 for SGLang's first) -> index into m.layer_ids, or -1.  O(1). */
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

/* Absolute byte range of a whole object (its roles).  O(1), no I/O. */
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

/* The format's generation of an object (user.moepack.generation).  Not the
 * inode generation of the mounted tree (tree.h). */
uint64_t mp_pack_generation(const struct mp_pack *pack, uint64_t object);
/* The source tensor of a role of an object ("blk.17.ffn_up_exps.weight"). */
void mp_pack_tensor_name(const struct mp_pack *pack, uint64_t object, enum mp_role role,
			 char *buf, size_t len);
/* The manifest for a client that sees the pack at `path` (the format's
 * manifest_with_path).  MP_E_NOMEM, or a manifest the walk cannot follow. */
enum mp_err mp_pack_manifest_with_path(const struct mp_pack *pack, const char *path,
				       char **out, size_t *out_len, struct mp_error *err);
/* The SHA-256 the format records for a role's bytes, or NULL (Kimi: none). */
const unsigned char *mp_pack_role_sha256(const struct mp_pack *pack, uint64_t object,
					 enum mp_role role);
/*
 * Role r of one object: m.roles[r] with the shape that object's entry
 * records (SGLang's entries each record one and may differ; a Kimi pack's
 * manifest has one per role), shape_varies false.  What shows or decodes
 * one expert's role reads this, not m.roles[r].shape.
 */
void mp_pack_role_info(const struct mp_pack *pack, uint64_t object, enum mp_role role,
		       struct mp_role_info *out);

/* Room for any shape as text, its NUL included. */
#define MP_SHAPE_TEXT_MAX (MP_MAX_SHAPE * 22 + 3)
/* ri's shape as the manifest writes it, a JSON list in GGUF ne[] order,
 * the row length first: "[3584, 3072]".  Into buf[len], cut short at
 * len - 1. */
void mp_shape_text(const struct mp_role_info *ri, char *buf, size_t len);

#endif
