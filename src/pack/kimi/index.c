/* index.c - encode and decode the pack header and index entries. */
#include "config.h"

#include "pack/kimi/index.h"

#include <string.h>

void mp_header_decode(const unsigned char raw[MP_HEADER_SIZE], struct mp_header *h)
{
	memcpy(h->magic, raw, MP_MAGIC_LEN);
	h->version = mp_le32(raw + MP_HEADER_VERSION_AT);
	h->header_size = mp_le32(raw + MP_HEADER_SIZE_AT);
	h->index_count = mp_le64(raw + MP_HEADER_COUNT_AT);
	h->data_start = mp_le64(raw + MP_HEADER_DATA_START_AT);
}

void mp_header_encode(unsigned char raw[MP_HEADER_SIZE], uint64_t index_count,
		      uint64_t data_start)
{
	memset(raw, 0, MP_HEADER_SIZE);
	memcpy(raw, MP_MAGIC, sizeof MP_MAGIC - 1);
	mp_put_le32(raw + MP_HEADER_VERSION_AT, MP_VERSION);
	mp_put_le32(raw + MP_HEADER_SIZE_AT, MP_HEADER_SIZE);
	mp_put_le64(raw + MP_HEADER_COUNT_AT, index_count);
	mp_put_le64(raw + MP_HEADER_DATA_START_AT, data_start);
}

void mp_entry_decode(const unsigned char raw[MP_ENTRY_SIZE], struct mp_entry *e)
{
	memcpy(e->name, raw, MP_ENTRY_NAME_LEN);
	e->expert = (int32_t)mp_le32(raw + MP_ENTRY_EXPERT_AT);
	e->reserved = mp_le32(raw + MP_ENTRY_RESERVED_AT);
	e->offset = mp_le64(raw + MP_ENTRY_OFFSET_AT);
	e->nbytes = mp_le64(raw + MP_ENTRY_NBYTES_AT);
}

void mp_entry_encode(unsigned char raw[MP_ENTRY_SIZE], const char *name, int32_t expert,
		     uint64_t offset, uint64_t nbytes)
{
	size_t n = strnlen(name, MP_ENTRY_NAME_LEN - 1);
	memset(raw, 0, MP_ENTRY_SIZE);
	memcpy(raw, name, n);
	mp_put_le32(raw + MP_ENTRY_EXPERT_AT, (uint32_t)expert);
	mp_put_le64(raw + MP_ENTRY_OFFSET_AT, offset);
	mp_put_le64(raw + MP_ENTRY_NBYTES_AT, nbytes);
}
