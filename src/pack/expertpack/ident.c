/* epident.c - the model identity and object generations of SGLang's builder. */
#include "config.h"

#include "pack/expertpack/ident.h"

#include <stdio.h>

#include "base/le.h"

void mp_ep_model_identity(const char source_hex[MP_SHA256_HEX],
			  const char config_hex[MP_SHA256_HEX], unsigned char out[MP_SHA256_LEN])
{
	char text[sizeof MP_EP_IDENTITY_PREFIX + 2 * MP_SHA256_HEX + 2];
	int n = snprintf(text, sizeof text, MP_EP_IDENTITY_PREFIX ":%s:%s", source_hex,
			 config_hex);

	mp_sha256_buf(text, (size_t)n, out);
}

uint64_t mp_ep_generation(const char model_hex[MP_SHA256_HEX],
			  const char source_hex[MP_SHA256_HEX], uint64_t layer, uint64_t expert)
{
	char text[2 * MP_SHA256_HEX + 48];
	unsigned char d[MP_SHA256_LEN];
	int n = snprintf(text, sizeof text, "%s:%s:%llu:%llu", model_hex, source_hex,
			 (unsigned long long)layer, (unsigned long long)expert);
	uint64_t gen;

	mp_sha256_buf(text, (size_t)n, d);
	gen = mp_le64(d);
	return gen ? gen : 1;
}
