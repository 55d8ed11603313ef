/*
 * manifestwrite.c - the manifest writer of mkdemo and build
 * (manifestwrite.h).
 */
#include "config.h"

#include "writer/kimi/manifestwrite.h"

#include <stdlib.h>
#include <string.h>

#include "base/jsonstr.h"
#include "base/pyjson.h"
#include "base/quant.h"
#include "pack/pack.h"

void mp_mw_put(json_t *obj, const char *key, json_t *val, int *bad)
{
	if (!obj || !val || json_object_set_new(obj, key, val) != 0)
		*bad = 1;
}

void mp_mw_append(json_t *arr, json_t *val, int *bad)
{
	if (!arr || !val || json_array_append_new(arr, val) != 0)
		*bad = 1;
}

json_t *mp_mw_u64(uint64_t v) { return json_integer((json_int_t)v); }

/* ---- canonical JSON ------------------------------------------------------ */

int mp_mw_canonical_sha256(const json_t *v, char hex[MP_SHA256_HEX])
{
	char *text = mp_pyjson_canonical(v);
	unsigned char d[MP_SHA256_LEN];

	if (!text)
		return -1;
	/* no NUL inside: canonical JSON escapes it as \u0000 */
	mp_sha256_buf(text, strlen(text), d);
	mp_sha256_hex(d, hex);
	free(text);
	return 0;
}

/* ---- the shared parts ---------------------------------------------------- */

json_t *mp_mw_hard_constraints(int *bad)
{
	json_t *hc = json_object();

	mp_mw_put(hc, "all_selected_experts_must_execute", json_true(), bad);
	mp_mw_put(hc, "expert_pruning_allowed", json_false(), bad);
	mp_mw_put(hc, "requantization_allowed", json_false(), bad);
	mp_mw_put(hc, "top_k", json_integer(MP_TOP_K), bad);
	mp_mw_put(hc, "top_k_is_immutable", json_true(), bad);
	return hc;
}

json_t *mp_mw_layer_ids(int *bad)
{
	json_t *ids = json_array();

	for (int l = MP_ACTIVE_FIRST; l <= MP_ACTIVE_LAST; l++)
		mp_mw_append(ids, json_integer(l), bad);
	return ids;
}

json_t *mp_mw_model(uint64_t num_hidden_layers, uint64_t num_experts,
		    uint64_t experts_per_token, const char *config_sha256, int *bad)
{
	json_t *model = json_object();

	mp_mw_put(model, "num_hidden_layers", mp_mw_u64(num_hidden_layers), bad);
	mp_mw_put(model, "num_experts", mp_mw_u64(num_experts), bad);
	mp_mw_put(model, "num_experts_per_token", mp_mw_u64(experts_per_token), bad);
	mp_mw_put(model, "active_moe_layer_ids", mp_mw_layer_ids(bad), bad);
	mp_mw_put(model, "config_sha256", json_string(config_sha256), bad);
	return model;
}

static json_t *role_json(const struct mp_layout *l, int r, int *bad)
{
	const struct mp_quant_type *t = mp_quant_by_id(mp_role_dtype[r]);
	json_t *role = json_object(), *shape = json_array();

	mp_mw_append(shape, mp_mw_u64(l->role_shape[r][0]), bad);
	mp_mw_append(shape, mp_mw_u64(l->role_shape[r][1]), bad);
	mp_mw_put(role, "dtype", json_string(t->name), bad);
	mp_mw_put(role, "dtype_id", json_integer(t->id), bad);
	mp_mw_put(role, "expert_bytes", mp_mw_u64(l->role_bytes[r]), bad);
	mp_mw_put(role, "logical_shape", shape, bad);
	return role;
}

json_t *mp_mw_expert_pack(const struct mp_layout *l, const char *index_sha256, int *bad)
{
	json_t *pack = json_object(), *order = json_array(), *roles = json_object();

	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const char *name = mp_role_name((enum mp_role)r);

		mp_mw_append(order, json_string(name), bad);
		mp_mw_put(roles, name, role_json(l, r, bad), bad);
	}
	/* The path itself goes in last, see mp_mw_text(). */
	mp_mw_put(pack, "path", json_null(), bad);
	mp_mw_put(pack, "size", mp_mw_u64(l->size), bad);
	mp_mw_put(pack, "physical_role_order", order, bad);
	mp_mw_put(pack, "roles", roles, bad);
	mp_mw_put(pack, "object_bytes", mp_mw_u64(l->object_bytes), bad);
	mp_mw_put(pack, "data_start", mp_mw_u64(l->data_start), bad);
	mp_mw_put(pack, "alignment", mp_mw_u64(l->alignment), bad);
	mp_mw_put(pack, "index_sha256", json_string(index_sha256), bad);
	return pack;
}

json_t *mp_mw_inventory(const struct mp_mw_summary *s, json_t *shards, json_t *tensors,
			int *bad)
{
	json_t *inv = json_object(), *summary = json_object();

	mp_mw_put(summary, "architecture", json_string(s->architecture), bad);
	mp_mw_put(summary, "full_source_hashes", json_false(), bad);
	mp_mw_put(summary, "shard_count", mp_mw_u64(s->shard_count), bad);
	mp_mw_put(summary, "tensor_count", mp_mw_u64(s->tensor_count), bad);
	mp_mw_put(summary, "total_bytes", mp_mw_u64(s->total_bytes), bad);
	mp_mw_put(inv, "summary", summary, bad);
	mp_mw_put(inv, "shards", shards, bad);
	mp_mw_put(inv, "tensors", tensors, bad);
	return inv;
}

json_t *mp_mw_root(json_t *model, json_t *pack, const json_t *inventory,
		   const char *inventory_sha256, int *bad)
{
	json_t *root = json_object();
	json_t *source = inventory ? json_deep_copy(inventory) : NULL;

	mp_mw_put(root, "format", json_string(MP_FORMAT), bad);
	mp_mw_put(root, "complete", json_true(), bad);
	mp_mw_put(root, "hard_constraints", mp_mw_hard_constraints(bad), bad);
	mp_mw_put(root, "model", model, bad);
	mp_mw_put(root, "expert_pack", pack, bad);
	mp_mw_put(source, "inventory_sha256", json_string(inventory_sha256), bad);
	mp_mw_put(root, "source", source, bad);
	return root;
}

/* ---- the text ----------------------------------------------- */

char *mp_mw_text(json_t *root, const char *pack_path, bool sort_keys)
{
	/* The path may not be UTF-8, which jansson cannot carry. */
	return mp_json_dump_with_path(root, json_object_get(root, "expert_pack"), "path",
				      pack_path, JSON_INDENT(2) | (sort_keys ? JSON_SORT_KEYS
									   : JSON_PRESERVE_ORDER));
}
