/*
 * pack.c - what a validated pack answers: where an object or role lies,
 * the object generation, the default manifest path, and whether a digest
 * of the whole file is the manifest's.  No I/O; validate.c and manifest.c
 * both build on these.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/outfile.h"
#include "pack/digest.h"
#include "pack/index.h"
#include "pack/pack.h"

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

long mp_pack_layer_index(const struct mp_pack *pack, uint64_t layer_id)
{
	/* Validation guarantees the active layers are exactly 1..92 in order. */
	if (layer_id < MP_ACTIVE_FIRST || layer_id - MP_ACTIVE_FIRST >= pack->m.layer_count)
		return -1;
	return (long)(layer_id - MP_ACTIVE_FIRST);
}

enum mp_err mp_pack_lookup(const struct mp_pack *pack, uint64_t layer_id, uint64_t expert,
			   enum mp_role role, uint64_t *offset, uint64_t *nbytes,
			   struct mp_error *err)
{
	long li = mp_pack_layer_index(pack, layer_id);

	if (li < 0)
		return mp_fail(err, MP_E_NOT_FOUND, "no such entry: layer %llu is not an active "
			       "MoE layer (%u..%u)", (unsigned long long)layer_id,
			       pack->m.layer_ids[0], pack->m.layer_ids[pack->m.layer_count - 1]);
	if (expert >= pack->m.num_experts)
		return mp_fail(err, MP_E_NOT_FOUND, "no such entry: expert %llu is out of range "
			       "(0..%llu)", (unsigned long long)expert,
			       (unsigned long long)pack->m.num_experts - 1);
	if ((unsigned)role >= MP_ROLE_COUNT)
		return mp_fail(err, MP_E_NOT_FOUND, "no such entry: role %d", (int)role);
	mp_pack_role_range(pack, mp_pack_object(pack, (uint64_t)li, expert), role, offset,
			   nbytes);
	return MP_OK;
}

void mp_pack_object_range(const struct mp_pack *pack, uint64_t object, uint64_t *offset,
			  uint64_t *nbytes)
{
	*offset = pack->object_offset[object];
	*nbytes = pack->m.object_bytes;
}

char *mp_pack_default_manifest_path(const char *pack_path)
{
	return mp_path_with_suffix(pack_path, ".manifest.json");
}

enum mp_err mp_pack_check_digest(const struct mp_pack *pack,
				 const unsigned char sha256[MP_SHA256_LEN],
				 struct mp_error *err)
{
	char computed[MP_SHA256_HEX];

	if (!pack->m.sha256[0])
		return mp_fail(err, MP_E_FULL_DIGEST_MISSING,
			       "full SHA-256 requested but the manifest has no "
			       "expert_pack.sha256: %s",
			       pack->manifest_path);
	mp_sha256_hex(sha256, computed);
	if (strcmp(computed, pack->m.sha256) != 0)
		return mp_fail(err, MP_E_FULL_DIGEST,
			       "pack SHA-256 does not match manifest: computed %s, "
			       "expert_pack.sha256 %s",
			       computed, pack->m.sha256);
	return MP_OK;
}
