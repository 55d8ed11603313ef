/*
 * manifestwrite.h - the one manifest writer of `moepack mkdemo` (demo.h)
 * and `moepack build` (build.h).
 *
 * It builds the parts both manifests share, each in the key order mkdemo
 * writes them (mkdemo dumps keys in insertion order, build sorts them, so
 * one order serves both), and leaves the keys only one writer records to
 * that writer: a caller adds its own with mp_mw_put() to the objects
 * returned here.  It also gives the SHA-256 of a value's canonical JSON
 * (source.inventory_sha256 is one), and the final dump of the text, which
 * both writers write through the temporaries of base/outfile.h
 * (mp_output_tmp_*: opened without following links, synced, renamed into
 * place).
 *
 * Builders take `int *bad` and set it on any failure (out of memory, a
 * string jansson refuses); a NULL object or value is then tolerated all the
 * way up, so a caller checks *bad once at the end.
 */
#ifndef MOEPACK_MANIFESTWRITE_H
#define MOEPACK_MANIFESTWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "pack/kimi/format.h"
#include "base/errors.h"
#include "pack/digest.h"
#include "writer/kimi/layout.h"

/* obj[key] = val (stolen, even on failure). */
void mp_mw_put(json_t *obj, const char *key, json_t *val, int *bad);
/* arr += val (stolen, even on failure). */
void mp_mw_append(json_t *arr, json_t *val, int *bad);
json_t *mp_mw_u64(uint64_t v);

/* SHA-256 in hex of v's canonical text, Python's json.dumps(v,
 * sort_keys=True, separators=(",", ":"), ensure_ascii=False) as the
 * reference takes it (base/pyjson.h, mp_pyjson_canonical()); -1 when out
 * of memory. */
int mp_mw_canonical_sha256(const json_t *v, char hex[MP_SHA256_HEX]);

/* hard_constraints: top_k fixed at MP_TOP_K, no pruning, no requantization. */
json_t *mp_mw_hard_constraints(int *bad);
/* [MP_ACTIVE_FIRST .. MP_ACTIVE_LAST] */
json_t *mp_mw_layer_ids(int *bad);

/* model: num_hidden_layers, num_experts, num_experts_per_token,
 * active_moe_layer_ids, config_sha256. */
json_t *mp_mw_model(uint64_t num_hidden_layers, uint64_t num_experts,
		    uint64_t experts_per_token, const char *config_sha256, int *bad);

/*
 * expert_pack as l lays it out: path (null: mp_mw_text() fills it), size,
 * physical_role_order, roles (dtype, dtype_id, expert_bytes, logical_shape
 * of each), object_bytes, data_start, alignment, index_sha256.
 */
json_t *mp_mw_expert_pack(const struct mp_layout *l, const char *index_sha256, int *bad);

/* The checkpoint summary an inventory starts with. */
struct mp_mw_summary {
	const char *architecture;
	uint64_t shard_count;
	uint64_t tensor_count;
	uint64_t total_bytes;
};

/* The inventory {summary, shards, tensors} (arrays stolen): what
 * source.inventory_sha256 covers.  No full source hashes are recorded. */
json_t *mp_mw_inventory(const struct mp_mw_summary *s, json_t *shards, json_t *tensors,
			int *bad);

/*
 * The manifest's root: format, complete, hard_constraints, model,
 * expert_pack, source (model and pack stolen; source a copy of the
 * inventory plus inventory_sha256).
 */
json_t *mp_mw_root(json_t *model, json_t *pack, const json_t *inventory,
		   const char *inventory_sha256, int *bad);

/*
 * The manifest's text, two-space indented and ending in a newline, with
 * expert_pack.path set to the bytes of pack_path (which need not be UTF-8),
 * keys sorted or in insertion order.  malloc'd; NULL when out of memory.
 */
char *mp_mw_text(json_t *root, const char *pack_path, bool sort_keys);

#endif
