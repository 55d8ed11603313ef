/*
 * index.h - the pack's binary header and index entries.
 *
 * Pure decoding and encoding of the little-endian on-disk records of
 * moepack-pack(5); no I/O and no checks beyond the layout itself.
 */
#ifndef MOEPACK_INDEX_H
#define MOEPACK_INDEX_H

#include <stdint.h>

#include "base/le.h"
#include "pack/kimi/format.h"

struct mp_header {
	unsigned char magic[MP_MAGIC_LEN];
	uint32_t version;
	uint32_t header_size;
	uint64_t index_count;
	uint64_t data_start;
};

struct mp_entry {
	unsigned char name[MP_ENTRY_NAME_LEN]; /* raw, NUL-padded */
	int32_t expert;
	uint32_t reserved;
	uint64_t offset;
	uint64_t nbytes;
};

/* Field offsets inside the 40-byte header (the magic is at 0). */
#define MP_HEADER_VERSION_AT 16
#define MP_HEADER_SIZE_AT 20
#define MP_HEADER_COUNT_AT 24
#define MP_HEADER_DATA_START_AT 32

void mp_header_decode(const unsigned char raw[MP_HEADER_SIZE], struct mp_header *h);
/* A header with the format's magic, version and size and these fields. */
void mp_header_encode(unsigned char raw[MP_HEADER_SIZE], uint64_t index_count,
		      uint64_t data_start);

/* Field offsets inside one 152-byte entry. */
#define MP_ENTRY_EXPERT_AT 128
#define MP_ENTRY_RESERVED_AT 132
#define MP_ENTRY_OFFSET_AT 136
#define MP_ENTRY_NBYTES_AT 144

void mp_entry_decode(const unsigned char raw[MP_ENTRY_SIZE], struct mp_entry *e);
/* name is NUL-padded to 128 bytes; it must be shorter than 128. */
void mp_entry_encode(unsigned char raw[MP_ENTRY_SIZE], const char *name, int32_t expert,
		     uint64_t offset, uint64_t nbytes);

#endif
