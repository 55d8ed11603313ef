/*
 * format.h - the fixed facts of the Kimi pack format, GGMLMOEPACKv1
 * (moepack-pack(5)).
 *
 * Magic, header and entry sizes, the roles' GGML types and order, the
 * bounds the reference loader sets, Kimi-K3's geometry.  Included by the
 * Kimi format's own folders only (src/LAYERS).
 */
#ifndef MOEPACK_KIMI_FORMAT_H
#define MOEPACK_KIMI_FORMAT_H

#include "pack/role.h"

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
#define MP_MAX_EXPERTS 65536u /* sanity bound on model.num_experts */
/* Kimi K3: experts per layer, and the runtime's expert geometry. */
#define MP_K3_EXPERTS 896
#define MP_K3_HIDDEN 3584 /* row length of up and gate */
#define MP_K3_INTER 3072  /* row length of down */

/* The roles lie in an object in enum mp_role's order: up, gate, down. */
_Static_assert(MP_ENTRY_NAME_LEN + 1 <= MP_PACK_TENSOR_NAME_MAX, "tensor names fit");

/*
 * The one role table: the GGML type id each role must have (up and gate
 * Q2_K, down Q3_K), for the validator, mkdemo, build and their manifests.
 */
extern const int mp_role_dtype[MP_ROLE_COUNT];

/*
 * The Kimi format's object generation of (layer, expert), the reference
 * loader's cache generation: the first 8 bytes, little-endian, of
 * SHA-256("<index_sha256>:<layer>:<expert>"), or 1 if that is 0.  Read it
 * through mp_pack_generation() outside the format.
 */
uint64_t mp_object_generation(const char *index_sha256_hex, uint64_t layer_id,
			      uint64_t expert);

#endif
