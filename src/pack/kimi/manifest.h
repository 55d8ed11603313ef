/*
 * manifest.h - the pack manifest: reading, typed access, and its checks.
 *
 * Internal to the core library (it exposes jansson types).  The checks run
 * in the reference loader's order (moepack-pack(5)), and every failure names
 * the manifest key at fault by its dotted path, e.g. "expert_pack.size".
 */
#ifndef MOEPACK_MANIFEST_H
#define MOEPACK_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/mjson.h"
#include "pack/kimi/format.h"
#include "pack/pack.h"

/*
 * The Kimi manifest (GGMLMOEPACKv1), typed, as its module checks it; the
 * rest of the tree reads struct mp_model.  Strings are owned by the
 * mp_pack.
 */
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

/* What the manifest is checked against. */
struct mp_manifest_input {
	const char *manifest_path;
	const char *pack_real_path; /* realpath() of the pack */
	uint64_t pack_size;
	uint64_t expect_layers;     /* 0: none */
	uint64_t expect_experts;    /* 0: none */
	const char *config_sha256;  /* hex digest of --config, or NULL */
	bool surrogate_escapes;     /* the text had lone \udcXX escapes (see
	                               mp_manifest_parse_ex) */
};

/*
 * The keys the reference loader reads only after every other check, the
 * pack's index included: model.config_sha256 and source.inventory_sha256,
 * each a string of 64 lowercase hex digits.  Fills m's copies of them.
 */
enum mp_err mp_manifest_check_recorded(json_t *root, struct mp_manifest *m,
				       struct mp_error *err);

/*
 * Run every manifest check in order and fill *m.  On failure *m may be
 * partly filled; free it with mp_manifest_free() either way.  Warnings
 * (not failures) are appended to warn[] up to MP_MAX_WARNINGS.
 */
enum mp_err mp_manifest_check(json_t *root, const struct mp_manifest_input *in,
			      struct mp_manifest *m, char warn[][MP_MSG_MAX],
			      unsigned *nwarn, struct mp_error *err);
void mp_manifest_free(struct mp_manifest *m);

/*
 * The manifest text with expert_pack.path replaced by new_path, for the
 * mounted <pack>.manifest.json.  Key order is kept.  *out is malloc'd.
 * A path that is not UTF-8 (legal on Linux) is written the way Python's
 * surrogateescape reads it back: each byte that is not part of valid UTF-8
 * as the lone surrogate \udcXX, so json.load() + open() in a Python loader
 * reach the exact bytes; mp_manifest_parse_ex() reads it back.
 */
enum mp_err mp_manifest_with_path(const char *raw, size_t len, const char *new_path,
				  char **out, size_t *out_len, struct mp_error *err);

#endif
