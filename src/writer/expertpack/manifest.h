/*
 * epmanifest.h - the manifest of an SGLANG-EXPERTPACK-v1 pack, and its
 * tensor inventory digest, as SGLang's reference builder writes them.
 *
 * The text is Python's json.dumps(value, ensure_ascii=False, indent=2,
 * sort_keys=True) and a newline (base/pyjson.h).  inventory_sha256 is
 * SHA-256 over one json.dumps(record, sort_keys=True) line per tensor,
 * sorted by name: {kind "tensor", name, shape, type, type_id, offset,
 * nbytes, sha256}.
 */
#ifndef MOEPACK_EPMANIFEST_H
#define MOEPACK_EPMANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#include "pack/digest.h"
#include "writer/expertpack/hash.h"
#include "writer/expertpack/plan.h"

/* Timestamps as datetime.now(timezone.utc).isoformat() writes them. */
#define MP_EPW_TIME_LEN 40

struct mp_epw_manifest_in {
	const struct mp_epw_plan *plan;
	const struct mp_epw_digests *d;
	const char *pack_path;   /* absolute, resolved */
	const char *source_path; /* absolute, resolved */
	const char *model_ref, *command;
	char index_sha256[MP_SHA256_HEX];
	char pack_sha256[MP_SHA256_HEX]; /* "": no pack_sha256 key (sparse) */
	char inventory_sha256[MP_SHA256_HEX];
	char tool_sha256[MP_SHA256_HEX];
	char created_at[MP_EPW_TIME_LEN], started_at[MP_EPW_TIME_LEN];
	double elapsed_s;
};

/* The manifest's text, malloc'd, *len its length.  NULL: out of memory, or
 * a path that is not UTF-8 (which the JSON cannot carry). */
char *mp_epw_manifest_text(const struct mp_epw_manifest_in *in, size_t *len);

/* inventory_sha256 of the plan's tensors (their sha256 filled). */
enum mp_err mp_epw_inventory_sha256(const struct mp_epw_plan *plan, char out[MP_SHA256_HEX],
				    struct mp_error *err);

/* The current time in UTC as isoformat() writes it, into buf. */
void mp_epw_now(char buf[MP_EPW_TIME_LEN]);

/* SHA-256 of /proc/self/exe, for transform.tool_sha256 ("" if unreadable). */
void mp_epw_tool_sha256(char out[MP_SHA256_HEX]);

#endif
