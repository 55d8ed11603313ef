/*
 * format.h - the fixed facts of the pack format (moepack-pack(5)).
 *
 * Magic, header and entry sizes, the roles and their GGML types, the
 * bounds the reference loader sets.  Every other header of src/pack that
 * needs only these facts includes this one, not pack.h.
 */
#ifndef MOEPACK_FORMAT_H
#define MOEPACK_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define MP_MAGIC "GGMLMOEPACKv1" /* followed by three NUL bytes */
#define MP_MAGIC_LEN 16
#define MP_VERSION 1
#define MP_HEADER_SIZE 40
#define MP_ENTRY_SIZE 152
#define MP_ENTRY_NAME_LEN 128
#define MP_TOP_K 16
#define MP_FORMAT "SGLANG-KIMI-GGMLMOEPACK-ADAPTER-v1"
#define MP_ACTIVE_FIRST 1  /* the reference loader wants layers 1..92 */
#define MP_ACTIVE_LAST 92
/* Kimi K3's config num_hidden_layers: layer 0 is dense, 1..92 are MoE */
#define MP_K3_HIDDEN_LAYERS (MP_ACTIVE_LAST + 1)
#define MP_MAX_SHAPE 8
#define MP_MAX_EXPERTS 65536u /* sanity bound on model.num_experts */
#define MP_PAGE 4096
/* Kimi K3: experts per layer, and the runtime's expert geometry. */
#define MP_K3_EXPERTS 896
#define MP_K3_HIDDEN 3584 /* row length of up and gate */
#define MP_K3_INTER 3072  /* row length of down */

/* Physical role order inside one expert object. */
enum mp_role { MP_ROLE_UP, MP_ROLE_GATE, MP_ROLE_DOWN, MP_ROLE_COUNT };

/*
 * MP_E_HEADER_MAGIC unless the n bytes of field are magic's (its NULs
 * included): "bad pack magic<note>: header magic is "<field>", must be
 * <must>", the field shown up to its last byte that is not NUL, NULs
 * among them as \x00, escaped, so that it never looks like the magic.
 * n is at most 32.
 */
struct mp_error;
enum mp_err mp_check_magic(const unsigned char *field, const char *magic, size_t n,
			   const char *note, const char *must, struct mp_error *err);

/* "up", "gate", "down"; NULL for anything else. */
const char *mp_role_name(enum mp_role role);
/* MP_ROLE_COUNT when name is not a role. */
enum mp_role mp_role_from_name(const char *name);

/*
 * The one role table: the GGML type id each role must have (up and gate
 * Q2_K, down Q3_K), for the validator, mkdemo, build and their manifests.
 */
extern const int mp_role_dtype[MP_ROLE_COUNT];

/* Tensor name of a role at a layer: "blk.17.ffn_up_exps.weight". */
int mp_tensor_name(char *buf, size_t len, uint64_t layer_id, enum mp_role role);

#endif
