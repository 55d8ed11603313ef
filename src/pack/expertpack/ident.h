/*
 * epident.h - the identities SGLang's expert-pack builder derives from its
 * inputs (moepack-pack(5), SGLANG-EXPERTPACK-v1, "Digests").
 *
 * The validator never recomputes them (the reference does not either); the
 * writer computes them here, once, from the digests of the source GGUF and
 * of config.json.
 */
#ifndef MOEPACK_EPIDENT_H
#define MOEPACK_EPIDENT_H

#include <stdint.h>

#include "pack/digest.h"

/* The text the model identity hashes: "sglang-deepseek-expert-pack-v1:" */
#define MP_EP_IDENTITY_PREFIX "sglang-deepseek-expert-pack-v1"

/*
 * model_identity_sha256 = SHA-256 of the ASCII text
 * "sglang-deepseek-expert-pack-v1:<source_hex>:<config_hex>" (lower-case
 * hex digests of the GGUF file and of config.json).
 */
void mp_ep_model_identity(const char source_hex[MP_SHA256_HEX],
			  const char config_hex[MP_SHA256_HEX], unsigned char out[MP_SHA256_LEN]);

/*
 * The generation of object (layer, expert): the first 8 bytes, little-
 * endian, of SHA-256 of "<model_hex>:<source_hex>:<layer>:<expert>" (pack
 * layer, 0-based), 1 where that is 0.
 */
uint64_t mp_ep_generation(const char model_hex[MP_SHA256_HEX],
			  const char source_hex[MP_SHA256_HEX], uint64_t layer, uint64_t expert);

#endif
