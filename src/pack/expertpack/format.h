/*
 * epformat.h - the fixed facts of SGLang's expert pack (SGLANG-EXPERTPACK-v1,
 * moepack-pack(5)) and the decoding of its header and index entries.
 *
 * Pure: no I/O and no checks beyond the byte layout.  All integers on disk
 * are little-endian and the records have no padding.
 */
#ifndef MOEPACK_EPFORMAT_H
#define MOEPACK_EPFORMAT_H

#include <stddef.h>
#include <stdint.h>

#define MP_EP_MAGIC "SGLANG-EXPERTPACK-v1" /* followed by four NUL bytes */
#define MP_EP_MAGIC_LEN 24
#define MP_EP_VERSION 1
#define MP_EP_HEADER_SIZE 176
#define MP_EP_ENTRY_SIZE 328
#define MP_EP_FORMAT "SGLANG-EXPERTPACK-v1" /* the manifest's "format" */

/* Header flags: both must be set; other bits are free. */
#define MP_EP_FLAG_IDENTITY_PAYLOAD 0x1u
#define MP_EP_FLAG_TRIPLET_OBJECTS 0x2u
#define MP_EP_FLAGS_REQUIRED (MP_EP_FLAG_IDENTITY_PAYLOAD | MP_EP_FLAG_TRIPLET_OBJECTS)

/* Role ids as stored, which is also their order inside an object. */
enum mp_ep_role { MP_EP_GATE, MP_EP_UP, MP_EP_DOWN, MP_EP_ROLES };

#define MP_EP_MAX_RANK 4
#define MP_EP_DTYPE "MXFP4"           /* dtype and quant_scheme */
#define MP_EP_DTYPE_ID 39             /* GGML_TYPE_MXFP4 */
#define MP_EP_TRANSFORM "identity-v1"
#define MP_EP_BLOCK_WEIGHTS 32        /* block_size: weights per MXFP4 block */
#define MP_EP_BLOCK_BYTES 17          /* one E8M0 scale byte, 16 bytes of nibbles */
#define MP_EP_DTYPE_LEN 16            /* dtype, quant_scheme, transform_id */
#define MP_EP_NAME_LEN 80             /* tensor_name */
#define MP_EP_PAGE 4096               /* what the loader's direct I/O aligns to */

struct mp_ep_header {
	unsigned char magic[MP_EP_MAGIC_LEN];
	uint32_t version, header_bytes, entry_bytes, flags;
	uint64_t index_count, data_start, alignment;
	uint32_t num_layers, num_experts, top_k, role_count;
	unsigned char model_identity_sha256[32], source_blob_sha256[32], config_sha256[32];
};

/* One index entry; the text fields raw (NUL-padded, maybe not at all). */
struct mp_ep_entry {
	uint16_t layer, expert;
	uint8_t role_id, rank;
	uint16_t dtype_id;
	unsigned char dtype[MP_EP_DTYPE_LEN];
	unsigned char tensor_name[MP_EP_NAME_LEN];
	uint64_t source_tensor_offset, source_tensor_nbytes;
	uint64_t source_slice_offset, source_slice_nbytes;
	uint64_t pack_offset, pack_nbytes;
	unsigned char source_tensor_sha256[32], source_slice_sha256[32], checksum[32];
	uint64_t shape[MP_EP_MAX_RANK]; /* GGUF ne order; the first rank are used */
	unsigned char quant_scheme[MP_EP_DTYPE_LEN], transform_id[MP_EP_DTYPE_LEN];
	uint64_t block_size, generation;
};

/* Where the text fields lie inside an entry. */
#define MP_EP_DTYPE_AT 8
#define MP_EP_NAME_AT 24
#define MP_EP_QUANT_AT 280
#define MP_EP_TRANSFORM_AT 296

void mp_ep_header_decode(const unsigned char raw[MP_EP_HEADER_SIZE], struct mp_ep_header *h);
void mp_ep_entry_decode(const unsigned char raw[MP_EP_ENTRY_SIZE], struct mp_ep_entry *e);
/* The inverse of the decoders: the record's bytes as the builder packs them. */
void mp_ep_header_encode(const struct mp_ep_header *h, unsigned char raw[MP_EP_HEADER_SIZE]);
void mp_ep_entry_encode(const struct mp_ep_entry *e, unsigned char raw[MP_EP_ENTRY_SIZE]);

/*
 * A text field as the builder packs it: s NUL-padded to len bytes.  -1 when
 * s needs all len bytes (the reference validator refuses a field without
 * room for its NUL), else 0.
 */
int mp_ep_text_put(unsigned char *field, size_t len, const char *s);

/*
 * A text field as the reference reads it: the bytes before the first NUL,
 * or all len bytes when there is none.  Returns that length.
 */
size_t mp_ep_text_len(const unsigned char *field, size_t len);

/* "gate", "up", "down"; NULL for anything else. */
const char *mp_ep_role_name(unsigned role);

/*
 * The routed tensor that (pack layer, role) comes from, as the builder
 * names it: "blk.7.ffn_up_exps.weight" (pack layers are GGUF block numbers;
 * format.h's mp_tensor_name() holds the pattern).  Returns snprintf()'s count.
 */
int mp_ep_tensor_name(char *buf, size_t len, unsigned layer, unsigned role);

#endif
