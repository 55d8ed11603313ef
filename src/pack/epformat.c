/* epformat.c - SGLang expert-pack records: decoding, role and tensor names. */
#include "config.h"

#include "pack/epformat.h"

#include <stdio.h>
#include <string.h>

#include "base/le.h"

void mp_ep_header_decode(const unsigned char raw[MP_EP_HEADER_SIZE], struct mp_ep_header *h)
{
	memcpy(h->magic, raw, MP_EP_MAGIC_LEN);
	h->version = mp_le32(raw + 24);
	h->header_bytes = mp_le32(raw + 28);
	h->entry_bytes = mp_le32(raw + 32);
	h->flags = mp_le32(raw + 36);
	h->index_count = mp_le64(raw + 40);
	h->data_start = mp_le64(raw + 48);
	h->alignment = mp_le64(raw + 56);
	h->num_layers = mp_le32(raw + 64);
	h->num_experts = mp_le32(raw + 68);
	h->top_k = mp_le32(raw + 72);
	h->role_count = mp_le32(raw + 76);
	memcpy(h->model_identity_sha256, raw + 80, 32);
	memcpy(h->source_blob_sha256, raw + 112, 32);
	memcpy(h->config_sha256, raw + 144, 32);
}

void mp_ep_entry_decode(const unsigned char raw[MP_EP_ENTRY_SIZE], struct mp_ep_entry *e)
{
	e->layer = mp_le16(raw);
	e->expert = mp_le16(raw + 2);
	e->role_id = raw[4];
	e->rank = raw[5];
	e->dtype_id = mp_le16(raw + 6);
	memcpy(e->dtype, raw + MP_EP_DTYPE_AT, MP_EP_DTYPE_LEN);
	memcpy(e->tensor_name, raw + MP_EP_NAME_AT, MP_EP_NAME_LEN);
	e->source_tensor_offset = mp_le64(raw + 104);
	e->source_tensor_nbytes = mp_le64(raw + 112);
	e->source_slice_offset = mp_le64(raw + 120);
	e->source_slice_nbytes = mp_le64(raw + 128);
	e->pack_offset = mp_le64(raw + 136);
	e->pack_nbytes = mp_le64(raw + 144);
	memcpy(e->source_tensor_sha256, raw + 152, 32);
	memcpy(e->source_slice_sha256, raw + 184, 32);
	memcpy(e->checksum, raw + 216, 32);
	for (int i = 0; i < MP_EP_MAX_RANK; i++)
		e->shape[i] = mp_le64(raw + 248 + 8 * i);
	memcpy(e->quant_scheme, raw + MP_EP_QUANT_AT, MP_EP_DTYPE_LEN);
	memcpy(e->transform_id, raw + MP_EP_TRANSFORM_AT, MP_EP_DTYPE_LEN);
	e->block_size = mp_le64(raw + 312);
	e->generation = mp_le64(raw + 320);
}

size_t mp_ep_text_len(const unsigned char *field, size_t len)
{
	const unsigned char *nul = memchr(field, 0, len);

	return nul ? (size_t)(nul - field) : len;
}

static const char *const role_names[MP_EP_ROLES] = {"gate", "up", "down"};

const char *mp_ep_role_name(unsigned role)
{
	return role < MP_EP_ROLES ? role_names[role] : NULL;
}

int mp_ep_tensor_name(char *buf, size_t len, unsigned layer, unsigned role)
{
	return snprintf(buf, len, "blk.%u.ffn_%s_exps.weight", layer,
			role < MP_EP_ROLES ? role_names[role] : "?");
}
