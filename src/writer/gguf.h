/*
 * gguf.h - a bounds-checked reader of GGUF (v2, v3) headers and tensor
 * infos (the Kimi-K3 check of tensor quant types is writer/kimi/ggufcheck.h).
 *
 * Only the metadata at the start of the file is read: header, KV pairs
 * (skipped) and tensor infos.  Every count and length taken from the file
 * is checked against the bytes the file still has, and against the limits
 * below, before it is used, so a crafted header of any apparent size costs
 * neither memory nor time.
 *
 * The reader refuses whatever ggml's gguf_init_from_file() (ggml 0.23.0)
 * refuses, so that a file it passes is one ggml loads, under the same names
 * and types; where matching ggml exactly would cost, it is stricter.
 */
#ifndef MOEPACK_GGUF_H
#define MOEPACK_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"

#define MP_GGUF_MAX_DIMS 4
/* Longest tensor name ggml accepts (GGML_MAX_NAME is 64 with the NUL). */
#define MP_GGUF_NAME_MAX 63

/*
 * Limits on the work a file can ask for, far above real checkpoints (a
 * Kimi-K3 shard has a few dozen KV pairs, a few thousand tensors, a
 * vocabulary of ~160k strings and a few MB of metadata).  A file beyond any
 * of them is refused as not a valid GGUF.
 */
#define MP_GGUF_MAX_KV 65536               /* KV pairs */
#define MP_GGUF_MAX_TENSORS (1u << 20)     /* tensor infos */
#define MP_GGUF_MAX_ARRAY_ELEMENTS (1u << 24) /* elements of all arrays together */
#define MP_GGUF_MAX_KEY 65535              /* bytes of one key (the GGUF spec's limit) */
#define MP_GGUF_MAX_KEY_BYTES (16u << 20)  /* bytes of all keys together */
#define MP_GGUF_MAX_METADATA (256u << 20)  /* header, KV pairs and tensor infos */

/* Longest general.architecture kept; a longer one is cut (and flagged). */
#define MP_GGUF_ARCH_MAX 127

/* An integer KV value a shard set is judged by. */
struct mp_gguf_int {
	int present;      /* the key is there */
	int is_integer;   /* with an integer value type (any width, signed or not) */
	int64_t value;    /* u64 values above INT64_MAX read as INT64_MAX */
};

struct mp_gguf_header {
	uint32_t version;
	uint64_t tensor_count;
	uint64_t kv_count;
	uint32_t alignment;      /* general.alignment, or ggml's default 32 */
	uint64_t data_start;     /* absolute offset of the data section (the end of
	                            the metadata, rounded up to the alignment) */
	/* The KV pairs split checkpoints are checked by (gguf-split writes
	 * them): split.no, split.count, split.tensors.count. */
	struct mp_gguf_int split_no, split_count, split_tensors_count;
	int has_architecture;    /* general.architecture is a string */
	int architecture_cut;    /* ... longer than MP_GGUF_ARCH_MAX bytes */
	char architecture[MP_GGUF_ARCH_MAX + 1]; /* raw bytes, NUL-terminated */
};

/* ggml's name of a type id ("Q2_K", "BF16"), NULL for an unknown id. */
const char *mp_gguf_type_name(uint32_t type);
/* A type id for messages, into buf: "Q4_K (12)", "Q4_2 (4)" or "type 200". */
const char *mp_gguf_type_text(char *buf, size_t len, uint32_t type);

struct mp_gguf_tensor {
	uint64_t index;        /* position among the tensor infos */
	/* The name as ggml sees it: ggml copies it with strncpy(), so a NUL
	 * inside the length-prefixed string ends it there. */
	const char *name;
	uint64_t name_len;     /* strlen(name) */
	uint64_t name_bytes;   /* the string's length in the file (< 64) */
	uint32_t type;         /* a GGML type id ggml knows (not a removed one) */
	uint32_t n_dims;
	uint64_t dims[MP_GGUF_MAX_DIMS]; /* ne[0] (the row) first; 1 past n_dims */
	uint64_t offset;       /* relative to the data section */
	uint64_t nbytes;       /* size of the data, as ggml_nbytes() computes it */
};

/*
 * Called once per tensor info, in file order.  Return MP_OK to go on, or
 * any code (with *err filled) to stop the walk with that code.
 */
typedef enum mp_err (*mp_gguf_tensor_fn)(const struct mp_gguf_tensor *t, void *ctx,
					 struct mp_error *err);

/*
 * Read the GGUF metadata of fd (opened on `path`, used only in messages):
 * fill *hdr (may be NULL) and call fn (may be NULL) for each tensor.
 * Before fn sees a tensor, its info passes ggml's checks: name shorter than
 * 64 bytes, at most 4 dimensions, none negative, an element count ggml can
 * represent, a type ggml knows, rows of whole blocks, and data at exactly
 * the offset ggml computes (the previous tensors' sizes, each padded to
 * general.alignment, summed in file order; so no two tensors overlap).
 * No two KV keys are equal (checked before the first tensor info); once
 * all infos are read, no two tensor names (as ggml sees them) are equal and
 * every tensor's data lies inside the file; what fn returned comes first.
 * Returns MP_OK, MP_E_GGUF_FORMAT when the file is not a valid GGUF,
 * MP_E_GGUF_IO when it cannot be read, or what fn returned.
 */
enum mp_err mp_gguf_read(int fd, const char *path, struct mp_gguf_header *hdr,
			 mp_gguf_tensor_fn fn, void *ctx, struct mp_error *err);

#endif
