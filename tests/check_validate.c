/*
 * check_validate.c - mp_pack_open() against every check of the validator,
 * in the order the validator promises (moepack-pack(5), "Validator:
 * checks, order, error codes").
 *
 * Each rejection test starts from a valid demo pack, injects one fault (or,
 * in the "order" tests, two faults of which the earlier check must win),
 * repairs the digests and sizes the fault would otherwise also break, and
 * asserts the exact error code and that the message names the field, index
 * or path at fault.  The acceptance tests check what a valid pack gives
 * back: offsets equal to the index entries, warnings, flags.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "fixture.h"
#include "base/jsonstr.h"
#include "pack/kimi/index.h"
#include "pack/kimi/manifest.h"
#include "pack/manifestpath.h"
#include "pack/pack.h"

/* The demo pack most tests start from: 92 layers x 2 experts, alignment
 * 256, payload left as a hole (its bytes do not matter to these checks). */
static const struct fx_pack_opts small_pack = {.sparse = true};

#define EXPERTS 2
#define COUNT (92 * EXPERTS * 3) /* index entries */
#define INDEX_END (MP_HEADER_SIZE + COUNT * MP_ENTRY_SIZE)

/* A valid digest that is no pack's: SHA-256("abc"). */
#define SHA256_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

#define EXPECT_OPEN(f, opts, code, ...)                                      \
	do {                                                                 \
		struct mp_error e_;                                          \
		fx_open((f), (opts), &e_);                                   \
		fx_assert_err(&e_, (code), __VA_ARGS__);                     \
	} while (0)

/* "index N" as the validator's messages spell it. */
static const char *index_text(uint64_t i, char buf[32])
{
	snprintf(buf, 32, "index %" PRIu64, i);
	return buf;
}

/* model.active_moe_layer_ids := [first, ..., last] */
static void set_layers(const struct fx *f, int first, int last)
{
	json_t *a = json_array();

	for (int l = first; l <= last; l++)
		json_array_append_new(a, json_integer(l));
	fx_manifest_set(f, "model.active_moe_layer_ids", a);
}

/* ====================================================================== */
/* Manifest checks, table driven: one row per rejection.                  */


struct edit {
	const char *path;
	const char *json;   /* new value as JSON text; NULL: remove, or add delta */
	json_int_t delta;   /* with json NULL and delta != 0: integer += delta */
};

struct manifest_case {
	const char *label;
	struct edit edits[3];
	enum mp_err code;
	const char *needles[3];
};

/* One edit of the manifest: set a value (JSON text), delete a key, add to
 * an integer. */
#define SET(path, json) {(path), (json), 0}
#define DEL(path) {(path), NULL, 0}
#define ADD(path, delta) {(path), NULL, (delta)}

#define HEX_63 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"
#define UPPER_HEX "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"

static const struct manifest_case manifest_cases[] = {
	/* 1. complete */
	{"complete missing", {DEL("complete")}, MP_E_MANIFEST_MISSING, {"complete"}},
	{"complete false", {SET("complete", "false")}, MP_E_INCOMPLETE, {"complete"}},
	{"complete as 1", {SET("complete", "1")}, MP_E_MANIFEST_TYPE, {"complete"}},
	{"complete as string", {SET("complete", "\"true\"")},
	 MP_E_MANIFEST_TYPE, {"complete"}},
	{"complete null", {SET("complete", "null")}, MP_E_MANIFEST_TYPE, {"complete"}},
	/* 2. format */
	{"format missing", {DEL("format")}, MP_E_MANIFEST_MISSING, {"format"}},
	{"format other", {SET("format", "\"SGLANG-KIMI-GGMLMOEPACK-ADAPTER-v2\"")},
	 MP_E_FORMAT, {"format", "ADAPTER-v2"}},
	{"format trailing space",
	 {SET("format", "\"SGLANG-KIMI-GGMLMOEPACK-ADAPTER-v1 \"")},
	 MP_E_FORMAT, {"format"}},
	{"format as integer", {SET("format", "1")}, MP_E_MANIFEST_TYPE, {"format"}},
	/* 3. hard_constraints */
	{"hard_constraints missing", {DEL("hard_constraints")},
	 MP_E_MANIFEST_MISSING, {"hard_constraints"}},
	{"hard_constraints array", {SET("hard_constraints", "[]")},
	 MP_E_MANIFEST_TYPE, {"hard_constraints"}},
	{"hard_constraints extra key", {SET("hard_constraints.allow_offload", "false")},
	 MP_E_HARD_CONSTRAINTS, {"allow_offload"}},
	{"hard_constraints missing key", {DEL("hard_constraints.top_k_is_immutable")},
	 MP_E_HARD_CONSTRAINTS, {"top_k_is_immutable"}},
	{"hard_constraints missing first key",
	 {DEL("hard_constraints.all_selected_experts_must_execute")},
	 MP_E_HARD_CONSTRAINTS, {"all_selected_experts_must_execute"}},
	{"hard_constraints top_k 8", {SET("hard_constraints.top_k", "8")},
	 MP_E_HARD_CONSTRAINTS, {"top_k"}},
	{"hard_constraints top_k string", {SET("hard_constraints.top_k", "\"16\"")},
	 MP_E_HARD_CONSTRAINTS, {"top_k"}},
	{"hard_constraints top_k real", {SET("hard_constraints.top_k", "16.0")},
	 MP_E_HARD_CONSTRAINTS, {"top_k"}},
	{"hard_constraints top_k true", {SET("hard_constraints.top_k", "true")},
	 MP_E_HARD_CONSTRAINTS, {"top_k"}},
	{"hard_constraints requantization allowed",
	 {SET("hard_constraints.requantization_allowed", "true")},
	 MP_E_HARD_CONSTRAINTS, {"requantization_allowed"}},
	{"hard_constraints false as 0",
	 {SET("hard_constraints.expert_pruning_allowed", "0")},
	 MP_E_HARD_CONSTRAINTS, {"expert_pruning_allowed"}},
	{"hard_constraints true as 1",
	 {SET("hard_constraints.all_selected_experts_must_execute", "1")},
	 MP_E_HARD_CONSTRAINTS, {"all_selected_experts_must_execute"}},
	{"hard_constraints null", {SET("hard_constraints.top_k_is_immutable", "null")},
	 MP_E_HARD_CONSTRAINTS, {"top_k_is_immutable"}},
	/* 4. model */
	{"model missing", {DEL("model")}, MP_E_MANIFEST_MISSING, {"model"}},
	{"model array", {SET("model", "[1]")}, MP_E_MANIFEST_TYPE, {"model"}},
	{"num_hidden_layers missing", {DEL("model.num_hidden_layers")},
	 MP_E_MANIFEST_MISSING, {"model.num_hidden_layers"}},
	{"num_hidden_layers string", {SET("model.num_hidden_layers", "\"93\"")},
	 MP_E_MANIFEST_TYPE, {"model.num_hidden_layers"}},
	{"num_hidden_layers real", {SET("model.num_hidden_layers", "93.0")},
	 MP_E_MANIFEST_TYPE, {"model.num_hidden_layers"}},
	{"num_hidden_layers boolean", {SET("model.num_hidden_layers", "true")},
	 MP_E_MANIFEST_TYPE, {"model.num_hidden_layers"}},
	{"num_hidden_layers negative", {SET("model.num_hidden_layers", "-93")},
	 MP_E_MANIFEST_VALUE, {"model.num_hidden_layers"}},
	{"num_hidden_layers 0", {SET("model.num_hidden_layers", "0")},
	 MP_E_MANIFEST_VALUE, {"model.num_hidden_layers"}},
	{"num_experts missing", {DEL("model.num_experts")},
	 MP_E_MANIFEST_MISSING, {"model.num_experts"}},
	{"num_experts string", {SET("model.num_experts", "\"2\"")},
	 MP_E_MANIFEST_TYPE, {"model.num_experts"}},
	{"num_experts real", {SET("model.num_experts", "2.0")},
	 MP_E_MANIFEST_TYPE, {"model.num_experts"}},
	{"num_experts boolean", {SET("model.num_experts", "true")},
	 MP_E_MANIFEST_TYPE, {"model.num_experts"}},
	{"num_experts negative", {SET("model.num_experts", "-2")},
	 MP_E_MANIFEST_VALUE, {"model.num_experts"}},
	{"num_experts 0", {SET("model.num_experts", "0")},
	 MP_E_MANIFEST_VALUE, {"model.num_experts"}},
	{"num_experts 65537", {SET("model.num_experts", "65537")},
	 MP_E_MANIFEST_VALUE, {"model.num_experts"}},
	{"num_experts huge", {SET("model.num_experts", "9223372036854775807")},
	 MP_E_MANIFEST_VALUE, {"model.num_experts"}},
	/* the manifest alone is fine; the header's index_count disagrees */
	{"num_experts 65536 is in range", {SET("model.num_experts", "65536")},
	 MP_E_INDEX_COUNT, {"index_count"}},
	{"num_experts 3", {SET("model.num_experts", "3")},
	 MP_E_INDEX_COUNT, {"index_count"}},
	{"top-k 8", {SET("model.num_experts_per_token", "8")},
	 MP_E_TOP_K, {"model.num_experts_per_token"}},
	{"top-k 17", {SET("model.num_experts_per_token", "17")},
	 MP_E_TOP_K, {"model.num_experts_per_token"}},
	{"top-k missing", {DEL("model.num_experts_per_token")},
	 MP_E_MANIFEST_MISSING, {"model.num_experts_per_token"}},
	{"top-k string", {SET("model.num_experts_per_token", "\"16\"")},
	 MP_E_MANIFEST_TYPE, {"model.num_experts_per_token"}},
	{"top-k real", {SET("model.num_experts_per_token", "16.0")},
	 MP_E_MANIFEST_TYPE, {"model.num_experts_per_token"}},
	{"top-k negative", {SET("model.num_experts_per_token", "-16")},
	 MP_E_MANIFEST_VALUE, {"model.num_experts_per_token"}},
	/* 5. config_sha256, when present without --config, is a string */
	{"config_sha256 integer", {SET("model.config_sha256", "5")},
	 MP_E_MANIFEST_TYPE, {"model.config_sha256"}},
	/* 6. active_moe_layer_ids (lists built at run time are tests below) */
	{"active layers missing", {DEL("model.active_moe_layer_ids")},
	 MP_E_MANIFEST_MISSING, {"model.active_moe_layer_ids"}},
	{"active layers object", {SET("model.active_moe_layer_ids", "{}")},
	 MP_E_MANIFEST_TYPE, {"model.active_moe_layer_ids"}},
	{"active layers empty", {SET("model.active_moe_layer_ids", "[]")},
	 MP_E_ACTIVE_LAYERS, {"model.active_moe_layer_ids"}},
	{"active layer as string", {SET("model.active_moe_layer_ids.4", "\"5\"")},
	 MP_E_MANIFEST_TYPE, {"model.active_moe_layer_ids"}},
	{"active layer as real", {SET("model.active_moe_layer_ids.4", "5.0")},
	 MP_E_MANIFEST_TYPE, {"model.active_moe_layer_ids"}},
	{"active layer as boolean", {SET("model.active_moe_layer_ids.0", "true")},
	 MP_E_MANIFEST_TYPE, {"model.active_moe_layer_ids"}},
	{"active layer null", {SET("model.active_moe_layer_ids.91", "null")},
	 MP_E_MANIFEST_TYPE, {"model.active_moe_layer_ids"}},
	{"active layers swapped",
	 {SET("model.active_moe_layer_ids.49", "51"),
	  SET("model.active_moe_layer_ids.50", "50")},
	 MP_E_ACTIVE_LAYERS, {"model.active_moe_layer_ids", "49"}},
	{"active layers not below num_hidden_layers",
	 {SET("model.num_hidden_layers", "92")},
	 MP_E_ACTIVE_LAYERS, {"92"}},
	/* 7. expert_pack and its path */
	{"expert_pack missing", {DEL("expert_pack")},
	 MP_E_MANIFEST_MISSING, {"expert_pack"}},
	{"expert_pack array", {SET("expert_pack", "[]")},
	 MP_E_MANIFEST_TYPE, {"expert_pack"}},
	{"path missing", {DEL("expert_pack.path")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.path"}},
	{"path integer", {SET("expert_pack.path", "5")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.path"}},
	{"path does not exist", {SET("expert_pack.path", "\"/nonexistent/demo.pack\"")},
	 MP_E_PACK_PATH, {"expert_pack.path", "/nonexistent/demo.pack"}},
	{"path empty", {SET("expert_pack.path", "\"\"")},
	 MP_E_PACK_PATH, {"expert_pack.path"}},
	{"path is a directory", {SET("expert_pack.path", "\"/\"")},
	 MP_E_PACK_PATH, {"expert_pack.path"}},
	/* 8. size */
	{"size missing", {DEL("expert_pack.size")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.size"}},
	{"size string", {SET("expert_pack.size", "\"13178880\"")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.size"}},
	{"size real", {SET("expert_pack.size", "1.5e7")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.size"}},
	{"size negative", {SET("expert_pack.size", "-1")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.size"}},
	{"size one more", {ADD("expert_pack.size", 1)},
	 MP_E_PACK_SIZE, {"expert_pack.size"}},
	{"size one less", {ADD("expert_pack.size", -1)},
	 MP_E_PACK_SIZE, {"expert_pack.size"}},
	/* 9. physical_role_order */
	{"role order missing", {DEL("expert_pack.physical_role_order")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.physical_role_order"}},
	{"role order permuted",
	 {SET("expert_pack.physical_role_order", "[\"gate\",\"up\",\"down\"]")},
	 MP_E_ROLE_ORDER, {"physical role order"}},
	{"role order reversed",
	 {SET("expert_pack.physical_role_order", "[\"down\",\"gate\",\"up\"]")},
	 MP_E_ROLE_ORDER, {"physical role order"}},
	{"role order too long",
	 {SET("expert_pack.physical_role_order", "[\"up\",\"gate\",\"down\",\"up\"]")},
	 MP_E_ROLE_ORDER, {"physical role order"}},
	{"role order too short",
	 {SET("expert_pack.physical_role_order", "[\"up\",\"gate\"]")},
	 MP_E_ROLE_ORDER, {"physical role order"}},
	{"role order upper case",
	 {SET("expert_pack.physical_role_order", "[\"UP\",\"GATE\",\"DOWN\"]")},
	 MP_E_ROLE_ORDER, {"physical role order"}},
	/* 10. dtypes */
	{"up dtype Q4_K",
	 {SET("expert_pack.roles.up.dtype", "\"Q4_K\""),
	  SET("expert_pack.roles.up.dtype_id", "12")},
	 MP_E_ROLE_DTYPE, {"up quant type is unsupported", "Q4_K"}},
	{"gate dtype Q3_K",
	 {SET("expert_pack.roles.gate.dtype", "\"Q3_K\""),
	  SET("expert_pack.roles.gate.dtype_id", "11")},
	 MP_E_ROLE_DTYPE, {"gate quant type is unsupported", "Q3_K"}},
	{"down dtype Q2_K",
	 {SET("expert_pack.roles.down.dtype", "\"Q2_K\""),
	  SET("expert_pack.roles.down.dtype_id", "10")},
	 MP_E_ROLE_DTYPE, {"down quant type is unsupported", "Q2_K"}},
	{"up dtype_id disagrees with its name",
	 {SET("expert_pack.roles.up.dtype_id", "11")},
	 MP_E_ROLE_DTYPE, {"up quant type is unsupported"}},
	{"down dtype name disagrees with its id",
	 {SET("expert_pack.roles.down.dtype", "\"Q2_K\"")},
	 MP_E_ROLE_DTYPE, {"down quant type is unsupported"}},
	{"up dtype lower case", {SET("expert_pack.roles.up.dtype", "\"q2_k\"")},
	 MP_E_ROLE_DTYPE, {"up quant type is unsupported"}},
	{"gate dtype unknown",
	 {SET("expert_pack.roles.gate.dtype", "\"F16\""),
	  SET("expert_pack.roles.gate.dtype_id", "1")},
	 MP_E_ROLE_DTYPE, {"gate quant type is unsupported"}},
	{"up dtype_id string", {SET("expert_pack.roles.up.dtype_id", "\"10\"")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.roles.up.dtype_id"}},
	{"up dtype_id real", {SET("expert_pack.roles.up.dtype_id", "10.0")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.roles.up.dtype_id"}},
	{"up dtype integer", {SET("expert_pack.roles.up.dtype", "10")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.roles.up.dtype"}},
	{"roles missing", {DEL("expert_pack.roles")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.roles"}},
	{"gate role missing", {DEL("expert_pack.roles.gate")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.roles.gate"}},
	{"down role not an object", {SET("expert_pack.roles.down", "\"Q3_K\"")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.roles.down"}},
	{"down dtype missing", {DEL("expert_pack.roles.down.dtype")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.roles.down.dtype"}},
	{"up dtype_id missing", {DEL("expert_pack.roles.up.dtype_id")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.roles.up.dtype_id"}},
	/* 11. sizes and shapes */
	{"up shape larger than expert_bytes",
	 {SET("expert_pack.roles.up.logical_shape", "[256, 512]")},
	 MP_E_ROLE_SHAPE, {"expert_pack.roles.up"}},
	{"down row (first number) not whole blocks",
	 {SET("expert_pack.roles.down.logical_shape", "[128, 512]")},
	 MP_E_ROLE_SHAPE, {"expert_pack.roles.down"}},
	{"gate shape product wraps past 2^64",
	 {SET("expert_pack.roles.gate.logical_shape", "[281474976710657, 256, 256]")},
	 MP_E_ROLE_SHAPE, {"expert_pack.roles.gate"}},
	{"gate shape of whole blocks whose product wraps past 2^64",
	 {SET("expert_pack.roles.gate.logical_shape", "[281474976710656, 256, 256]")},
	 MP_E_ROLE_SHAPE,
	 {"expert_pack.roles.gate.expert_bytes is ", "the Q2_K size of "
	  "expert_pack.roles.gate.logical_shape does not fit in 64 bits"}},
	{"up expert_bytes off by 256 (object_bytes too)",
	 {ADD("expert_pack.roles.up.expert_bytes", 256),
	  ADD("expert_pack.object_bytes", 256)},
	 MP_E_ROLE_SHAPE, {"expert_pack.roles.up.expert_bytes"}},
	{"down expert_bytes off by one", {ADD("expert_pack.roles.down.expert_bytes", 1)},
	 MP_E_ROLE_SHAPE,
	 {"expert_pack.roles.down.expert_bytes is ",
	  " Q3_K weights of expert_pack.roles.down.logical_shape take "}},
	{"up expert_bytes 0", {SET("expert_pack.roles.up.expert_bytes", "0")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.roles.up.expert_bytes"}},
	{"up expert_bytes negative", {SET("expert_pack.roles.up.expert_bytes", "-21504")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.roles.up.expert_bytes"}},
	{"gate expert_bytes string",
	 {SET("expert_pack.roles.gate.expert_bytes", "\"21504\"")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.roles.gate.expert_bytes"}},
	{"down expert_bytes missing", {DEL("expert_pack.roles.down.expert_bytes")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.roles.down.expert_bytes"}},
	{"up shape missing", {DEL("expert_pack.roles.up.logical_shape")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.roles.up.logical_shape"}},
	{"up shape not an array",
	 {SET("expert_pack.roles.up.logical_shape", "\"256x256\"")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.roles.up.logical_shape"}},
	{"up shape element 0", {SET("expert_pack.roles.up.logical_shape", "[0, 256]")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.roles.up.logical_shape"}},
	{"up shape element negative",
	 {SET("expert_pack.roles.up.logical_shape", "[-256, 256]")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.roles.up.logical_shape"}},
	{"gate shape element string",
	 {SET("expert_pack.roles.gate.logical_shape", "[\"256\", 256]")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.roles.gate.logical_shape"}},
	{"gate shape element real",
	 {SET("expert_pack.roles.gate.logical_shape", "[256.0, 256]")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.roles.gate.logical_shape"}},
	{"down shape empty", {SET("expert_pack.roles.down.logical_shape", "[]")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.roles.down.logical_shape"}},
	{"down shape 9 dimensions",
	 {SET("expert_pack.roles.down.logical_shape", "[1, 1, 1, 1, 1, 1, 1, 256, 256]")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.roles.down.logical_shape"}},
	/* 12. object_bytes */
	{"object_bytes off by one", {ADD("expert_pack.object_bytes", 1)},
	 MP_E_OBJECT_BYTES, {"expert_pack.object_bytes"}},
	{"object_bytes missing", {DEL("expert_pack.object_bytes")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.object_bytes"}},
	{"object_bytes negative", {SET("expert_pack.object_bytes", "-71168")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.object_bytes"}},
	{"object_bytes string", {SET("expert_pack.object_bytes", "\"71168\"")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.object_bytes"}},
	/* 13. alignment */
	{"alignment 0", {SET("expert_pack.alignment", "0")},
	 MP_E_ALIGNMENT, {"expert_pack.alignment"}},
	{"alignment 3", {SET("expert_pack.alignment", "3")},
	 MP_E_ALIGNMENT, {"expert_pack.alignment"}},
	{"alignment -4096", {SET("expert_pack.alignment", "-4096")},
	 MP_E_ALIGNMENT, {"expert_pack.alignment"}},
	{"alignment 384", {SET("expert_pack.alignment", "384")},
	 MP_E_ALIGNMENT, {"expert_pack.alignment"}},
	{"alignment string", {SET("expert_pack.alignment", "\"256\"")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.alignment"}},
	{"alignment real", {SET("expert_pack.alignment", "256.0")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.alignment"}},
	{"alignment missing", {DEL("expert_pack.alignment")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.alignment"}},
	/* the demo's gate roles start 21504 bytes into an object: not 2048-aligned */
	{"alignment 2048 on a 256-aligned pack", {SET("expert_pack.alignment", "2048")},
	 MP_E_ENTRY_ALIGNMENT, {"index 1"}},
	/* 14. data_start, digests */
	{"data_start negative", {SET("expert_pack.data_start", "-1")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.data_start"}},
	{"data_start string", {SET("expert_pack.data_start", "\"83968\"")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.data_start"}},
	{"data_start missing", {DEL("expert_pack.data_start")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.data_start"}},
	{"data_start differs from the header", {ADD("expert_pack.data_start", 256)},
	 MP_E_DATA_START, {"data_start"}},
	{"index_sha256 upper case",
	 {SET("expert_pack.index_sha256", "\"" UPPER_HEX "\"")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.index_sha256"}},
	{"index_sha256 63 digits",
	 {SET("expert_pack.index_sha256", "\"" HEX_63 "\"")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.index_sha256"}},
	{"index_sha256 65 digits",
	 {SET("expert_pack.index_sha256", "\"" HEX_63 "50\"")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.index_sha256"}},
	{"index_sha256 not hex",
	 {SET("expert_pack.index_sha256", "\"g" HEX_63 "\"")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.index_sha256"}},
	{"index_sha256 missing", {DEL("expert_pack.index_sha256")},
	 MP_E_MANIFEST_MISSING, {"expert_pack.index_sha256"}},
	{"index_sha256 integer", {SET("expert_pack.index_sha256", "5")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.index_sha256"}},
	{"sha256 not hex", {SET("expert_pack.sha256", "\"xyz\"")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.sha256"}},
	{"sha256 upper case", {SET("expert_pack.sha256", "\"" UPPER_HEX "\"")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.sha256"}},
	{"sha256 integer", {SET("expert_pack.sha256", "5")},
	 MP_E_MANIFEST_TYPE, {"expert_pack.sha256"}},
	/* Two faults: the one checked first wins. */
	{"order: complete before format",
	 {SET("complete", "false"), SET("format", "\"other\"")},
	 MP_E_INCOMPLETE, {"complete"}},
	{"order: format before dtype",
	 {SET("format", "\"other\""), SET("expert_pack.roles.up.dtype", "\"Q4_K\"")},
	 MP_E_FORMAT, {"format"}},
	{"order: hard constraints before top-k",
	 {SET("hard_constraints.top_k", "8"), SET("model.num_experts_per_token", "8")},
	 MP_E_HARD_CONSTRAINTS, {"top_k"}},
	{"order: num_experts range before top-k type",
	 {SET("model.num_experts", "65537"),
	  SET("model.num_experts_per_token", "\"16\"")},
	 MP_E_MANIFEST_VALUE, {"model.num_experts"}},
	{"order: top-k before active layers",
	 {SET("model.num_experts_per_token", "8"),
	  SET("model.active_moe_layer_ids", "[]")},
	 MP_E_TOP_K, {"model.num_experts_per_token"}},
	{"order: active layers before path",
	 {SET("model.active_moe_layer_ids", "[]"),
	  SET("expert_pack.path", "\"/nonexistent\"")},
	 MP_E_ACTIVE_LAYERS, {"model.active_moe_layer_ids"}},
	{"order: path before size",
	 {SET("expert_pack.path", "\"/nonexistent\""), ADD("expert_pack.size", 1)},
	 MP_E_PACK_PATH, {"expert_pack.path"}},
	{"order: size before role order",
	 {ADD("expert_pack.size", 1), SET("expert_pack.physical_role_order", "[]")},
	 MP_E_PACK_SIZE, {"expert_pack.size"}},
	{"order: role order before dtypes",
	 {SET("expert_pack.physical_role_order", "[]"),
	  SET("expert_pack.roles.up.dtype", "\"Q4_K\"")},
	 MP_E_ROLE_ORDER, {"physical role order"}},
	{"order: up dtype before gate dtype",
	 {SET("expert_pack.roles.gate.dtype", "\"Q4_K\""),
	  SET("expert_pack.roles.up.dtype", "\"Q5_K\"")},
	 MP_E_ROLE_DTYPE, {"up quant type is unsupported", "Q5_K"}},
	{"order: every dtype before any size",
	 {SET("expert_pack.roles.up.expert_bytes", "0"),
	  SET("expert_pack.roles.down.dtype", "\"Q2_K\"")},
	 MP_E_ROLE_DTYPE, {"down quant type is unsupported"}},
	{"order: every dtype before any shape",
	 {DEL("expert_pack.roles.up.logical_shape"),
	  SET("expert_pack.roles.gate.dtype_id", "12")},
	 MP_E_ROLE_DTYPE, {"gate quant type is unsupported"}},
	{"order: shape before object_bytes",
	 {SET("expert_pack.roles.gate.logical_shape", "[256, 512]"),
	  SET("expert_pack.object_bytes", "1")},
	 MP_E_ROLE_SHAPE, {"expert_pack.roles.gate"}},
	{"order: object_bytes before alignment",
	 {SET("expert_pack.object_bytes", "1"), SET("expert_pack.alignment", "3")},
	 MP_E_OBJECT_BYTES, {"expert_pack.object_bytes"}},
	{"order: alignment before data_start",
	 {SET("expert_pack.alignment", "3"), SET("expert_pack.data_start", "-1")},
	 MP_E_ALIGNMENT, {"expert_pack.alignment"}},
	{"order: manifest data_start value before the header's",
	 {ADD("expert_pack.data_start", 256), SET("expert_pack.index_sha256", "\"x\"")},
	 MP_E_MANIFEST_VALUE, {"expert_pack.index_sha256"}},
	/* Keys the reference loader reads last, after the index: required. */
	{"config_sha256 missing", {DEL("model.config_sha256")},
	 MP_E_MANIFEST_MISSING, {"model.config_sha256"}},
	{"config_sha256 as integer", {SET("model.config_sha256", "1")},
	 MP_E_MANIFEST_TYPE, {"model.config_sha256"}},
	{"config_sha256 null", {SET("model.config_sha256", "null")},
	 MP_E_MANIFEST_TYPE, {"model.config_sha256"}},
	{"config_sha256 not hex", {SET("model.config_sha256", "\"" UPPER_HEX "\"")},
	 MP_E_MANIFEST_VALUE, {"model.config_sha256"}},
	{"source missing", {DEL("source")}, MP_E_MANIFEST_MISSING, {"source"}},
	{"source as array", {SET("source", "[]")}, MP_E_MANIFEST_TYPE, {"source"}},
	{"inventory_sha256 missing", {DEL("source.inventory_sha256")},
	 MP_E_MANIFEST_MISSING, {"source.inventory_sha256"}},
	{"inventory_sha256 as object", {SET("source.inventory_sha256", "{}")},
	 MP_E_MANIFEST_TYPE, {"source.inventory_sha256"}},
	{"inventory_sha256 63 digits", {SET("source.inventory_sha256", "\"" HEX_63 "\"")},
	 MP_E_MANIFEST_VALUE, {"source.inventory_sha256"}},
	{"order: index digest before config_sha256",
	 {DEL("model.config_sha256"), SET("expert_pack.index_sha256", "\"0000000000000000000000000000000000000000000000000000000000000000\"")},
	 MP_E_INDEX_DIGEST, {"expert_pack.index_sha256"}},
	{"order: config_sha256 before inventory_sha256",
	 {DEL("source.inventory_sha256"), SET("model.config_sha256", "7")},
	 MP_E_MANIFEST_TYPE, {"model.config_sha256"}},
	{"order: alignment before config_sha256",
	 {DEL("model.config_sha256"), SET("expert_pack.alignment", "3")},
	 MP_E_ALIGNMENT, {"expert_pack.alignment"}},
};

#define N_MANIFEST_CASES ((int)(sizeof manifest_cases / sizeof manifest_cases[0]))

static void apply_edit(json_t *root, const struct edit *e)
{
	json_error_t jerr;
	json_t *v, *old;

	if (e->json) {
		v = json_loads(e->json, JSON_DECODE_ANY, &jerr);
		ck_assert_msg(v != NULL, "bad JSON in the table: %s", e->json);
		fx_json_set(root, e->path, v);
	} else if (e->delta) {
		old = fx_json_get(root, e->path);
		ck_assert_msg(json_is_integer(old), "%s is not an integer", e->path);
		fx_json_set(root, e->path,
			    json_integer(json_integer_value(old) + e->delta));
	} else {
		fx_json_remove(root, e->path);
	}
}

/*
 * The rows run in batches, one forked test per batch: a row needs only a
 * fresh manifest, not a fresh pack, and sanitizer builds pay dearly per
 * fork.  A batch reports every failing row by its label, not just the first.
 */
#define CASES_PER_BATCH 16
#define N_BATCHES ((N_MANIFEST_CASES + CASES_PER_BATCH - 1) / CASES_PER_BATCH)

START_TEST(test_manifest_faults)
{
	char report[4096] = "", why[2 * MP_MSG_MAX];
	size_t used = 0;
	int failed = 0, first = _i * CASES_PER_BATCH, n = 0;
	struct fx f;
	json_t *pristine;

	fx_setup(&f, &small_pack);
	pristine = fx_manifest_load(&f);
	for (int i = first; i < first + CASES_PER_BATCH && i < N_MANIFEST_CASES; i++) {
		const struct manifest_case *c = &manifest_cases[i];
		const char *const needles[] = {c->needles[0], c->needles[1],
					       c->needles[2], NULL};
		json_t *root = json_deep_copy(pristine);
		struct mp_error err;

		for (int k = 0; k < 3 && c->edits[k].path; k++)
			apply_edit(root, &c->edits[k]);
		fx_manifest_save(&f, root);
		json_decref(root);
		fx_open(&f, NULL, &err);
		n++;
		if (!fx_err_matches(&err, c->code, needles, why, sizeof why)) {
			size_t room = sizeof report - used;
			int w = snprintf(report + used, room, "\n  [%d] %s: %s", i,
					 c->label, why);

			failed++;
			if (w > 0)
				used += (size_t)w < room ? (size_t)w : room - 1;
		}
	}
	json_decref(pristine);
	fx_cleanup(&f);
	ck_assert_msg(failed == 0, "%d of %d manifest cases failed:%s", failed, n,
		      report);
}
END_TEST

/* ---- active layer lists ------------------------------------------------ */

START_TEST(test_active_layers_1_to_91)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	set_layers(&f, 1, 91);
	EXPECT_OPEN(&f, NULL, MP_E_ACTIVE_LAYERS, "model.active_moe_layer_ids");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_active_layers_0_to_91)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	set_layers(&f, 0, 91);
	EXPECT_OPEN(&f, NULL, MP_E_ACTIVE_LAYERS, "model.active_moe_layer_ids", "0");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_active_layers_2_to_93)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_manifest_set_int(&f, "model.num_hidden_layers", 94); /* ids stay below it */
	set_layers(&f, 2, 93);
	EXPECT_OPEN(&f, NULL, MP_E_ACTIVE_LAYERS, "model.active_moe_layer_ids");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_active_layers_1_to_93)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_manifest_set_int(&f, "model.num_hidden_layers", 94);
	set_layers(&f, 1, 93);
	EXPECT_OPEN(&f, NULL, MP_E_ACTIVE_LAYERS, "model.active_moe_layer_ids");
	fx_cleanup(&f);
}
END_TEST

/* ---- caller expectations and --config ---------------------------------- */

START_TEST(test_expect_layers)
{
	struct fx f;
	struct mp_open_opts o = {.expect_layers = 92};

	fx_setup(&f, &small_pack);
	EXPECT_OPEN(&f, &o, MP_E_EXPECT_LAYERS, "model.num_hidden_layers", "92");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_expect_experts)
{
	struct fx f;
	struct mp_open_opts o = {.expect_layers = 93, .expect_experts = 384};

	fx_setup(&f, &small_pack);
	EXPECT_OPEN(&f, &o, MP_E_EXPECT_EXPERTS, "model.num_experts", "384");
	fx_cleanup(&f);
}
END_TEST

/*
 * Kimi K3 geometry, sparse: 896 experts with the runtime's shapes.  Only
 * the 38 MB index is written, so this stays quick.
 */
static const struct fx_pack_opts k3_pack = {
	.sparse = true, .experts = MP_K3_EXPERTS, .hidden = MP_K3_HIDDEN,
	.inter = MP_K3_INTER, .alignment = 4096};

START_TEST(test_k3_runtime_shapes)
{
	struct fx f;
	struct mp_open_opts k3 = {.expect_experts = MP_K3_EXPERTS};

	fx_setup(&f, &k3_pack);
	/* mkdemo's K3 geometry is the runtime's, row length first */
	EXPECT_OPEN(&f, &k3, MP_OK, "");
	ck_assert_int_eq(fx_manifest_get_int(&f, "expert_pack.roles.up.expert_bytes"),
			 3612672);
	ck_assert_int_eq(fx_manifest_get_int(&f, "expert_pack.roles.down.expert_bytes"),
			 4730880);

	/* the same bytes under the transposed (old, row-last) shape: the size
	 * still matches, the runtime would refuse it */
	fx_manifest_set_json(&f, "expert_pack.roles.gate.logical_shape", "[3072, 3584]");
	EXPECT_OPEN(&f, &k3, MP_E_RUNTIME_SHAPE, "expert_pack.roles.gate.logical_shape",
		    "[3072, 3584]", "needs [3584, 3072]");
	/* without the K3 expectation, any consistent shape is accepted */
	EXPECT_OPEN(&f, NULL, MP_OK, "");

	fx_manifest_set_json(&f, "expert_pack.roles.gate.logical_shape", "[3584, 3072]");
	fx_manifest_set_json(&f, "expert_pack.roles.down.logical_shape", "[3584, 3072]");
	EXPECT_OPEN(&f, &k3, MP_E_RUNTIME_SHAPE, "expert_pack.roles.down.logical_shape",
		    "[3584, 3072]", "needs [3072, 3584]");
	/* a third dimension is not the runtime's shape either */
	fx_manifest_set_json(&f, "expert_pack.roles.down.logical_shape", "[3072, 1792, 2]");
	EXPECT_OPEN(&f, &k3, MP_E_RUNTIME_SHAPE, "expert_pack.roles.down.logical_shape",
		    "[3072, 1792, 2]");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_k3_expected_small_geometry)
{
	struct fx f;
	struct fx_pack_opts o = {.sparse = true, .experts = MP_K3_EXPERTS};
	struct mp_open_opts k3 = {.expect_experts = MP_K3_EXPERTS};

	/* 896 experts but mkdemo's small default geometry (2048 x 256) */
	fx_setup(&f, &o);
	EXPECT_OPEN(&f, &k3, MP_E_RUNTIME_SHAPE, "expert_pack.roles.up.logical_shape",
		    "needs [3584, 3072]");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_expect_layers_before_experts)
{
	struct fx f;
	struct mp_open_opts o = {.expect_layers = 61, .expect_experts = 384};

	fx_setup(&f, &small_pack);
	EXPECT_OPEN(&f, &o, MP_E_EXPECT_LAYERS, "model.num_hidden_layers");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_expect_before_active_layers)
{
	struct fx f;
	struct mp_open_opts o = {.expect_experts = 3};

	fx_setup(&f, &small_pack);
	set_layers(&f, 0, 91);
	EXPECT_OPEN(&f, &o, MP_E_EXPECT_EXPERTS, "model.num_experts");
	fx_cleanup(&f);
}
END_TEST

/* A config file of our own and model.config_sha256 naming it. */
static void write_config(const struct fx *f, char *path, size_t len, const char *text,
			 bool record)
{
	char hex[MP_SHA256_HEX];

	fx_path(f, "config.json", path, len);
	fx_write_file(path, text, strlen(text));
	if (record) {
		fx_sha256_file(path, hex);
		fx_manifest_set_str(f, "model.config_sha256", hex);
	}
}

START_TEST(test_config_digest_mismatch)
{
	struct fx f;
	char cfg[PATH_MAX];
	struct mp_open_opts o = {.config_path = cfg};

	fx_setup(&f, &small_pack);
	write_config(&f, cfg, sizeof cfg, "{\"num_hidden_layers\": 93}\n", true);
	/* one byte changed after the digest was recorded */
	fx_write_file(cfg, "{\"num_hidden_layers\": 94}\n", 26);
	EXPECT_OPEN(&f, &o, MP_E_CONFIG_DIGEST, "model.config_sha256");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_config_digest_required)
{
	struct fx f;
	char cfg[PATH_MAX];
	struct mp_open_opts o = {.config_path = cfg};

	fx_setup(&f, &small_pack);
	write_config(&f, cfg, sizeof cfg, "{}\n", false);
	fx_manifest_remove(&f, "model.config_sha256");
	EXPECT_OPEN(&f, &o, MP_E_MANIFEST_MISSING, "model.config_sha256");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_config_unreadable)
{
	struct fx f;
	char cfg[PATH_MAX];
	struct mp_open_opts o = {.config_path = cfg};

	fx_setup(&f, &small_pack);
	fx_path(&f, "no-such-config.json", cfg, sizeof cfg);
	EXPECT_OPEN(&f, &o, MP_E_CONFIG_IO, cfg);
	/* a directory cannot be read as a file either */
	o.config_path = f.dir;
	EXPECT_OPEN(&f, &o, MP_E_CONFIG_IO, f.dir);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_config_before_active_layers)
{
	struct fx f;
	char cfg[PATH_MAX];
	struct mp_open_opts o = {.config_path = cfg};

	fx_setup(&f, &small_pack);
	write_config(&f, cfg, sizeof cfg, "{}\n", true);
	fx_write_file(cfg, "[]\n", 3);
	set_layers(&f, 1, 91);
	EXPECT_OPEN(&f, &o, MP_E_CONFIG_DIGEST, "model.config_sha256");
	fx_cleanup(&f);
}
END_TEST

/*
 * A config file whose size says nothing of its contents: procfs reports 0
 * bytes, sysfs 4096 whatever it holds.  Read to end of file, it is hashed
 * as it reads; and a NULL error pointer is allowed throughout.
 */
static void check_config_file_as_read(const char *path)
{
	unsigned char buf[65536];
	size_t len = 0;
	ssize_t n;
	char hex[MP_SHA256_HEX];
	struct mp_open_opts o = {.config_path = path};
	struct fx f;
	struct mp_pack *p = NULL;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return; /* not on this system */
	while ((n = read(fd, buf + len, sizeof buf - len)) > 0)
		len += (size_t)n;
	close(fd);
	fx_sha256_hex_of(buf, len, hex);
	fx_setup(&f, &small_pack);
	fx_manifest_set_str(&f, "model.config_sha256", hex);
	ck_assert_msg(mp_pack_open(&p, f.pack, &o, NULL) == MP_OK, "config %s", path);
	mp_pack_close(p);
	EXPECT_OPEN(&f, &o, MP_OK, "");
	/* and a mismatch is still reported, with no error to fill */
	fx_manifest_set_str(&f, "model.config_sha256", SHA256_ABC);
	ck_assert_int_eq(mp_pack_open(&p, f.pack, &o, NULL), MP_E_CONFIG_DIGEST);
	ck_assert_ptr_null(p);
	fx_cleanup(&f);
}

START_TEST(test_config_size_untrusted)
{
	check_config_file_as_read("/proc/version");
	check_config_file_as_read("/sys/kernel/mm/transparent_hugepage/enabled");
}
END_TEST

START_TEST(test_config_errors_without_error_pointer)
{
	struct fx f;
	char cfg[PATH_MAX];
	struct mp_open_opts o = {.config_path = cfg};
	struct mp_pack *p = NULL;

	fx_setup(&f, &small_pack);
	fx_path(&f, "no-such-config.json", cfg, sizeof cfg);
	ck_assert_int_eq(mp_pack_open(&p, f.pack, &o, NULL), MP_E_CONFIG_IO);
	o.config_path = f.dir;
	ck_assert_int_eq(mp_pack_open(&p, f.pack, &o, NULL), MP_E_CONFIG_IO);
	ck_assert_ptr_null(p);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_config_too_large)
{
	struct fx f;
	char cfg[PATH_MAX];
	struct mp_open_opts o = {.config_path = cfg};

	fx_setup(&f, &small_pack);
	fx_path(&f, "huge-config.json", cfg, sizeof cfg);
	fx_write_file(cfg, "{}", 2);
	ck_assert_int_eq(truncate(cfg, (16 << 20) + 1), 0);
	EXPECT_OPEN(&f, &o, MP_E_CONFIG_IO, "cannot read config file", cfg, "16 MiB");
	fx_cleanup(&f);
}
END_TEST

/*
 * Roles that each pass their shape check but whose sum passes 2^64: the
 * sum must not wrap into a value that object_bytes could match.
 */
START_TEST(test_role_sizes_sum_wraps)
{
	struct fx f;
	/* [256 (2^24 - 1), 256 (2^24 + 1)]: both multiples of the block, and
	 * 2^56 - 256 super-blocks of 256 weights */
	const uint64_t blocks = (1ULL << 56) - 256;
	const uint64_t q2 = blocks * 84, q3 = blocks * 110;
	json_t *root, *shape;

	fx_setup(&f, &small_pack);
	root = fx_manifest_load(&f);
	shape = json_pack("[II]", (json_int_t)(256 * ((1LL << 24) - 1)),
			  (json_int_t)(256 * ((1LL << 24) + 1)));
	fx_json_set(root, "expert_pack.roles.up.logical_shape", json_deep_copy(shape));
	fx_json_set(root, "expert_pack.roles.gate.logical_shape", json_deep_copy(shape));
	fx_json_set(root, "expert_pack.roles.down.logical_shape", shape);
	fx_json_set(root, "expert_pack.roles.up.expert_bytes", json_integer((json_int_t)q2));
	fx_json_set(root, "expert_pack.roles.gate.expert_bytes", json_integer((json_int_t)q2));
	fx_json_set(root, "expert_pack.roles.down.expert_bytes", json_integer((json_int_t)q3));
	/* what a wrapping sum gives, so that only the overflow check sees it */
	fx_json_set(root, "expert_pack.object_bytes",
		    json_integer((json_int_t)(q2 + q2 + q3)));
	fx_manifest_save(&f, root);
	json_decref(root);
	ck_assert_uint_lt(q2 + q2 + q3, q3); /* it does wrap */
	EXPECT_OPEN(&f, NULL, MP_E_OBJECT_BYTES, "expert_pack.object_bytes", "2^64");
	fx_cleanup(&f);
}
END_TEST

/* ---- files --------------------------------------------------------------- */

START_TEST(test_pack_missing)
{
	struct fx f;

	fx_init(&f); /* nothing built */
	EXPECT_OPEN(&f, NULL, MP_E_PACK_IO, f.pack);
	/* a directory where the pack should be */
	ck_assert_int_eq(mkdir(f.pack, 0755), 0);
	EXPECT_OPEN(&f, NULL, MP_E_PACK_IO, f.pack);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_missing)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	ck_assert_int_eq(unlink(f.manifest), 0);
	EXPECT_OPEN(&f, NULL, MP_E_MANIFEST_IO, f.manifest);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_explicit_path_missing)
{
	struct fx f;
	char other[PATH_MAX];
	struct mp_open_opts o = {.manifest_path = other};

	fx_setup(&f, &small_pack);
	fx_path(&f, "other.json", other, sizeof other);
	EXPECT_OPEN(&f, &o, MP_E_MANIFEST_IO, other);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_is_directory)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	ck_assert_int_eq(unlink(f.manifest), 0);
	ck_assert_int_eq(mkdir(f.manifest, 0755), 0);
	EXPECT_OPEN(&f, NULL, MP_E_MANIFEST_IO, f.manifest);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_too_large)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	/* a hole: costs nothing, and must not be read to be refused */
	ck_assert_int_eq(truncate(f.manifest, (64 << 20) + 1), 0);
	ck_assert_int_eq(truncate(f.manifest, MP_MANIFEST_MAX + 1), 0);
	EXPECT_OPEN(&f, NULL, MP_E_MANIFEST_IO, f.manifest, "16 MiB");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_16mib_accepted)
{
	struct fx f;
	struct mp_error err;
	const size_t chunk = 1 << 20;
	char *spaces = malloc(chunk);
	size_t left;
	int fd;

	fx_setup(&f, &small_pack);
	/* exactly at the limit: valid JSON followed by white space */
	ck_assert_ptr_nonnull(spaces);
	memset(spaces, ' ', chunk);
	left = MP_MANIFEST_MAX - (size_t)fx_file_size(f.manifest);
	fd = open(f.manifest, O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	while (left) {
		size_t n = left < chunk ? left : chunk;

		ck_assert_int_eq(write(fd, spaces, n), (ssize_t)n);
		left -= n;
	}
	close(fd);
	free(spaces);
	ck_assert_uint_eq(fx_file_size(f.manifest), MP_MANIFEST_MAX);
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");
	fx_cleanup(&f);
}
END_TEST

/* ---- manifest limits ---------------------------------------------------- */

/*
 * Rewrite the manifest as it is plus a top-level "junk" member: head, then
 * count copies of unit separated by sep, then tail.  Returns its size.
 */
static size_t add_junk(const struct fx *f, const char *head, const char *unit,
		       const char *sep, size_t count, const char *tail)
{
	size_t len, ulen = strlen(unit), slen = strlen(sep);
	char *text = fx_read_file(f->manifest, &len);
	char *end = strrchr(text, '}');
	FILE *out;

	ck_assert_ptr_nonnull(end);
	out = fopen(f->manifest, "w");
	ck_assert_ptr_nonnull(out);
	fwrite(text, 1, (size_t)(end - text), out);
	fprintf(out, ",\n  \"junk\": %s", head);
	for (size_t i = 0; i < count; i++) {
		if (i)
			fwrite(sep, 1, slen, out);
		fwrite(unit, 1, ulen, out);
	}
	fprintf(out, "%s\n}\n", tail);
	ck_assert_int_eq(fclose(out), 0);
	free(text);
	return (size_t)fx_file_size(f->manifest);
}

/* JSON values in a tree, keys not counted: what the limit counts. */
static size_t count_values(json_t *v)
{
	size_t n = 1, i;
	const char *key;
	json_t *item;

	if (json_is_object(v))
		json_object_foreach(v, key, item)
			n += count_values(item);
	else if (json_is_array(v))
		json_array_foreach(v, i, item)
			n += count_values(item);
	return n;
}

START_TEST(test_manifest_too_deep)
{
	struct fx f;
	/* the top level is depth 1: 64 arrays under it make 65 */
	char *open_ = fx_repeat("[", 64), *close_ = fx_repeat("]", 64);

	fx_setup(&f, &small_pack);
	add_junk(&f, open_, "", "", 0, close_);
	EXPECT_OPEN(&f, NULL, MP_E_MANIFEST_LIMIT, f.manifest, "deeper than 64");
	free(open_);
	free(close_);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_too_many_values)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	add_junk(&f, "[", "0", ",", MP_MANIFEST_MAX_VALUES, "]");
	EXPECT_OPEN(&f, NULL, MP_E_MANIFEST_LIMIT, f.manifest, "more than 500000 JSON values");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_tree_too_large)
{
	struct fx f;

	/* 150,000 empty objects: few values and bytes, but a large tree */
	fx_setup(&f, &small_pack);
	ck_assert_uint_lt(add_junk(&f, "[", "{}", ",", 150000, "]"), 1u << 20);
	EXPECT_OPEN(&f, NULL, MP_E_MANIFEST_LIMIT, f.manifest, "more than 32 MiB");
	fx_cleanup(&f);
}
END_TEST

/*
 * What the reference builder writes: every checkpoint tensor in
 * source.tensors, indented.  10,000 tensors (Kimi K3 has about 3,000) must
 * pass with room to spare.
 */
START_TEST(test_manifest_real_inventory_accepted)
{
	struct fx f;
	struct mp_error err;
	json_t *root, *tensors = json_array();
	size_t values;

	fx_setup(&f, &small_pack);
	root = fx_manifest_load(&f);
	for (int i = 0; i < 10000; i++) {
		char name[64];
		json_t *t = json_object();

		snprintf(name, sizeof name, "blk.%d.ffn_down_exps.weight", i);
		json_object_set_new(t, "name", json_string(name));
		json_object_set_new(t, "shape", json_pack("[iii]", 3584, 3072, 896));
		json_object_set_new(t, "dtype", json_string("Q3_K"));
		json_object_set_new(t, "dtype_id", json_integer(11));
		json_object_set_new(t, "shard_index", json_integer(i / 100));
		json_object_set_new(t, "data_offset", json_integer(1000000000LL + i));
		json_object_set_new(t, "nbytes", json_integer(1234567890));
		json_array_append_new(tensors, t);
	}
	fx_json_set(root, "source.tensors", tensors);
	values = count_values(root);
	fx_manifest_save(&f, root);
	json_decref(root);
	ck_assert_uint_gt(values, 100000);
	ck_assert_uint_lt(fx_file_size(f.manifest), MP_MANIFEST_MAX / 2);
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");
	fx_cleanup(&f);
}
END_TEST

/* Exactly at the depth and value limits passes. */
START_TEST(test_manifest_limits_at_the_edge)
{
	struct fx f;
	struct mp_error err;
	json_t *root;
	size_t base;
	char *open_ = fx_repeat("[", 63), *close_ = fx_repeat("]", 63);

	fx_setup(&f, &small_pack);
	root = fx_manifest_load(&f);
	base = count_values(root);
	json_decref(root);
	add_junk(&f, "[", "0", ",", MP_MANIFEST_MAX_VALUES - base - 1, "]");
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");
	fx_build(&f, &small_pack);
	add_junk(&f, open_, "", "", 0, close_);
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");
	free(open_);
	free(close_);
	fx_cleanup(&f);
}
END_TEST

/*
 * A pack in a directory whose name is not UTF-8, its path written the way
 * Python writes it (each such byte as a lone surrogate escape \udcXX).
 */
static void move_pack_to_latin1_dir(struct fx *f, char *pack, size_t len)
{
	char dir[PATH_MAX], *text, *at, *quoted, *old;
	json_t *jold;
	size_t tlen, qlen;
	FILE *out;

	fx_path(f, "caf\xe9", dir, sizeof dir);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_uint_lt(strlen(dir) + 11, len);
	memcpy(pack, dir, strlen(dir));
	strcpy(pack + strlen(dir), "/demo.pack");
	ck_assert_int_eq(rename(f->pack, pack), 0);
	jold = json_string(f->pack);
	old = json_dumps(jold, JSON_ENCODE_ANY);
	json_decref(jold);
	quoted = mp_json_quote(pack, strlen(pack), &qlen);
	ck_assert_ptr_nonnull(strstr(quoted, "caf\\udce9"));
	text = fx_read_file(f->manifest, &tlen);
	at = strstr(text, old);
	ck_assert_ptr_nonnull(at);
	out = fopen(f->manifest, "w");
	ck_assert_ptr_nonnull(out);
	fwrite(text, 1, (size_t)(at - text), out);
	fwrite(quoted, 1, qlen, out);
	fputs(at + strlen(old), out);
	ck_assert_int_eq(fclose(out), 0);
	free(text);
	free(old);
	free(quoted);
}

START_TEST(test_path_surrogate_escapes)
{
	struct fx f;
	struct mp_error err;
	struct mp_open_opts o;
	struct mp_pack *p = NULL;
	char pack[PATH_MAX];

	fx_setup(&f, &small_pack);
	move_pack_to_latin1_dir(&f, pack, sizeof pack);
	o = (struct mp_open_opts){.manifest_path = f.manifest};
	ck_assert_int_eq(mp_pack_open(&p, pack, &o, &err), MP_OK);
	ck_assert_str_eq(p->kimi->pack_path, pack);
	mp_pack_close(p);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_path_surrogates_and_private_use)
{
	struct fx f;
	struct mp_error err;
	struct mp_open_opts o;
	struct mp_pack *p = NULL;
	char pack[PATH_MAX];

	fx_setup(&f, &small_pack);
	/* U+F7E9 is what a lone \udce9 is read as: ambiguous, so refused */
	move_pack_to_latin1_dir(&f, pack, sizeof pack);
	{
		size_t len;
		char *text = fx_read_file(f.manifest, &len);
		char *end = strrchr(text, '}');
		FILE *out = fopen(f.manifest, "w");

		ck_assert_ptr_nonnull(out);
		fwrite(text, 1, (size_t)(end - text), out);
		fputs(",\n  \"note\": \"\\uf7e9\"\n}\n", out);
		ck_assert_int_eq(fclose(out), 0);
		free(text);
	}
	o = (struct mp_open_opts){.manifest_path = f.manifest};
	ck_assert_int_eq(mp_pack_open(&p, pack, &o, &err), MP_E_MANIFEST_JSON);
	fx_assert_err(&err, MP_E_MANIFEST_JSON, "\\udcXX", "U+F780");
	ck_assert_ptr_null(p);
	fx_cleanup(&f);
}
END_TEST

/* More colons than strings: a syntax error, not a miscount of values. */
START_TEST(test_manifest_colons_not_json)
{
	struct fx f;
	static const char text[] = "{\"format\": :::::::}\n";

	fx_setup(&f, &small_pack);
	fx_write_file(f.manifest, text, sizeof text - 1);
	EXPECT_OPEN(&f, NULL, MP_E_MANIFEST_JSON, f.manifest, ":1:");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_not_json)
{
	struct fx f;
	static const char text[] = "{\n  \"complete\": tru\n}\n";

	fx_setup(&f, &small_pack);
	fx_write_file(f.manifest, text, sizeof text - 1);
	/* line 2 is where the error is; line:column follows the path */
	EXPECT_OPEN(&f, NULL, MP_E_MANIFEST_JSON, f.manifest, ":2:");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_empty)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_write_file(f.manifest, "", 0);
	EXPECT_OPEN(&f, NULL, MP_E_MANIFEST_JSON, f.manifest);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_top_level_array)
{
	struct fx f;
	json_t *root, *arr;

	fx_setup(&f, &small_pack);
	/* the whole valid manifest, wrapped in an array */
	root = fx_manifest_load(&f);
	arr = json_array();
	json_array_append_new(arr, root);
	fx_manifest_save(&f, arr);
	json_decref(arr);
	EXPECT_OPEN(&f, NULL, MP_E_MANIFEST_TYPE, f.manifest);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_manifest_top_level_scalar)
{
	static const char *const texts[] = {"\"complete\"", "42", "null", "true"};
	struct fx f;

	/* valid JSON (RFC 8259 allows any value at the top), but not an object */
	fx_setup(&f, &small_pack);
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		struct mp_error err;

		fx_write_file(f.manifest, texts[i], strlen(texts[i]));
		fx_open(&f, NULL, &err);
		fx_assert_err_labeled(texts[i], &err, MP_E_MANIFEST_TYPE, f.manifest);
	}
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_manifest_before_header)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_pwrite(&f, FX_HDR_MAGIC, "X", 1);
	fx_manifest_set_str(&f, "format", "other");
	EXPECT_OPEN(&f, NULL, MP_E_FORMAT, "format");
	fx_cleanup(&f);
}
END_TEST

/* ---- expert_pack.path resolution --------------------------------------- */

START_TEST(test_path_elsewhere)
{
	struct fx f, g;

	/* another valid pack of the same shape: still not this one */
	fx_setup(&f, &small_pack);
	fx_setup(&g, &small_pack);
	fx_manifest_set_str(&f, "expert_pack.path", g.pack);
	EXPECT_OPEN(&f, NULL, MP_E_PACK_PATH, "expert_pack.path", g.pack);
	fx_cleanup(&g);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_path_relative_to_manifest)
{
	struct fx f;
	struct mp_error err;
	char other_dir[PATH_MAX], cwd[PATH_MAX];

	fx_setup(&f, &small_pack);
	fx_manifest_set_str(&f, "expert_pack.path", "demo.pack");
	/* from another working directory: relative means next to the manifest */
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	fx_path(&f, "elsewhere", other_dir, sizeof other_dir);
	ck_assert_int_eq(mkdir(other_dir, 0755), 0);
	ck_assert_int_eq(chdir(other_dir), 0);
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");

	/* "./x/../demo.pack" has relative parts to resolve */
	fx_manifest_set_str(&f, "expert_pack.path", "./elsewhere/../demo.pack");
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");

	/* relative to the manifest, not to the working directory */
	fx_manifest_set_str(&f, "expert_pack.path", "../demo.pack");
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_E_PACK_PATH, "expert_pack.path");

	/* pack and manifest named relative to the working directory */
	fx_manifest_set_str(&f, "expert_pack.path", "demo.pack");
	ck_assert_int_eq(chdir(f.dir), 0);
	{
		struct mp_pack *p = NULL;

		memset(&err, 0, sizeof err);
		ck_assert_int_eq(mp_pack_open(&p, "demo.pack", NULL, &err), MP_OK);
		mp_pack_close(p);
	}
	ck_assert_int_eq(chdir(cwd), 0);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_path_through_symlinks)
{
	struct fx f;
	struct mp_error err;
	char link[PATH_MAX];
	struct mp_open_opts o = {.manifest_path = f.manifest};

	fx_setup(&f, &small_pack);
	fx_path(&f, "link.pack", link, sizeof link);
	ck_assert_int_eq(symlink("demo.pack", link), 0);
	/* the manifest names a symlink to the pack */
	fx_manifest_set_str(&f, "expert_pack.path", link);
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");

	/* the pack opened through a symlink, the manifest naming the file */
	fx_manifest_set_str(&f, "expert_pack.path", f.pack);
	{
		struct mp_pack *p = NULL;

		memset(&err, 0, sizeof err);
		ck_assert_int_eq(mp_pack_open(&p, link, &o, &err), MP_OK);
		mp_pack_close(p);
	}
	/* and a symlink to something else is not the pack */
	ck_assert_int_eq(unlink(link), 0);
	ck_assert_int_eq(symlink("demo.pack.manifest.json", link), 0);
	fx_manifest_set_str(&f, "expert_pack.path", link);
	EXPECT_OPEN(&f, NULL, MP_E_PACK_PATH, "expert_pack.path");
	fx_cleanup(&f);
}
END_TEST

/* ====================================================================== */
/* Header                                                                  */

START_TEST(test_header_short)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_truncate(&f, MP_HEADER_SIZE - 1);
	fx_fix(&f, FX_FIX_SIZE);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_SHORT, f.pack);
	fx_truncate(&f, 0);
	fx_fix(&f, FX_FIX_SIZE);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_SHORT, f.pack);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_header_magic)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_pwrite(&f, 0, "g", 1); /* ggmlMOEPACKv1 */
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_MAGIC, "magic");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_header_magic_padding)
{
	struct fx f;

	/* the three NUL bytes after the 13 letters are part of the magic; the
	 * message shows every byte up to the last that is not NUL, the NULs
	 * among them escaped, so that it never prints the required magic as
	 * the one found */
	fx_setup(&f, &small_pack);
	fx_pwrite(&f, 15, "\x01", 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_MAGIC,
		    "header magic is \"GGMLMOEPACKv1\\x00\\x00\\x01\"");
	fx_pwrite(&f, 15, "X", 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_MAGIC,
		    "header magic is \"GGMLMOEPACKv1\\x00\\x00X\"");
	fx_pwrite(&f, 15, "\0", 1);
	fx_pwrite(&f, 13, " ", 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_MAGIC, "header magic is \"GGMLMOEPACKv1 \"");
	/* escaped once: a control byte shows as \x1b, not \\x1b */
	fx_pwrite(&f, 13, "\x1b", 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_MAGIC,
		    "header magic is \"GGMLMOEPACKv1\\x1b\"");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_header_version)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_set_u32(&f, FX_HDR_VERSION, 2);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_VERSION, "version", "2");
	fx_set_u32(&f, FX_HDR_VERSION, 0x01000000); /* 1, big-endian */
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_VERSION, "version");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_header_size)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_set_u32(&f, FX_HDR_HEADER_SIZE, 41);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_SIZE, "header_size", "41");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_header_index_count)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_set_u64(&f, FX_HDR_INDEX_COUNT, COUNT + 3);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_INDEX_COUNT, "index_count", "555");
	fx_set_u64(&f, FX_HDR_INDEX_COUNT, COUNT - 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_INDEX_COUNT, "index_count");
	fx_cleanup(&f);
}
END_TEST

/*
 * Outside sanitizer builds (whose shadow memory needs a huge address
 * space), cap this test process's address space so that an allocation
 * sized by a corrupt index_count fails the test instead of succeeding.
 */
static void limit_address_space(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return;
#endif
#endif
	{
		const char *fork_env = getenv("CK_FORK");
		unsigned long pages = 0;
		FILE *statm;
		struct rlimit rl;

		if (fork_env && !strcmp(fork_env, "no"))
			return; /* the limit would outlive this test */
		statm = fopen("/proc/self/statm", "r");
		if (!statm)
			return;
		if (fscanf(statm, "%lu", &pages) != 1)
			pages = 0;
		fclose(statm);
		if (!pages)
			return;
		/* room for the validator's small buffers, not for the index */
		rl.rlim_cur = pages * (rlim_t)sysconf(_SC_PAGESIZE) + (256u << 20);
		rl.rlim_max = rl.rlim_cur;
		ck_assert_int_eq(setrlimit(RLIMIT_AS, &rl), 0);
	}
}

START_TEST(test_header_index_count_huge)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	limit_address_space();
	fx_set_u64(&f, FX_HDR_INDEX_COUNT, UINT64_C(1) << 60);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_INDEX_COUNT, "index_count");
	/* 152 * count wraps to a small number here: must not matter */
	fx_set_u64(&f, FX_HDR_INDEX_COUNT, UINT64_MAX / MP_ENTRY_SIZE + 2);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_INDEX_COUNT, "index_count");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_header_data_start)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_set_u64(&f, FX_HDR_DATA_START, fx_get_u64(&f, FX_HDR_DATA_START) + 256);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_DATA_START, "data_start");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_index_truncated)
{
	struct fx f;

	/* the file ends inside the index */
	fx_setup(&f, &small_pack);
	fx_truncate(&f, INDEX_END - 1);
	fx_fix(&f, FX_FIX_SIZE | FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_INDEX_TRUNCATED, "index runs past");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_index_truncated_huge_count)
{
	struct fx f;
	const uint64_t experts = 65536, count = 92 * experts * 3;

	/*
	 * The largest index the manifest allows (92 x 65536 x 3 entries, 2.7
	 * GB) in a 13 MB file: refused from the header alone, without
	 * allocating for it.
	 */
	fx_setup(&f, &small_pack);
	limit_address_space();
	fx_manifest_set_int(&f, "model.num_experts", (json_int_t)experts);
	fx_set_u64(&f, FX_HDR_INDEX_COUNT, count);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_INDEX_TRUNCATED, "index runs past");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_data_start_inside_index)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_set_u64(&f, FX_HDR_DATA_START, MP_HEADER_SIZE);
	fx_manifest_set_int(&f, "expert_pack.data_start", MP_HEADER_SIZE);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_DATA_OVERLAPS_INDEX, "data_start");
	/* one byte short of the index end */
	fx_set_u64(&f, FX_HDR_DATA_START, INDEX_END - 1);
	fx_manifest_set_int(&f, "expert_pack.data_start", INDEX_END - 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_DATA_OVERLAPS_INDEX, "data_start");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_header_fields)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_set_u32(&f, FX_HDR_VERSION, 7);
	fx_set_u32(&f, FX_HDR_HEADER_SIZE, 7);
	fx_set_u64(&f, FX_HDR_INDEX_COUNT, 7);
	fx_set_u64(&f, FX_HDR_DATA_START, 7);
	fx_pwrite(&f, 0, "X", 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_MAGIC, "magic");
	fx_pwrite(&f, 0, "G", 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_VERSION, "version");
	fx_set_u32(&f, FX_HDR_VERSION, 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_SIZE, "header_size");
	fx_set_u32(&f, FX_HDR_HEADER_SIZE, 40);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_INDEX_COUNT, "index_count");
	fx_set_u64(&f, FX_HDR_INDEX_COUNT, COUNT);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_DATA_START, "data_start");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_data_start_before_truncation)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_truncate(&f, INDEX_END - 1);
	fx_set_u64(&f, FX_HDR_DATA_START, 7);
	fx_fix(&f, FX_FIX_SIZE | FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_DATA_START, "data_start");
	fx_cleanup(&f);
}
END_TEST

/* ====================================================================== */
/* Index entries                                                           */

START_TEST(test_entry_name_wrong_role)
{
	struct fx f;
	char idx[32];

	fx_setup(&f, &small_pack);
	fx_entry_set_name(&f, 0, "blk.1.ffn_gate_exps.weight");
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(0, idx),
		    "blk.1.ffn_gate_exps.weight", "blk.1.ffn_up_exps.weight");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_name_wrong_layer)
{
	struct fx f;
	char idx[32];

	/* entry 6: layer 2, expert 0, up */
	fx_setup(&f, &small_pack);
	fx_entry_set_name(&f, 6, "blk.3.ffn_up_exps.weight");
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(6, idx),
		    "blk.2.ffn_up_exps.weight");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_name_leading_zero)
{
	struct fx f;
	char idx[32];

	fx_setup(&f, &small_pack);
	fx_entry_set_name(&f, 0, "blk.01.ffn_up_exps.weight");
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(0, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_name_non_ascii_digit)
{
	struct fx f;
	char idx[32];

	fx_setup(&f, &small_pack);
	/* U+0661 ARABIC-INDIC DIGIT ONE */
	fx_entry_set_name(&f, 0, "blk.\xd9\xa1.ffn_up_exps.weight");
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(0, idx));
	/* U+FF11 FULLWIDTH DIGIT ONE, at entry 2 */
	fx_entry_set_name(&f, 0, "blk.1.ffn_up_exps.weight");
	fx_entry_set_name(&f, 2, "blk.\xef\xbc\x91.ffn_down_exps.weight");
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(2, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_name_no_nul)
{
	struct fx f;
	char idx[32];
	unsigned char field[MP_ENTRY_NAME_LEN];

	/* the right name, then no NUL anywhere in the 128 bytes */
	fx_setup(&f, &small_pack);
	memset(field, 'x', sizeof field);
	memcpy(field, "blk.1.ffn_gate_exps.weight", 26);
	fx_entry_set_name_raw(&f, 1, field, sizeof field);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(1, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_name_trailing_text)
{
	struct fx f;
	char idx[32];

	fx_setup(&f, &small_pack);
	fx_entry_set_name(&f, 4, "blk.1.ffn_gate_exps.weight "); /* a space */
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(4, idx));
	fx_entry_set_name(&f, 4, "blk.1.ffn_gate_exps.weigh");
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(4, idx));
	fx_entry_set_name(&f, 4, "");
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(4, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_expert)
{
	struct fx f;
	char idx[32];

	/* entry 3 is expert 1's up */
	fx_setup(&f, &small_pack);
	fx_entry_set_expert(&f, 3, 0);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_EXPERT, index_text(3, idx));
	fx_entry_set_expert(&f, 3, 1);
	fx_entry_set_expert(&f, 0, -1); /* signed: 0xffffffff is not 2^32-1 */
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_EXPERT, index_text(0, idx), "-1");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_reserved)
{
	struct fx f;
	char idx[32];

	fx_setup(&f, &small_pack);
	fx_entry_set_reserved(&f, 4, 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_RESERVED, index_text(4, idx));
	fx_entry_set_reserved(&f, 4, 0);
	fx_entry_set_reserved(&f, COUNT - 1, 0x80000000u);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_RESERVED, index_text(COUNT - 1, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_nbytes)
{
	struct fx f;
	struct fx_entry e;
	char idx[32];

	fx_setup(&f, &small_pack);
	fx_entry_get(&f, 2, &e);
	fx_entry_set_nbytes(&f, 2, e.nbytes + 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NBYTES, index_text(2, idx));
	/* the gate's size at a down entry */
	fx_entry_set_nbytes(&f, 2, (uint64_t)fx_manifest_get_int(
					   &f, "expert_pack.roles.gate.expert_bytes"));
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NBYTES, index_text(2, idx));
	fx_entry_set_nbytes(&f, 2, 0);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NBYTES, index_text(2, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_misaligned)
{
	struct fx f;
	struct fx_entry e;
	char idx[32];

	fx_setup(&f, &small_pack);
	fx_entry_get(&f, 0, &e);
	fx_entry_set_offset(&f, 0, e.offset + 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_ALIGNMENT, index_text(0, idx));
	fx_entry_set_offset(&f, 0, e.offset);
	fx_entry_get(&f, 5, &e);
	fx_entry_set_offset(&f, 5, e.offset + 128);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_ALIGNMENT, index_text(5, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_overlap)
{
	struct fx f;
	struct fx_entry e0, e3;
	char idx[32];

	fx_setup(&f, &small_pack);
	/* object 1 starts where object 0 does */
	fx_entry_get(&f, 0, &e0);
	fx_entry_get(&f, 3, &e3);
	fx_entry_set_offset(&f, 3, e0.offset);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_OVERLAP, index_text(3, idx));
	fx_entry_set_offset(&f, 3, e3.offset);
	/* the first payload inside the index, before data_start */
	fx_entry_set_offset(&f, 0, e0.offset - 256);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_OVERLAP, index_text(0, idx));
	fx_entry_set_offset(&f, 0, 0);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_OVERLAP, index_text(0, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_out_of_bounds)
{
	struct fx f;
	uint64_t size;
	char idx[32];

	fx_setup(&f, &small_pack);
	size = fx_file_size(f.pack);
	ck_assert_uint_eq(size % 256, 0);
	/* the last object's up moved to the end of the file */
	fx_entry_set_offset(&f, COUNT - 3, size);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_BOUNDS, index_text(COUNT - 3, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_offset_overflow)
{
	struct fx f;
	char idx[32];

	/* offset + nbytes wraps past 2^64 to a small number */
	fx_setup(&f, &small_pack);
	fx_entry_set_offset(&f, 0, UINT64_MAX - 255);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_BOUNDS, index_text(0, idx));
	fx_cleanup(&f);
	fx_setup(&f, &small_pack);
	fx_entry_set_offset(&f, COUNT - 3, UINT64_MAX - 255);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_BOUNDS, index_text(COUNT - 3, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_not_contiguous)
{
	struct fx f;
	struct fx_entry e;
	char idx[32];

	/* a gap between up and gate: aligned, in order, in bounds, but apart */
	fx_setup(&f, &small_pack);
	fx_entry_get(&f, 1, &e);
	fx_entry_set_offset(&f, 1, e.offset + 256);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_CONTIGUITY, index_text(1, idx));
	fx_entry_set_offset(&f, 1, e.offset);
	/* the same between gate and down of object 7 */
	fx_entry_get(&f, 23, &e);
	fx_entry_set_offset(&f, 23, e.offset + 256);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_CONTIGUITY, index_text(23, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_entry_roles_physically_swapped)
{
	struct fx f;
	struct fx_entry up;
	uint64_t up_bytes, down_bytes;
	char idx[32];

	/* gate and down in each other's place: sizes differ, so no overlap
	 * at the gate, which now lies past down's space */
	fx_setup(&f, &small_pack);
	up_bytes = (uint64_t)fx_manifest_get_int(&f, "expert_pack.roles.up.expert_bytes");
	down_bytes =
		(uint64_t)fx_manifest_get_int(&f, "expert_pack.roles.down.expert_bytes");
	fx_entry_get(&f, 0, &up);
	fx_entry_set_offset(&f, 1, up.offset + up_bytes + down_bytes);
	fx_entry_set_offset(&f, 2, up.offset + up_bytes);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_CONTIGUITY, index_text(1, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_trailing_bytes)
{
	struct fx f;
	uint64_t size;

	fx_setup(&f, &small_pack);
	size = fx_file_size(f.pack);
	fx_truncate(&f, size + 256);
	fx_fix(&f, FX_FIX_SIZE);
	EXPECT_OPEN(&f, NULL, MP_E_TRAILING_BYTES, "after the last payload");
	fx_truncate(&f, size + 1);
	fx_fix(&f, FX_FIX_SIZE);
	EXPECT_OPEN(&f, NULL, MP_E_TRAILING_BYTES, "after the last payload");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_index_digest)
{
	struct fx f;
	static const char bogus[] = SHA256_ABC;
	char real[MP_SHA256_HEX];

	fx_setup(&f, &small_pack);
	fx_manifest_get_str(&f, "expert_pack.index_sha256", real, sizeof real);
	fx_manifest_set_str(&f, "expert_pack.index_sha256", bogus);
	EXPECT_OPEN(&f, NULL, MP_E_INDEX_DIGEST, real, bogus);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_index_digest_covers_ignored_name_bytes)
{
	struct fx f;
	unsigned char field[MP_ENTRY_NAME_LEN] = "blk.1.ffn_up_exps.weight";
	struct mp_error err;

	/* bytes after the name's NUL are not checked as a name, but they are
	 * index bytes: the digest covers them */
	fx_setup(&f, &small_pack);
	memcpy(field + 100, "junk", 4);
	fx_entry_set_name_raw(&f, 0, field, sizeof field);
	EXPECT_OPEN(&f, NULL, MP_E_INDEX_DIGEST, "index SHA-256");
	fx_fix(&f, FX_FIX_INDEX);
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_full_digest_missing)
{
	struct fx f;
	struct mp_open_opts o = {.full = true};
	struct mp_error err;

	fx_setup(&f, &small_pack); /* no expert_pack.sha256 */
	fx_open(&f, &o, &err);
	/* it says how a pack gets one: both writers' --full-sha256 */
	fx_assert_err(&err, MP_E_FULL_DIGEST_MISSING,
		      "the manifest has no whole-file digest: no expert_pack.sha256 in ",
		      "'moepack build --full-sha256'", "'moepack mkdemo --full-sha256'");
	ck_assert_int_eq(mp_err_class(err.code), MP_CLASS_USAGE);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_full_digest_mismatch)
{
	struct fx f;
	struct fx_entry e;
	struct mp_open_opts o = {.full = true};
	struct mp_error err;
	unsigned char byte;
	char real[MP_SHA256_HEX];

	fx_setup(&f, &(struct fx_pack_opts){.full_sha256 = true});
	/* one payload bit of expert 1 at layer 50's down */
	fx_entry_get(&f, ((50 - 1) * EXPERTS + 1) * 3 + 2, &e);
	fx_pread(&f, e.offset + e.nbytes / 2, &byte, 1);
	byte ^= 0x10;
	fx_pwrite(&f, e.offset + e.nbytes / 2, &byte, 1);
	/* the cheap checks cannot see it */
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");
	fx_sha256_file(f.pack, real);
	EXPECT_OPEN(&f, &o, MP_E_FULL_DIGEST, "expert_pack.sha256", real);
	fx_cleanup(&f);
}
END_TEST

/* ---- entries: which fault wins ----------------------------------------- */

START_TEST(test_order_entry_before_digest)
{
	struct fx f;
	char idx[32];

	fx_setup(&f, &small_pack);
	fx_entry_set_name(&f, 5, "blk.1.ffn_up_exps.weight");
	/* no fx_fix: the index digest is wrong too */
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(5, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_first_index_wins)
{
	struct fx f;
	struct fx_entry e;
	char idx[32];

	/* a later check at an earlier index beats an earlier check later on */
	fx_setup(&f, &small_pack);
	fx_entry_get(&f, 3, &e);
	fx_entry_set_nbytes(&f, 3, e.nbytes + 256);
	fx_entry_set_name(&f, 9, "blk.9.ffn_up_exps.weight");
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NBYTES, index_text(3, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_within_entry)
{
	struct fx f;
	struct fx_entry e;
	char idx[32];
	uint64_t size;

	fx_setup(&f, &small_pack);
	size = fx_file_size(f.pack);
	fx_entry_get(&f, 4, &e);
	/* every field of entry 4 wrong; peel them off in checking order */
	fx_entry_set_name(&f, 4, "blk.1.ffn_down_exps.weight");
	fx_entry_set_expert(&f, 4, 7);
	fx_entry_set_reserved(&f, 4, 7);
	fx_entry_set_nbytes(&f, 4, 7);
	fx_entry_set_offset(&f, 4, 7);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NAME, index_text(4, idx));
	fx_entry_set_name(&f, 4, "blk.1.ffn_gate_exps.weight");
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_EXPERT, index_text(4, idx));
	fx_entry_set_expert(&f, 4, 1);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_RESERVED, index_text(4, idx));
	fx_entry_set_reserved(&f, 4, 0);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_NBYTES, index_text(4, idx));
	fx_entry_set_nbytes(&f, 4, e.nbytes);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_ALIGNMENT, index_text(4, idx));
	fx_entry_set_offset(&f, 4, 256);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_OVERLAP, index_text(4, idx));
	fx_entry_set_offset(&f, 4, size);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_BOUNDS, index_text(4, idx));
	fx_entry_set_offset(&f, 4, size - e.nbytes);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_CONTIGUITY, index_text(4, idx));
	fx_entry_set_offset(&f, 4, e.offset);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_OK, "");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_entries_before_trailing)
{
	struct fx f;
	char idx[32];

	fx_setup(&f, &small_pack);
	fx_truncate(&f, fx_file_size(f.pack) + 256);
	fx_entry_set_reserved(&f, COUNT - 1, 1);
	fx_fix(&f, FX_FIX_SIZE | FX_FIX_INDEX);
	EXPECT_OPEN(&f, NULL, MP_E_ENTRY_RESERVED, index_text(COUNT - 1, idx));
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_trailing_before_digest)
{
	struct fx f;

	fx_setup(&f, &small_pack);
	fx_truncate(&f, fx_file_size(f.pack) + 256);
	fx_fix(&f, FX_FIX_SIZE);
	fx_manifest_set_str(&f, "expert_pack.index_sha256", SHA256_ABC);
	EXPECT_OPEN(&f, NULL, MP_E_TRAILING_BYTES, "after the last payload");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_order_index_digest_before_full)
{
	struct fx f;
	struct mp_open_opts o = {.full = true};
	struct fx_entry e;

	fx_setup(&f, &(struct fx_pack_opts){.sparse = true, .full_sha256 = true});
	fx_entry_get(&f, 0, &e);
	fx_pwrite(&f, e.offset, "x", 1); /* payload: the full digest breaks */
	fx_manifest_set_str(&f, "expert_pack.index_sha256", SHA256_ABC);
	EXPECT_OPEN(&f, &o, MP_E_INDEX_DIGEST, "index SHA-256");
	fx_cleanup(&f);
}
END_TEST

/* ====================================================================== */
/* Accepted packs                                                          */

/*
 * Every entry as stored against what the open pack says: lookup and
 * role_range give the entry's offset and size, the bytes read through the
 * pack's own descriptor at that range are the bytes at the entry's offset.
 */
static void check_every_entry(const struct fx *f, const struct mp_pack *p,
			      bool compare_bytes)
{
	uint64_t experts = p->m.num_experts;
	size_t max = 0;
	unsigned char *a = NULL, *b = NULL;

	ck_assert_uint_eq(p->index_count, fx_get_u64(f, FX_HDR_INDEX_COUNT));
	ck_assert_uint_eq(p->object_count * 3, p->index_count);
	for (uint64_t i = 0; i < p->index_count; i++) {
		uint64_t object = i / 3, li = object / experts, expert = object % experts;
		enum mp_role role = (enum mp_role)(i % 3);
		uint64_t layer = p->m.layer_ids[li], off = 0, len = 0, off2 = 0, len2 = 0;
		struct mp_error err = {0};
		struct fx_entry e;
		char name[64];

		fx_entry_get(f, i, &e);
		snprintf(name, sizeof name, "blk.%" PRIu64 ".ffn_%s_exps.weight", layer,
			 mp_role_name(role));
		ck_assert_str_eq(e.name, name);
		ck_assert_int_eq(e.expert, (int32_t)expert);
		ck_assert_int_eq(mp_pack_layer_index(p, layer), (long)li);

		ck_assert_int_eq(mp_pack_lookup(p, layer, expert, role, &off, &len, &err),
				 MP_OK);
		ck_assert_msg(off == e.offset && len == e.nbytes,
			      "entry %" PRIu64 ": lookup %" PRIu64 "+%" PRIu64
			      ", index %" PRIu64 "+%" PRIu64,
			      i, off, len, e.offset, e.nbytes);
		mp_pack_role_range(p, mp_pack_object(p, li, expert), role, &off2, &len2);
		ck_assert_uint_eq(off2, e.offset);
		ck_assert_uint_eq(len2, e.nbytes);
		if (role == MP_ROLE_UP) {
			mp_pack_object_range(p, object, &off2, &len2);
			ck_assert_uint_eq(off2, e.offset);
			ck_assert_uint_eq(len2, p->m.roles[MP_ROLE_UP].expert_bytes +
						p->m.roles[MP_ROLE_GATE].expert_bytes +
						p->m.roles[MP_ROLE_DOWN].expert_bytes);
		}

		if (!compare_bytes)
			continue;
		if (len > max) {
			max = (size_t)len;
			a = realloc(a, max);
			b = realloc(b, max);
			ck_assert(a && b);
		}
		ck_assert_int_eq(pread(p->file.fd, a, (size_t)len, (off_t)off), (ssize_t)len);
		fx_pread(f, e.offset, b, (size_t)e.nbytes);
		ck_assert_msg(memcmp(a, b, (size_t)len) == 0,
			      "entry %" PRIu64 ": bytes differ", i);
	}
	free(a);
	free(b);
}

START_TEST(test_accept_default)
{
	struct fx f;
	struct mp_pack *p;
	struct mp_error err;
	char hex[MP_SHA256_HEX];

	fx_setup(&f, NULL); /* with real payload bytes */
	ck_assert_int_eq(fx_open_pack(&f, NULL, &p, &err), MP_OK);
	ck_assert_uint_eq(p->file.size, fx_file_size(f.pack));
	ck_assert_uint_eq(p->m.model_layers, 93);
	ck_assert_uint_eq(p->m.num_experts, EXPERTS);
	ck_assert_uint_eq(p->m.top_k, 16);
	ck_assert_uint_eq(p->m.layer_count, 92);
	ck_assert_uint_eq(p->m.layer_ids[0], 1);
	ck_assert_uint_eq(p->m.layer_ids[91], 92);
	ck_assert_uint_eq(p->index_count, COUNT);
	ck_assert_uint_eq(p->m.alignment, 256);
	ck_assert_uint_eq(p->m.roles[MP_ROLE_UP].role_offset, 0);
	ck_assert_uint_eq(p->m.roles[MP_ROLE_GATE].role_offset,
			  p->m.roles[MP_ROLE_UP].expert_bytes);
	ck_assert_uint_eq(p->m.roles[MP_ROLE_DOWN].role_offset,
			  p->m.roles[MP_ROLE_UP].expert_bytes +
				  p->m.roles[MP_ROLE_GATE].expert_bytes);
	ck_assert_str_eq(p->m.roles[MP_ROLE_DOWN].dtype, "Q3_K");
	ck_assert_int_eq(p->m.roles[MP_ROLE_GATE].dtype_id, 10);
	/* the digest it computed is the one we compute */
	fx_sha256_file_range(f.pack, 0, INDEX_END, hex);
	ck_assert_str_eq(p->m.index_sha256, hex);
	ck_assert_str_eq(p->m.sha256, "");
	ck_assert(!p->full_checked);
	/* 256 < a page: accepted, with a warning */
	ck_assert(!p->page_aligned);
	ck_assert_uint_ge(p->file.nwarnings, 1);
	ck_assert_ptr_nonnull(strstr(p->file.warnings[0], "page-aligned"));
	ck_assert_ptr_nonnull(strstr(p->file.warnings[0], "expert_pack.alignment"));
	check_every_entry(&f, p, true);
	mp_pack_close(p);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_accept_page_aligned)
{
	struct fx f;
	struct mp_pack *p;
	struct mp_error err;

	fx_setup(&f, &(struct fx_pack_opts){.alignment = 4096, .sparse = true});
	ck_assert_int_eq(fx_open_pack(&f, NULL, &p, &err), MP_OK);
	ck_assert_uint_eq(p->m.alignment, 4096);
	ck_assert(p->page_aligned);
	ck_assert_uint_eq(p->file.nwarnings, 0);
	check_every_entry(&f, p, false);
	for (uint64_t o = 0; o < p->object_count; o++)
		ck_assert_uint_eq(p->object_offset[o] % 4096, 0);
	mp_pack_close(p);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_accept_gaps)
{
	struct fx f;
	struct mp_pack *p;
	struct mp_error err;
	struct fx_entry e0, e3;
	uint64_t object_bytes;

	/* 1000 bytes of padding after each object, rounded up to 1024 */
	fx_setup(&f, &(struct fx_pack_opts){.gap = 1000});
	fx_entry_get(&f, 0, &e0);
	fx_entry_get(&f, 3, &e3);
	object_bytes = (uint64_t)fx_manifest_get_int(&f, "expert_pack.object_bytes");
	ck_assert_uint_eq(e3.offset - e0.offset, object_bytes + 1024);
	ck_assert_int_eq(fx_open_pack(&f, NULL, &p, &err), MP_OK);
	check_every_entry(&f, p, true);
	mp_pack_close(p);

	/* move object 1 forward into its gap: still valid, and found there */
	for (int r = 0; r < 3; r++) {
		struct fx_entry e;

		fx_entry_get(&f, 3 + r, &e);
		fx_entry_set_offset(&f, 3 + r, e.offset + 512);
	}
	fx_fix(&f, FX_FIX_INDEX);
	ck_assert_int_eq(fx_open_pack(&f, NULL, &p, &err), MP_OK);
	ck_assert_uint_eq(p->object_offset[1], e3.offset + 512);
	check_every_entry(&f, p, false);
	mp_pack_close(p);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_accept_full_digest)
{
	struct fx f;
	struct mp_pack *p;
	struct mp_error err;
	struct fx_progress log = {0};
	struct mp_open_opts o = {
		.full = true, .progress = fx_progress_log, .progress_arg = &log};
	char hex[MP_SHA256_HEX];

	fx_setup(&f, &(struct fx_pack_opts){.full_sha256 = true});
	fx_sha256_file(f.pack, hex);
	ck_assert_int_eq(fx_open_pack(&f, &o, &p, &err), MP_OK);
	ck_assert(p->full_checked);
	ck_assert_str_eq(p->m.sha256, hex);
	ck_assert_uint_ge(log.calls, 1);
	ck_assert_uint_eq(log.done, p->file.size);
	ck_assert_uint_eq(log.total, p->file.size);
	ck_assert(!log.backwards);
	mp_pack_close(p);
	/* with the digest recorded but not asked for, nothing is read */
	log = (struct fx_progress){0};
	o.full = false;
	ck_assert_int_eq(fx_open_pack(&f, &o, &p, &err), MP_OK);
	ck_assert(!p->full_checked);
	ck_assert_uint_eq(log.calls, 0);
	mp_pack_close(p);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_accept_expectations_and_config)
{
	struct fx f;
	struct mp_error err;
	char cfg[PATH_MAX];
	struct mp_open_opts o = {.expect_layers = 93, .expect_experts = EXPERTS,
				 .config_path = cfg};

	fx_setup(&f, &small_pack);
	write_config(&f, cfg, sizeof cfg, "{\"model_type\": \"kimi_k3\"}\n", true);
	fx_open(&f, &o, &err);
	fx_assert_err(&err, MP_OK, "");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_accept_optional_keys_absent)
{
	struct fx f;
	struct mp_error err;

	json_t *root;

	/* expert_pack.sha256 is the one optional key the validator reads;
	 * of source, only inventory_sha256 is read. */
	fx_setup(&f, &small_pack);
	root = fx_manifest_load(&f);
	ck_assert_ptr_null(fx_json_get(root, "expert_pack.sha256"));
	json_decref(root);
	fx_manifest_remove(&f, "source.summary");
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_accept_name_padding_ignored)
{
	struct fx f;
	struct mp_error err;
	unsigned char field[MP_ENTRY_NAME_LEN] = "blk.92.ffn_down_exps.weight";

	/* only the text up to the first NUL is the name */
	fx_setup(&f, &small_pack);
	memset(field + 28, 0xff, sizeof field - 28);
	fx_entry_set_name_raw(&f, COUNT - 1, field, sizeof field);
	fx_fix(&f, FX_FIX_INDEX);
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_accept_data_start_at_index_end)
{
	struct fx f;
	struct mp_error err;

	/* data_start need not be aligned; the payloads after it are */
	fx_setup(&f, &small_pack);
	fx_set_u64(&f, FX_HDR_DATA_START, INDEX_END);
	fx_manifest_set_int(&f, "expert_pack.data_start", INDEX_END);
	fx_fix(&f, FX_FIX_INDEX);
	fx_open(&f, NULL, &err);
	fx_assert_err(&err, MP_OK, "");
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_default_manifest_path)
{
	char *s = mp_pack_default_manifest_path("dir/x.pack");

	ck_assert_str_eq(s, "dir/x.pack.manifest.json");
	free(s);
	s = mp_pack_default_manifest_path("");
	ck_assert_str_eq(s, ".manifest.json");
	free(s);
}
END_TEST

START_TEST(test_lookup_not_found)
{
	struct fx f;
	struct mp_pack *p;
	struct mp_error err;
	uint64_t off = 7, len = 7;

	fx_setup(&f, &small_pack);
	ck_assert_int_eq(fx_open_pack(&f, NULL, &p, &err), MP_OK);
	ck_assert_int_eq(mp_pack_layer_index(p, 0), -1);
	ck_assert_int_eq(mp_pack_layer_index(p, 93), -1);
	ck_assert_int_eq(mp_pack_layer_index(p, UINT64_MAX), -1);
	ck_assert_int_eq(mp_pack_lookup(p, 0, 0, MP_ROLE_UP, &off, &len, &err),
			 MP_E_NOT_FOUND);
	fx_assert_err(&err, MP_E_NOT_FOUND, "layer 0");
	ck_assert_int_eq(mp_pack_lookup(p, 93, 0, MP_ROLE_UP, &off, &len, &err),
			 MP_E_NOT_FOUND);
	fx_assert_err(&err, MP_E_NOT_FOUND, "93");
	ck_assert_int_eq(mp_pack_lookup(p, 1, EXPERTS, MP_ROLE_UP, &off, &len, &err),
			 MP_E_NOT_FOUND);
	fx_assert_err(&err, MP_E_NOT_FOUND, "expert 2");
	ck_assert_int_eq(mp_pack_lookup(p, 1, 0, MP_ROLE_COUNT, &off, &len, &err),
			 MP_E_NOT_FOUND);
	fx_assert_err(&err, MP_E_NOT_FOUND, "role");
	mp_pack_close(p);
	fx_cleanup(&f);
}
END_TEST

/* Moves the pack's mtime while the full digest reads it. */
static void touch_during_digest(uint64_t done, uint64_t total, void *arg)
{
	const char *path = arg;
	struct timespec t[2] = {{0, UTIME_OMIT}, {12345, 0}};

	(void)total;
	if (done > 0)
		ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

/*
 * The identity a mount watches (mtime, ctime, links) is the file's as it was
 * opened, before validation read a byte: a change while a long verify=full
 * runs is seen as a change, not taken as the reference.
 */
START_TEST(test_identity_taken_before_reading)
{
	struct fx f;
	struct mp_pack *p;
	struct mp_open_opts o = {.full = true, .progress = touch_during_digest};
	struct mp_error err;
	struct stat before, after;

	fx_setup(&f, &(struct fx_pack_opts){.full_sha256 = true});
	o.progress_arg = f.pack;
	ck_assert_int_eq(stat(f.pack, &before), 0);
	ck_assert_int_eq(fx_open_pack(&f, &o, &p, &err), MP_OK);
	ck_assert_int_eq(stat(f.pack, &after), 0);
	ck_assert_int_eq(after.st_mtim.tv_sec, 12345); /* the callback ran */
	ck_assert_int_eq(p->file.mtime.tv_sec, before.st_mtim.tv_sec);
	ck_assert_int_eq(p->file.mtime.tv_nsec, before.st_mtim.tv_nsec);
	ck_assert_int_eq(p->file.ctime.tv_sec, before.st_ctim.tv_sec);
	ck_assert_int_eq(p->file.ctime.tv_nsec, before.st_ctim.tv_nsec);
	ck_assert_uint_eq(p->file.nlink, (uint64_t)before.st_nlink);
	mp_pack_close(p);
	fx_cleanup(&f);
}
END_TEST

/* ---- mp_manifest_with_path --------------------------------------------- */

/*
 * The mounted manifest of f's pack with expert_pack.path := path, parsed
 * back: the path must read back as given and nothing else may change, key
 * order included.  Returns the text (caller frees).
 */
static char *with_path_round_trip(const struct fx *f, const char *path)
{
	size_t len, out_len = 0;
	char *raw = fx_read_file(f->manifest, &len), *out = NULL;
	struct mp_error err = {0};
	json_t *before = json_loads(raw, 0, NULL), *after;
	bool surrogates = false;
	const char *k1, *k2;
	void *i1, *i2;

	ck_assert_ptr_nonnull(before);
	ck_assert_int_eq(mp_manifest_with_path(raw, len, path, &out, &out_len, &err), MP_OK);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(out_len, strlen(out));
	ck_assert_int_eq(mp_manifest_parse_ex(out, out_len, "mounted", &after, &surrogates,
					      &err), MP_OK);
	ck_assert(!surrogates);
	ck_assert_str_eq(json_string_value(fx_json_get(after, "expert_pack.path")), path);
	/* key order kept, at the top and inside expert_pack */
	for (i1 = json_object_iter(before), i2 = json_object_iter(after); i1 && i2;
	     i1 = json_object_iter_next(before, i1), i2 = json_object_iter_next(after, i2)) {
		k1 = json_object_iter_key(i1);
		k2 = json_object_iter_key(i2);
		ck_assert_str_eq(k1, k2);
	}
	ck_assert(!i1 && !i2);
	fx_json_set(before, "expert_pack.path", json_string(path));
	ck_assert_msg(json_equal(before, after), "values other than the path changed");
	json_decref(before);
	json_decref(after);
	free(raw);
	return out;
}

START_TEST(test_with_path_directory_or_not)
{
	static const char *const paths[] = {
		"/srv/models/k3.pack", "k3.pack", "./k3.pack", "../up/k3.pack", "/k3.pack",
		"models/k3.pack",
	};
	struct fx f;

	fx_setup(&f, &small_pack);
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
		/* taken as given: never made absolute, never resolved */
		char *out = with_path_round_trip(&f, paths[i]);

		free(out);
	}
	fx_cleanup(&f);
}
END_TEST

/* A pack named like a manifest is still just a path to record. */
START_TEST(test_with_path_manifest_name)
{
	struct fx f;
	char *out;

	fx_setup(&f, &small_pack);
	out = with_path_round_trip(&f, "/srv/k3.pack.manifest.json");
	ck_assert_ptr_nonnull(strstr(out, "\"path\": \"/srv/k3.pack.manifest.json\""));
	free(out);
	out = with_path_round_trip(&f, ".manifest.json");
	free(out);
	fx_cleanup(&f);
}
END_TEST

/*
 * PACK given a manifest: mp_pack_open(PACK.manifest.json) looks for
 * PACK.manifest.json.manifest.json and says what went wrong; with the
 * manifest named, or a pack path of another name, there is no such hint.
 */
START_TEST(test_pack_given_a_manifest)
{
	struct fx f;
	char missing[PATH_MAX + 16], other[PATH_MAX];
	struct mp_open_opts o = {0};
	struct mp_error err;

	fx_setup(&f, &small_pack);
	snprintf(missing, sizeof missing, "%s.manifest.json", f.manifest);
	ck_assert_int_eq(mp_pack_open(&(struct mp_pack *){NULL}, f.manifest, NULL, &err),
			 MP_E_MANIFEST_IO);
	fx_assert_err(&err, MP_E_MANIFEST_IO, missing, f.manifest,
		      "is a manifest: pass the pack, not its manifest");

	o.manifest_path = f.manifest;
	ck_assert_int_ne(mp_pack_open(&(struct mp_pack *){NULL}, f.manifest, &o, &err), MP_OK);
	ck_assert_ptr_null(strstr(err.msg, "pass the pack"));

	fx_path(&f, "other.pack", other, sizeof other);
	fx_write_file(other, "", 0);
	ck_assert_int_eq(mp_pack_open(&(struct mp_pack *){NULL}, other, NULL, &err),
			 MP_E_MANIFEST_IO);
	ck_assert_ptr_null(strstr(err.msg, "pass the pack"));
	fx_cleanup(&f);
}
END_TEST

/* 64 KiB paths (far past PATH_MAX: the text is not a file name to it). */
START_TEST(test_with_path_very_long)
{
	struct fx f;
	char *dirs = fx_repeat("directory/", 6554), *path, *out;
	size_t n = strlen(dirs);

	fx_setup(&f, &small_pack);
	path = malloc(n + 16);
	ck_assert_ptr_nonnull(path);
	snprintf(path, n + 16, "/%sk3.pack", dirs);
	ck_assert_uint_gt(strlen(path), 65536);
	out = with_path_round_trip(&f, path);
	free(out);
	/* one that escapes: every byte written as \" or \\ */
	free(path);
	path = fx_repeat("\"\\", 32768);
	out = with_path_round_trip(&f, path);
	ck_assert_uint_gt(strlen(out), 4 * 32768);
	free(out);
	free(path);
	free(dirs);
	fx_cleanup(&f);
}
END_TEST

/* Not UTF-8: \udcXX escapes that mp_manifest_parse_ex reads back as bytes. */
START_TEST(test_with_path_not_utf8)
{
	struct fx f;
	size_t len, out_len;
	char *raw, *out = NULL;
	struct mp_error err = {0};
	bool surrogates = false;
	json_t *root;

	fx_setup(&f, &small_pack);
	raw = fx_read_file(f.manifest, &len);
	ck_assert_int_eq(mp_manifest_with_path(raw, len, "/srv/\xff\xfe.pack", &out, &out_len,
					       &err), MP_OK);
	ck_assert_ptr_nonnull(strstr(out, "\"/srv/\\udcff\\udcfe.pack\""));
	ck_assert_int_eq(mp_manifest_parse_ex(out, out_len, "mounted", &root, &surrogates,
					      &err), MP_OK);
	ck_assert(surrogates);
	json_decref(root);
	free(out);
	free(raw);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_with_path_refused)
{
	static const struct {
		const char *text;
		enum mp_err code;
		const char *words;
	} cases[] = {
		{"{", MP_E_MANIFEST_JSON, "manifest"},
		{"", MP_E_MANIFEST_JSON, "manifest"},
		{"{}", MP_E_MANIFEST_TYPE, "expert_pack is not an object"},
		{"{\"expert_pack\": []}", MP_E_MANIFEST_TYPE, "expert_pack is not an object"},
		{"{\"expert_pack\": \"/x.pack\"}", MP_E_MANIFEST_TYPE, "expert_pack"},
	};

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *out = (char *)"untouched";
		size_t out_len = 7;
		struct mp_error err = {0};
		enum mp_err rc = mp_manifest_with_path(cases[i].text, strlen(cases[i].text),
						       "/x.pack", &out, &out_len, &err);

		ck_assert_msg(rc == cases[i].code, "%s: %s", cases[i].text, mp_err_name(rc));
		fx_assert_err_labeled(cases[i].text, &err, cases[i].code, cases[i].words);
		ck_assert_ptr_null(out);
	}
}
END_TEST

/* ---- model.config_sha256 against --config --------------------------------- */

/* The mismatch names both digests: the file's and the recorded one. */
START_TEST(test_config_mismatch_names_both)
{
	struct fx f;
	char cfg[PATH_MAX], msg[MP_MSG_MAX];
	struct mp_open_opts o = {.config_path = cfg};
	struct mp_error err;

	fx_setup(&f, &small_pack);
	fx_path(&f, "config.json", cfg, sizeof cfg);
	fx_write_file(cfg, "abc", 3);
	fx_manifest_set_str(&f, "model.config_sha256",
			    "0000000000000000000000000000000000000000000000000000000000000000");
	fx_open(&f, &o, &err);
	snprintf(msg, sizeof msg, "config SHA-256 does not match manifest: computed %s, "
		 "model.config_sha256 %s", SHA256_ABC,
		 "0000000000000000000000000000000000000000000000000000000000000000");
	fx_assert_err(&err, MP_E_CONFIG_DIGEST, "");
	ck_assert_str_eq(err.msg, msg);
	/* the same digest passes */
	fx_manifest_set_str(&f, "model.config_sha256", SHA256_ABC);
	EXPECT_OPEN(&f, &o, MP_OK, "");
	fx_cleanup(&f);
}
END_TEST

/*
 * With --config the recorded digest is read early (before the header), so
 * a malformed one wins over a header fault; without, the header fault is
 * reported first and any well-formed digest is accepted unchecked.
 */
START_TEST(test_config_recorded_value_with_and_without)
{
	struct fx f;
	char cfg[PATH_MAX];
	struct mp_open_opts o = {.config_path = cfg};
	struct mp_pack *p;
	struct mp_error err;

	fx_setup(&f, &small_pack);
	fx_path(&f, "config.json", cfg, sizeof cfg);
	fx_write_file(cfg, "abc", 3);
	fx_manifest_set_str(&f, "model.config_sha256",
			    "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
	fx_set_u32(&f, FX_HDR_VERSION, 2);
	fx_fix(&f, FX_FIX_INDEX);
	EXPECT_OPEN(&f, &o, MP_E_MANIFEST_VALUE, "model.config_sha256");
	EXPECT_OPEN(&f, NULL, MP_E_HEADER_VERSION, "version");
	fx_manifest_set_int(&f, "model.config_sha256", 7);
	EXPECT_OPEN(&f, &o, MP_E_MANIFEST_TYPE, "model.config_sha256");
	fx_manifest_remove(&f, "model.config_sha256");
	EXPECT_OPEN(&f, &o, MP_E_MANIFEST_MISSING, "model.config_sha256");

	/* no --config: another file's digest is kept as recorded */
	fx_set_u32(&f, FX_HDR_VERSION, MP_VERSION);
	fx_manifest_set_str(&f, "model.config_sha256", SHA256_ABC);
	fx_fix(&f, FX_FIX_INDEX);
	fx_write_file(cfg, "abd", 3);
	ck_assert_int_eq(fx_open_pack(&f, NULL, &p, &err), MP_OK);
	ck_assert_str_eq(p->kimi->config_sha256, SHA256_ABC);
	mp_pack_close(p);
	EXPECT_OPEN(&f, &o, MP_E_CONFIG_DIGEST, SHA256_ABC);
	fx_cleanup(&f);
}
END_TEST

/* An empty config and one of exactly 16 MiB are configs like any other. */
START_TEST(test_config_size_edges)
{
	struct fx f;
	char cfg[PATH_MAX], hex[MP_SHA256_HEX];
	struct mp_open_opts o = {.config_path = cfg};

	fx_setup(&f, &small_pack);
	fx_path(&f, "config.json", cfg, sizeof cfg);
	fx_write_file(cfg, "", 0);
	fx_manifest_set_str(&f, "model.config_sha256",
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	EXPECT_OPEN(&f, &o, MP_OK, "");
	ck_assert_int_eq(truncate(cfg, 16 << 20), 0);
	fx_sha256_file(cfg, hex);
	fx_manifest_set_str(&f, "model.config_sha256", hex);
	EXPECT_OPEN(&f, &o, MP_OK, "");
	fx_cleanup(&f);
}
END_TEST

/* ---- header encode / decode -------------------------------------------- */

START_TEST(test_header_codec_round_trip)
{
	static const uint64_t counts[] = {0, 1, 552, UINT64_C(0x0123456789abcdef), UINT64_MAX};
	unsigned char raw[MP_HEADER_SIZE], again[MP_HEADER_SIZE];
	struct mp_header h;

	for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
		uint64_t ds = ~counts[i];

		memset(raw, 0xa5, sizeof raw);
		mp_header_encode(raw, counts[i], ds);
		ck_assert_mem_eq(raw, MP_MAGIC "\0\0", MP_MAGIC_LEN);
		for (int b = 0; b < 8; b++) {
			ck_assert_uint_eq(raw[FX_HDR_INDEX_COUNT + b], (counts[i] >> (8 * b)) & 255);
			ck_assert_uint_eq(raw[FX_HDR_DATA_START + b], (ds >> (8 * b)) & 255);
		}
		ck_assert_mem_eq(raw + FX_HDR_VERSION, "\1\0\0\0(\0\0\0", 8);
		mp_header_decode(raw, &h);
		ck_assert_mem_eq(h.magic, MP_MAGIC "\0\0", MP_MAGIC_LEN);
		ck_assert_uint_eq(h.version, MP_VERSION);
		ck_assert_uint_eq(h.header_size, MP_HEADER_SIZE);
		ck_assert_uint_eq(h.index_count, counts[i]);
		ck_assert_uint_eq(h.data_start, ds);
		mp_header_encode(again, h.index_count, h.data_start);
		ck_assert_mem_eq(again, raw, MP_HEADER_SIZE);
	}
	/* decode takes every field as it is, little-endian */
	for (int b = 0; b < MP_HEADER_SIZE; b++)
		raw[b] = (unsigned char)(b + 1);
	mp_header_decode(raw, &h);
	ck_assert_mem_eq(h.magic, raw, MP_MAGIC_LEN);
	ck_assert_uint_eq(h.version, 0x14131211);
	ck_assert_uint_eq(h.header_size, 0x18171615);
	ck_assert_uint_eq(h.index_count, UINT64_C(0x201f1e1d1c1b1a19));
	ck_assert_uint_eq(h.data_start, UINT64_C(0x2827262524232221));
}
END_TEST

START_TEST(test_entry_codec_round_trip)
{
	unsigned char raw[MP_ENTRY_SIZE];
	char name[200];
	struct mp_entry e;

	memset(raw, 0xa5, sizeof raw);
	mp_entry_encode(raw, "blk.92.ffn_down_exps.weight", -2, UINT64_MAX - 1,
			UINT64_C(1) << 40);
	mp_entry_decode(raw, &e);
	ck_assert_str_eq((const char *)e.name, "blk.92.ffn_down_exps.weight");
	for (size_t i = strlen("blk.92.ffn_down_exps.weight"); i < MP_ENTRY_NAME_LEN; i++)
		ck_assert_uint_eq(e.name[i], 0);
	ck_assert_int_eq(e.expert, -2);
	ck_assert_uint_eq(e.reserved, 0);
	ck_assert_uint_eq(e.offset, UINT64_MAX - 1);
	ck_assert_uint_eq(e.nbytes, UINT64_C(1) << 40);
	/* a name too long keeps 127 bytes and its NUL */
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	mp_entry_encode(raw, name, 0, 0, 0);
	mp_entry_decode(raw, &e);
	ck_assert_uint_eq(e.name[MP_ENTRY_NAME_LEN - 2], 'n');
	ck_assert_uint_eq(e.name[MP_ENTRY_NAME_LEN - 1], 0);
}
END_TEST

/*
 * Each header field the validator refuses, written over a valid header
 * that mp_header_encode made of the pack's own values (which opens).
 */
START_TEST(test_header_encoded_fields_refused)
{
	static const struct {
		unsigned at, width;
		uint64_t value;
		enum mp_err code;
		const char *words;
	} cases[] = {
		{FX_HDR_MAGIC, 1, 'g', MP_E_HEADER_MAGIC, "magic"},
		{FX_HDR_MAGIC + 12, 1, '2', MP_E_HEADER_MAGIC, "magic"},
		{FX_HDR_MAGIC + 15, 1, ' ', MP_E_HEADER_MAGIC, "three NUL bytes"},
		{FX_HDR_VERSION, 4, 0, MP_E_HEADER_VERSION, "version is 0"},
		{FX_HDR_VERSION, 4, UINT32_MAX, MP_E_HEADER_VERSION, "4294967295"},
		{FX_HDR_HEADER_SIZE, 4, 39, MP_E_HEADER_SIZE, "header_size is 39"},
		{FX_HDR_HEADER_SIZE, 4, 0, MP_E_HEADER_SIZE, "header_size is 0"},
		{FX_HDR_INDEX_COUNT, 8, COUNT + 1, MP_E_INDEX_COUNT, "index_count"},
		{FX_HDR_INDEX_COUNT, 8, 0, MP_E_INDEX_COUNT, "index_count is 0"},
		{FX_HDR_DATA_START, 8, 0, MP_E_DATA_START, "data_start is 0"},
		{FX_HDR_DATA_START, 8, UINT64_MAX, MP_E_DATA_START, "data_start"},
	};
	unsigned char raw[MP_HEADER_SIZE];
	uint64_t data_start;
	struct fx f;

	fx_setup(&f, &small_pack);
	data_start = fx_get_u64(&f, FX_HDR_DATA_START);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char label[32];
		struct mp_error err;

		mp_header_encode(raw, COUNT, data_start);
		fx_pwrite(&f, 0, raw, sizeof raw);
		fx_fix(&f, FX_FIX_INDEX);
		EXPECT_OPEN(&f, NULL, MP_OK, "");
		fx_put_le(raw + cases[i].at, cases[i].value, cases[i].width);
		fx_pwrite(&f, 0, raw, sizeof raw);
		fx_fix(&f, FX_FIX_INDEX);
		fx_open(&f, NULL, &err);
		snprintf(label, sizeof label, "case %zu", i);
		fx_assert_err_labeled(label, &err, cases[i].code, cases[i].words);
	}
	fx_cleanup(&f);
}
END_TEST

static TCase *manifest_tcase(void)
{
	TCase *tc = tcase_create("manifest");

	tcase_add_loop_test(tc, test_manifest_faults, 0, N_BATCHES);
	tcase_add_test(tc, test_active_layers_1_to_91);
	tcase_add_test(tc, test_active_layers_0_to_91);
	tcase_add_test(tc, test_active_layers_2_to_93);
	tcase_add_test(tc, test_active_layers_1_to_93);
	tcase_add_test(tc, test_expect_layers);
	tcase_add_test(tc, test_expect_experts);
	tcase_add_test(tc, test_k3_runtime_shapes);
	tcase_add_test(tc, test_k3_expected_small_geometry);
	tcase_add_test(tc, test_order_expect_layers_before_experts);
	tcase_add_test(tc, test_order_expect_before_active_layers);
	tcase_add_test(tc, test_config_digest_mismatch);
	tcase_add_test(tc, test_config_digest_required);
	tcase_add_test(tc, test_config_unreadable);
	tcase_add_test(tc, test_order_config_before_active_layers);
	tcase_add_test(tc, test_config_size_untrusted);
	tcase_add_test(tc, test_config_errors_without_error_pointer);
	tcase_add_test(tc, test_config_too_large);
	tcase_add_test(tc, test_role_sizes_sum_wraps);
	tcase_add_test(tc, test_path_elsewhere);
	tcase_add_test(tc, test_path_relative_to_manifest);
	tcase_add_test(tc, test_path_through_symlinks);
	return tc;
}

static TCase *files_tcase(void)
{
	TCase *tc = tcase_create("files");

	tcase_add_test(tc, test_pack_missing);
	tcase_add_test(tc, test_manifest_missing);
	tcase_add_test(tc, test_manifest_explicit_path_missing);
	tcase_add_test(tc, test_manifest_is_directory);
	tcase_add_test(tc, test_manifest_too_large);
	tcase_add_test(tc, test_manifest_16mib_accepted);
	tcase_add_test(tc, test_manifest_too_deep);
	tcase_add_test(tc, test_manifest_colons_not_json);
	tcase_add_test(tc, test_manifest_too_many_values);
	tcase_add_test(tc, test_manifest_tree_too_large);
	tcase_add_test(tc, test_manifest_real_inventory_accepted);
	tcase_add_test(tc, test_manifest_limits_at_the_edge);
	tcase_add_test(tc, test_path_surrogate_escapes);
	tcase_add_test(tc, test_path_surrogates_and_private_use);
	tcase_add_test(tc, test_manifest_not_json);
	tcase_add_test(tc, test_manifest_empty);
	tcase_add_test(tc, test_manifest_top_level_array);
	tcase_add_test(tc, test_manifest_top_level_scalar);
	tcase_add_test(tc, test_order_manifest_before_header);
	return tc;
}

static TCase *header_tcase(void)
{
	TCase *tc = tcase_create("header");

	tcase_add_test(tc, test_header_short);
	tcase_add_test(tc, test_header_magic);
	tcase_add_test(tc, test_header_magic_padding);
	tcase_add_test(tc, test_header_version);
	tcase_add_test(tc, test_header_size);
	tcase_add_test(tc, test_header_index_count);
	tcase_add_test(tc, test_header_index_count_huge);
	tcase_add_test(tc, test_header_data_start);
	tcase_add_test(tc, test_index_truncated);
	tcase_add_test(tc, test_index_truncated_huge_count);
	tcase_add_test(tc, test_data_start_inside_index);
	tcase_add_test(tc, test_order_header_fields);
	tcase_add_test(tc, test_order_data_start_before_truncation);
	return tc;
}

static TCase *entries_tcase(void)
{
	TCase *tc = tcase_create("entries");

	tcase_add_test(tc, test_entry_name_wrong_role);
	tcase_add_test(tc, test_entry_name_wrong_layer);
	tcase_add_test(tc, test_entry_name_leading_zero);
	tcase_add_test(tc, test_entry_name_non_ascii_digit);
	tcase_add_test(tc, test_entry_name_no_nul);
	tcase_add_test(tc, test_entry_name_trailing_text);
	tcase_add_test(tc, test_entry_expert);
	tcase_add_test(tc, test_entry_reserved);
	tcase_add_test(tc, test_entry_nbytes);
	tcase_add_test(tc, test_entry_misaligned);
	tcase_add_test(tc, test_entry_overlap);
	tcase_add_test(tc, test_entry_out_of_bounds);
	tcase_add_test(tc, test_entry_offset_overflow);
	tcase_add_test(tc, test_entry_not_contiguous);
	tcase_add_test(tc, test_entry_roles_physically_swapped);
	tcase_add_test(tc, test_trailing_bytes);
	tcase_add_test(tc, test_index_digest);
	tcase_add_test(tc, test_index_digest_covers_ignored_name_bytes);
	tcase_add_test(tc, test_full_digest_missing);
	tcase_add_test(tc, test_full_digest_mismatch);
	tcase_add_test(tc, test_order_entry_before_digest);
	tcase_add_test(tc, test_order_first_index_wins);
	tcase_add_test(tc, test_order_within_entry);
	tcase_add_test(tc, test_order_entries_before_trailing);
	tcase_add_test(tc, test_order_trailing_before_digest);
	tcase_add_test(tc, test_order_index_digest_before_full);
	return tc;
}

static TCase *accepted_tcase(void)
{
	TCase *tc = tcase_create("accepted");

	tcase_add_test(tc, test_accept_default);
	tcase_add_test(tc, test_accept_page_aligned);
	tcase_add_test(tc, test_accept_gaps);
	tcase_add_test(tc, test_accept_full_digest);
	tcase_add_test(tc, test_accept_expectations_and_config);
	tcase_add_test(tc, test_accept_optional_keys_absent);
	tcase_add_test(tc, test_accept_name_padding_ignored);
	tcase_add_test(tc, test_accept_data_start_at_index_end);
	tcase_add_test(tc, test_lookup_not_found);
	tcase_add_test(tc, test_default_manifest_path);
	tcase_add_test(tc, test_identity_taken_before_reading);
	return tc;
}

/* ---- mp_manifest_path_span ---------------------------------------------- */

/* The span of expert_pack.path in text, as the bytes it covers. */
static char *span_text(const char *text, enum mp_err want)
{
	struct mp_text_span sp = {0, 0};
	struct mp_error err = {0};
	enum mp_err rc = mp_manifest_path_span(text, strlen(text), "m.json", &sp, &err);

	ck_assert_msg(rc == want, "%s: %s (%d, want %d)", text, err.msg, rc, want);
	if (rc)
		return NULL;
	ck_assert_uint_le(sp.end, strlen(text));
	return strndup(text + sp.start, sp.end - sp.start);
}

START_TEST(test_path_span_finds_the_member)
{
	static const struct { const char *text, *want; } cases[] = {
		{"{\"expert_pack\":{\"path\":\"/a.pack\"}}", "\"/a.pack\""},
		{" \n{ \"expert_pack\" : { \"size\" : 1 , \"path\"\t:\r\"x\" } } \n", "\"x\""},
		/* names are compared decoded */
		{"{\"expert_pack\":{\"p\\u0061th\":\"/u\"}}", "\"/u\""},
		{"{\"\\u0065xpert_pack\":{\"path\":\"/e\"}}", "\"/e\""},
		/* decoys: another object's path, a path inside a string, nesting */
		{"{\"a\":{\"expert_pack\":{\"path\":\"/no\"}},\"expert_pack\":{\"x\":"
		 "{\"path\":\"/no\"},\"s\":\"\\\"}{\\\"path\\\":\",\"path\":\"/yes\",\"l\":[1,{\"path\":2}]}}",
		 "\"/yes\""},
		/* escapes inside the value are the value's */
		{"{\"expert_pack\":{\"path\":\"/a\\\"b\\\\c\\udcff\"}}", "\"/a\\\"b\\\\c\\udcff\""},
		/* paths, pathx: other names */
		{"{\"expert_pack\":{\"paths\":1,\"pat\":2,\"path\":\"p\"}}", "\"p\""},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = span_text(cases[i].text, MP_OK);

		ck_assert_str_eq(got, cases[i].want);
		free(got);
	}
}
END_TEST

START_TEST(test_path_span_refusals)
{
	static const struct { const char *text; enum mp_err want; } cases[] = {
		{"{}", MP_E_MANIFEST_MISSING},
		{"{\"expert_pack\":{}}", MP_E_MANIFEST_MISSING},
		{"{\"expert_pack\":{\"paths\":\"x\"}}", MP_E_MANIFEST_MISSING},
		{"{\"expert_pack\":[]}", MP_E_MANIFEST_TYPE},
		{"{\"expert_pack\":{\"path\":1}}", MP_E_MANIFEST_TYPE},
		{"{\"expert_pack\":{\"path\":null}}", MP_E_MANIFEST_TYPE},
		{"[]", MP_E_MANIFEST_TYPE},
		{"", MP_E_MANIFEST_TYPE},
		{"{\"expert_pack\":{\"path\":\"a\",\"p\\u0061th\":\"b\"}}", MP_E_MANIFEST_JSON},
		{"{\"expert_pack\":{\"path\":\"a\"},\"expert_pack\":{}}", MP_E_MANIFEST_JSON},
		{"{\"expert_pack\":{\"path\":\"a\"}} x", MP_E_MANIFEST_JSON},
		{"{\"expert_pack\":{\"path\":\"a\"}}}", MP_E_MANIFEST_JSON},
		{"{\"expert_pack\" {\"path\":\"a\"}}", MP_E_MANIFEST_JSON},
		{"{\"expert_pack\":{\"path\":\"a\" \"b\":1}}", MP_E_MANIFEST_JSON},
		{"{\"x\":,\"expert_pack\":{\"path\":\"a\"}}", MP_E_MANIFEST_JSON},
		{"{\"x\":]}", MP_E_MANIFEST_JSON},
		{"{1:2}", MP_E_MANIFEST_JSON},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		free(span_text(cases[i].text, cases[i].want));
}
END_TEST

/* Every prefix of a manifest (a truncated file): refused, never read past. */
START_TEST(test_path_span_truncated)
{
	struct fx f;
	size_t len, last;
	char *raw;

	fx_setup(&f, NULL);
	raw = fx_read_file(f.manifest, &len);
	last = (size_t)(strrchr(raw, '}') - raw); /* the top level's end */
	for (size_t n = 0; n < len; n++) {
		/* a copy of exactly n bytes: ASan sees any read past them */
		char *cut = malloc(n ? n : 1);
		struct mp_text_span sp;
		struct mp_error err = {0};

		memcpy(cut, raw, n);
		/* only a prefix that holds the closing brace is whole */
		if (n <= last)
			ck_assert_int_ne(mp_manifest_path_span(cut, n, "m", &sp, &err), MP_OK);
		else
			ck_assert_int_eq(mp_manifest_path_span(cut, n, "m", &sp, &err), MP_OK);
		free(cut);
	}
	free(raw);
	fx_cleanup(&f);
}
END_TEST

/* Splicing changes the path's bytes and nothing else; the digest without
 * the path does not see it, and sees any other byte. */
START_TEST(test_path_splice_and_digest)
{
	struct fx f;
	struct mp_text_span sp, sp2;
	struct mp_error err = {0};
	unsigned char d1[MP_SHA256_LEN], d2[MP_SHA256_LEN], d3[MP_SHA256_LEN];
	size_t len, out_len;
	char *raw, *out, *quoted;
	json_t *root;

	fx_setup(&f, NULL);
	raw = fx_read_file(f.manifest, &len);
	ck_assert_int_eq(mp_manifest_path_span(raw, len, "m", &sp, &err), MP_OK);
	ck_assert_int_eq(mp_manifest_splice_path(raw, len, &sp, "/new/\"q\"\xff.pack", &out,
						 &out_len, &err), MP_OK);
	ck_assert_uint_eq(out_len, strlen(out));
	ck_assert_int_eq(memcmp(out, raw, sp.start), 0);
	ck_assert_int_eq(mp_manifest_path_span(out, out_len, "m", &sp2, &err), MP_OK);
	ck_assert_uint_eq(sp2.start, sp.start);
	ck_assert_uint_eq(out_len - sp2.end, len - sp.end);
	ck_assert_int_eq(memcmp(out + sp2.end, raw + sp.end, len - sp.end), 0);
	quoted = strndup(out + sp2.start, sp2.end - sp2.start);
	ck_assert_str_eq(quoted, "\"/new/\\\"q\\\"\\udcff.pack\"");
	free(quoted);
	ck_assert_int_eq(mp_manifest_parse(out, out_len, "m", &root, &err), MP_OK);
	json_decref(root);
	ck_assert_int_eq(mp_manifest_sha256_without_path(raw, len, &sp, d1, &err), MP_OK);
	ck_assert_int_eq(mp_manifest_sha256_without_path(out, out_len, &sp2, d2, &err), MP_OK);
	ck_assert_mem_eq(d1, d2, MP_SHA256_LEN);
	out[sp2.end + 3] ^= 1;
	ck_assert_int_eq(mp_manifest_sha256_without_path(out, out_len, &sp2, d3, &err), MP_OK);
	ck_assert_mem_ne(d1, d3, MP_SHA256_LEN);
	free(out);
	free(raw);
	fx_cleanup(&f);
}
END_TEST

static TCase *path_span_tcase(void)
{
	TCase *tc = tcase_create("path_span");

	tcase_add_test(tc, test_path_span_finds_the_member);
	tcase_add_test(tc, test_path_span_refusals);
	tcase_add_test(tc, test_path_span_truncated);
	tcase_add_test(tc, test_path_splice_and_digest);
	return tc;
}

static TCase *with_path_tcase(void)
{
	TCase *tc = tcase_create("with_path");

	tcase_add_test(tc, test_with_path_directory_or_not);
	tcase_add_test(tc, test_with_path_manifest_name);
	tcase_add_test(tc, test_pack_given_a_manifest);
	tcase_add_test(tc, test_with_path_very_long);
	tcase_add_test(tc, test_with_path_not_utf8);
	tcase_add_test(tc, test_with_path_refused);
	return tc;
}

static TCase *config_tcase(void)
{
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, test_config_mismatch_names_both);
	tcase_add_test(tc, test_config_recorded_value_with_and_without);
	tcase_add_test(tc, test_config_size_edges);
	return tc;
}

static TCase *codec_tcase(void)
{
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_header_codec_round_trip);
	tcase_add_test(tc, test_entry_codec_round_trip);
	tcase_add_test(tc, test_header_encoded_fields_refused);
	return tc;
}

static Suite *validate_suite(void)
{
	Suite *s = suite_create("validate");

	suite_add_tcase(s, manifest_tcase());
	suite_add_tcase(s, files_tcase());
	suite_add_tcase(s, header_tcase());
	suite_add_tcase(s, entries_tcase());
	suite_add_tcase(s, accepted_tcase());
	suite_add_tcase(s, with_path_tcase());
	suite_add_tcase(s, path_span_tcase());
	suite_add_tcase(s, config_tcase());
	suite_add_tcase(s, codec_tcase());
	return s;
}

const struct fx_suite_def fx_suite = {.make = validate_suite};
