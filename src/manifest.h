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
#include <stdint.h>

#include "errors.h"
#include "pack.h"

/* Manifests larger than this are refused before they are read. */
#define MP_MANIFEST_MAX (64u << 20)

/* What the manifest is checked against. */
struct mp_manifest_input {
	const char *manifest_path;
	const char *pack_real_path; /* realpath() of the pack */
	uint64_t pack_size;
	uint64_t expect_layers;     /* 0: none */
	uint64_t expect_experts;    /* 0: none */
	const char *config_sha256;  /* hex digest of --config, or NULL */
};

/* Read a manifest file whole (NUL-terminated).  MP_E_MANIFEST_IO on failure. */
enum mp_err mp_manifest_read(const char *path, char **raw, size_t *len,
			     struct mp_error *err);

/* Parse JSON text; MP_E_MANIFEST_JSON with line and column on failure. */
enum mp_err mp_manifest_parse(const char *raw, size_t len, const char *path,
			      json_t **root, struct mp_error *err);

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
 * reach the exact bytes.  (Strict JSON readers such as jansson refuse lone
 * surrogates; there is no faithful encoding they accept.)
 */
enum mp_err mp_manifest_with_path(const char *raw, size_t len, const char *new_path,
				  char **out, size_t *out_len, struct mp_error *err);

#endif
