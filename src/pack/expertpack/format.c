/* epformat.c - SGLang expert-pack records: decoding, role and tensor names. */
#include "config.h"

#include "pack/expertpack/format.h"

#include <string.h>

#include "base/le.h"
#include "pack/role.h"

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
	static const enum mp_role kimi_role[MP_EP_ROLES] = {MP_ROLE_GATE, MP_ROLE_UP,
							    MP_ROLE_DOWN};

	return mp_tensor_name(buf, len, layer, role < MP_EP_ROLES ? kimi_role[role]
								  : MP_ROLE_COUNT);
}

void mp_ep_header_encode(const struct mp_ep_header *h, unsigned char raw[MP_EP_HEADER_SIZE])
{
	memcpy(raw, h->magic, MP_EP_MAGIC_LEN);
	mp_put_le32(raw + 24, h->version);
	mp_put_le32(raw + 28, h->header_bytes);
	mp_put_le32(raw + 32, h->entry_bytes);
	mp_put_le32(raw + 36, h->flags);
	mp_put_le64(raw + 40, h->index_count);
	mp_put_le64(raw + 48, h->data_start);
	mp_put_le64(raw + 56, h->alignment);
	mp_put_le32(raw + 64, h->num_layers);
	mp_put_le32(raw + 68, h->num_experts);
	mp_put_le32(raw + 72, h->top_k);
	mp_put_le32(raw + 76, h->role_count);
	memcpy(raw + 80, h->model_identity_sha256, 32);
	memcpy(raw + 112, h->source_blob_sha256, 32);
	memcpy(raw + 144, h->config_sha256, 32);
}

void mp_ep_entry_encode(const struct mp_ep_entry *e, unsigned char raw[MP_EP_ENTRY_SIZE])
{
	mp_put_le16(raw, e->layer);
	mp_put_le16(raw + 2, e->expert);
	raw[4] = e->role_id;
	raw[5] = e->rank;
	mp_put_le16(raw + 6, e->dtype_id);
	memcpy(raw + MP_EP_DTYPE_AT, e->dtype, MP_EP_DTYPE_LEN);
	memcpy(raw + MP_EP_NAME_AT, e->tensor_name, MP_EP_NAME_LEN);
	mp_put_le64(raw + 104, e->source_tensor_offset);
	mp_put_le64(raw + 112, e->source_tensor_nbytes);
	mp_put_le64(raw + 120, e->source_slice_offset);
	mp_put_le64(raw + 128, e->source_slice_nbytes);
	mp_put_le64(raw + 136, e->pack_offset);
	mp_put_le64(raw + 144, e->pack_nbytes);
	memcpy(raw + 152, e->source_tensor_sha256, 32);
	memcpy(raw + 184, e->source_slice_sha256, 32);
	memcpy(raw + 216, e->checksum, 32);
	for (int i = 0; i < MP_EP_MAX_RANK; i++)
		mp_put_le64(raw + 248 + 8 * i, e->shape[i]);
	memcpy(raw + MP_EP_QUANT_AT, e->quant_scheme, MP_EP_DTYPE_LEN);
	memcpy(raw + MP_EP_TRANSFORM_AT, e->transform_id, MP_EP_DTYPE_LEN);
	mp_put_le64(raw + 312, e->block_size);
	mp_put_le64(raw + 320, e->generation);
}

int mp_ep_text_put(unsigned char *field, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (n >= len)
		return -1;
	memset(field, 0, len);
	memcpy(field, s, n);
	return 0;
}
