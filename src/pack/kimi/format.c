/* format.c - the Kimi format's role types and its objects' generations. */
#include "config.h"

#include "pack/kimi/format.h"

#include <stdio.h>
#include <string.h>

#include "base/errors.h"
#include "base/le.h"
#include "pack/digest.h"
#include "base/quant.h"
#include "base/text.h"

const int mp_role_dtype[MP_ROLE_COUNT] = {
	[MP_ROLE_UP] = MP_GGML_Q2_K,
	[MP_ROLE_GATE] = MP_GGML_Q2_K,
	[MP_ROLE_DOWN] = MP_GGML_Q3_K,
};

uint64_t mp_object_generation(const char *index_sha256_hex, uint64_t layer_id, uint64_t expert)
{
	char text[MP_SHA256_HEX + 48];
	unsigned char d[MP_SHA256_LEN];
	int n = snprintf(text, sizeof text, "%s:%llu:%llu", index_sha256_hex,
			 (unsigned long long)layer_id, (unsigned long long)expert);
	uint64_t g;

	mp_sha256_buf(text, (size_t)n, d);
	g = mp_le64(d);
	return g ? g : 1;
}
