/* format.c - SGLang expert-pack records: decoding and encoding them (one table
 * of fields each), role and tensor names, text fields. */
#include "config.h"

#include "pack/expertpack/format.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "base/le.h"
#include "pack/role.h"

/*
 * Each record as one table of its fields, read by the decoder and written
 * by the encoder, so that an offset or a width is said once for both.
 * A field is `n` little-endian integers of `width` bytes each, held in
 * members of the same width, or with width 0 `n` bytes copied as they are.
 */
struct field {
	uint16_t at;     /* offset in the record */
	uint8_t width;   /* 1, 2, 4 or 8; 0: bytes */
	uint8_t n;       /* integers in a row, or bytes */
	uint16_t member; /* offsetof() the member in the struct */
};

#define HEADER(at, width, n, m) {(at), (width), (n), offsetof(struct mp_ep_header, m)}
#define ENTRY(at, width, n, m) {(at), (width), (n), offsetof(struct mp_ep_entry, m)}

static const struct field header_fields[] = {
	HEADER(0, 0, MP_EP_MAGIC_LEN, magic),
	HEADER(24, 4, 1, version),
	HEADER(28, 4, 1, header_bytes),
	HEADER(32, 4, 1, entry_bytes),
	HEADER(36, 4, 1, flags),
	HEADER(40, 8, 1, index_count),
	HEADER(48, 8, 1, data_start),
	HEADER(56, 8, 1, alignment),
	HEADER(64, 4, 1, num_layers),
	HEADER(68, 4, 1, num_experts),
	HEADER(72, 4, 1, top_k),
	HEADER(76, 4, 1, role_count),
	HEADER(80, 0, 32, model_identity_sha256),
	HEADER(112, 0, 32, source_blob_sha256),
	HEADER(144, 0, 32, config_sha256),
};

static const struct field entry_fields[] = {
	ENTRY(0, 2, 1, layer),
	ENTRY(2, 2, 1, expert),
	ENTRY(4, 1, 1, role_id),
	ENTRY(5, 1, 1, rank),
	ENTRY(6, 2, 1, dtype_id),
	ENTRY(MP_EP_DTYPE_AT, 0, MP_EP_DTYPE_LEN, dtype),
	ENTRY(MP_EP_NAME_AT, 0, MP_EP_NAME_LEN, tensor_name),
	ENTRY(104, 8, 1, source_tensor_offset),
	ENTRY(112, 8, 1, source_tensor_nbytes),
	ENTRY(120, 8, 1, source_slice_offset),
	ENTRY(128, 8, 1, source_slice_nbytes),
	ENTRY(136, 8, 1, pack_offset),
	ENTRY(144, 8, 1, pack_nbytes),
	ENTRY(152, 0, 32, source_tensor_sha256),
	ENTRY(184, 0, 32, source_slice_sha256),
	ENTRY(216, 0, 32, checksum),
	ENTRY(248, 8, MP_EP_MAX_RANK, shape),
	ENTRY(MP_EP_QUANT_AT, 0, MP_EP_DTYPE_LEN, quant_scheme),
	ENTRY(MP_EP_TRANSFORM_AT, 0, MP_EP_DTYPE_LEN, transform_id),
	ENTRY(312, 8, 1, block_size),
	ENTRY(320, 8, 1, generation),
};

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

/* An integer of width bytes: from the record (little-endian) or a member. */
static uint64_t get_le(const unsigned char *p, unsigned width)
{
	return width == 1 ? p[0] : width == 2 ? mp_le16(p) : width == 4 ? mp_le32(p) : mp_le64(p);
}

static uint64_t get_member(const unsigned char *m, unsigned width)
{
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (width) {
	case 1: memcpy(&v8, m, 1); return v8;
	case 2: memcpy(&v16, m, 2); return v16;
	case 4: memcpy(&v32, m, 4); return v32;
	default: memcpy(&v64, m, 8); return v64;
	}
}

/* ... and back: into the record, or into a member. */
static void put_le(unsigned char *p, unsigned width, uint64_t v)
{
	if (width == 1)
		p[0] = (unsigned char)v;
	else if (width == 2)
		mp_put_le16(p, (uint16_t)v);
	else if (width == 4)
		mp_put_le32(p, (uint32_t)v);
	else
		mp_put_le64(p, v);
}

static void put_member(unsigned char *m, unsigned width, uint64_t v)
{
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;
	const void *from = width == 1   ? (const void *)&v8
			   : width == 2 ? (const void *)&v16
			   : width == 4 ? (const void *)&v32
					: (const void *)&v;

	memcpy(m, from, width);
}

/* Every field of a record from one side to the other: encoding, from the
 * struct's members into the record's bytes; else from the bytes into the
 * members.  One walk, so that both directions read the same table. */
static void convert(const struct field *f, size_t n, const unsigned char *from,
		    unsigned char *to, bool encoding)
{
	for (const struct field *end = f + n; f < end; f++) {
		size_t src = encoding ? f->member : f->at, dst = encoding ? f->at : f->member;

		if (!f->width) {
			memcpy(to + dst, from + src, f->n);
			continue;
		}
		for (size_t k = 0; k < (size_t)f->n * f->width; k += f->width) {
			if (encoding)
				put_le(to + dst + k, f->width, get_member(from + src + k, f->width));
			else
				put_member(to + dst + k, f->width, get_le(from + src + k, f->width));
		}
	}
}

void mp_ep_header_decode(const unsigned char raw[MP_EP_HEADER_SIZE], struct mp_ep_header *h)
{
	convert(header_fields, NFIELDS(header_fields), raw, (unsigned char *)h, false);
}

void mp_ep_entry_decode(const unsigned char raw[MP_EP_ENTRY_SIZE], struct mp_ep_entry *e)
{
	convert(entry_fields, NFIELDS(entry_fields), raw, (unsigned char *)e, false);
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
	convert(header_fields, NFIELDS(header_fields), (const unsigned char *)h, raw, true);
}

void mp_ep_entry_encode(const struct mp_ep_entry *e, unsigned char raw[MP_EP_ENTRY_SIZE])
{
	convert(entry_fields, NFIELDS(entry_fields), (const unsigned char *)e, raw, true);
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
