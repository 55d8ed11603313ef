/*
 * errors.h - the moepack error catalogue.
 *
 * Every failure the core library can report has one code here.  The table
 * is the single source for the code's symbolic name (used by --json and in
 * the man page), its class (which is the exit status of both programs) and
 * a one-line summary.  The full message that a user sees is built at the
 * failure site, because it names the field, index or path at fault, and
 * always starts with the summary's wording.  The FUSE layer answers with
 * errnos of its own (EROFS, ENOENT, EIO...): a library failure reaches a
 * reader only as EIO or ENOMEM, so no errno is kept per code.
 *
 * The order of MP_ERRORS follows the order in which the validator checks,
 * which is the reference loader's order.
 */
#ifndef MOEPACK_ERRORS_H
#define MOEPACK_ERRORS_H


enum mp_err_class {
	MP_CLASS_OK = 0,
	MP_CLASS_INVALID = 1, /* the pack or manifest is invalid: exit 1 */
	MP_CLASS_USAGE = 2,   /* the caller asked for something impossible: exit 2 */
	MP_CLASS_IO = 3,      /* a file cannot be opened or read: exit 3 */
};

/* X(code, name, class, summary) */
#define MP_ERRORS(X)                                                           \
	X(MP_OK, "ok", MP_CLASS_OK,                                            \
	  "ok")                                                                \
	X(MP_E_USAGE, "usage", MP_CLASS_USAGE,                                 \
	  "invalid usage")                                                     \
	X(MP_E_NOMEM, "out_of_memory", MP_CLASS_IO,                            \
	  "out of memory")                                                     \
	X(MP_E_PACK_IO, "pack_io", MP_CLASS_IO,                                \
	  "cannot read pack")                                                  \
	X(MP_E_MANIFEST_IO, "manifest_io", MP_CLASS_IO,                        \
	  "cannot read manifest")                                              \
	X(MP_E_CONFIG_IO, "config_io", MP_CLASS_IO,                            \
	  "cannot read config file")                                           \
	X(MP_E_MANIFEST_LIMIT, "manifest_limit", MP_CLASS_INVALID,             \
	  "manifest exceeds a limit")                                          \
	X(MP_E_MANIFEST_JSON, "manifest_json", MP_CLASS_INVALID,               \
	  "manifest is not valid JSON")                                        \
	X(MP_E_MANIFEST_MISSING, "manifest_missing_key", MP_CLASS_INVALID,     \
	  "manifest key is missing")                                           \
	X(MP_E_MANIFEST_TYPE, "manifest_wrong_type", MP_CLASS_INVALID,         \
	  "manifest value has the wrong JSON type")                            \
	X(MP_E_MANIFEST_VALUE, "manifest_bad_value", MP_CLASS_INVALID,         \
	  "manifest value is out of range")                                    \
	X(MP_E_INCOMPLETE, "incomplete", MP_CLASS_INVALID,                     \
	  "manifest says the pack is not complete")                            \
	X(MP_E_FORMAT, "format", MP_CLASS_INVALID,                             \
	  "unsupported manifest format")                                       \
	X(MP_E_HARD_CONSTRAINTS, "hard_constraints", MP_CLASS_INVALID,         \
	  "hard constraints differ")                                           \
	X(MP_E_TOP_K, "top_k", MP_CLASS_INVALID,                               \
	  "top-k must be 16")                                                  \
	X(MP_E_EXPECT_LAYERS, "expect_layers", MP_CLASS_INVALID,               \
	  "layer count differs from the expected one")                         \
	X(MP_E_EXPECT_EXPERTS, "expect_experts", MP_CLASS_INVALID,             \
	  "expert count differs from the expected one")                        \
	X(MP_E_CONFIG_DIGEST, "config_digest", MP_CLASS_INVALID,               \
	  "config SHA-256 does not match manifest")                            \
	X(MP_E_ACTIVE_LAYERS, "active_layers", MP_CLASS_INVALID,               \
	  "active MoE layer ids must be exactly 1..92")                        \
	X(MP_E_PACK_PATH, "pack_path", MP_CLASS_INVALID,                       \
	  "manifest pack path does not resolve to the pack")                   \
	X(MP_E_PACK_SIZE, "pack_size", MP_CLASS_INVALID,                       \
	  "pack size does not match manifest")                                 \
	X(MP_E_ROLE_ORDER, "role_order", MP_CLASS_INVALID,                     \
	  "physical role order must be [\"up\", \"gate\", \"down\"]")          \
	X(MP_E_ROLE_DTYPE, "role_dtype", MP_CLASS_INVALID,                     \
	  "quant type is unsupported")                                         \
	X(MP_E_ROLE_SHAPE, "role_shape", MP_CLASS_INVALID,                     \
	  "role size does not match its logical shape")                        \
	X(MP_E_RUNTIME_SHAPE, "runtime_shape", MP_CLASS_INVALID,               \
	  "role shape is not the Kimi-K3 runtime's")                           \
	X(MP_E_OBJECT_BYTES, "object_bytes", MP_CLASS_INVALID,                 \
	  "object bytes is not the sum of the role sizes")                     \
	X(MP_E_ALIGNMENT, "alignment", MP_CLASS_INVALID,                       \
	  "alignment must be a power of two")                                  \
	X(MP_E_HEADER_SHORT, "header_short", MP_CLASS_INVALID,                 \
	  "pack is shorter than its 40-byte header")                           \
	X(MP_E_HEADER_MAGIC, "header_magic", MP_CLASS_INVALID,                 \
	  "bad pack magic")                                                    \
	X(MP_E_HEADER_VERSION, "header_version", MP_CLASS_INVALID,             \
	  "unsupported pack version")                                          \
	X(MP_E_HEADER_SIZE, "header_size", MP_CLASS_INVALID,                   \
	  "header size must be 40")                                            \
	X(MP_E_INDEX_COUNT, "index_count", MP_CLASS_INVALID,                   \
	  "index count does not match the manifest")                           \
	X(MP_E_DATA_START, "data_start", MP_CLASS_INVALID,                     \
	  "data start does not match manifest")                                \
	X(MP_E_INDEX_TRUNCATED, "index_truncated", MP_CLASS_INVALID,           \
	  "index runs past the end of the pack")                               \
	X(MP_E_DATA_OVERLAPS_INDEX, "data_overlaps_index", MP_CLASS_INVALID,   \
	  "data start lies inside the index")                                  \
	X(MP_E_ENTRY_NAME, "entry_name", MP_CLASS_INVALID,                     \
	  "identity mismatch")                                                 \
	X(MP_E_ENTRY_EXPERT, "entry_expert", MP_CLASS_INVALID,                 \
	  "identity mismatch")                                                 \
	X(MP_E_ENTRY_RESERVED, "entry_reserved", MP_CLASS_INVALID,             \
	  "identity mismatch")                                                 \
	X(MP_E_ENTRY_NBYTES, "entry_nbytes", MP_CLASS_INVALID,                 \
	  "range mismatch")                                                    \
	X(MP_E_ENTRY_ALIGNMENT, "entry_alignment", MP_CLASS_INVALID,           \
	  "range mismatch")                                                    \
	X(MP_E_ENTRY_OVERLAP, "entry_overlap", MP_CLASS_INVALID,               \
	  "range mismatch")                                                    \
	X(MP_E_ENTRY_BOUNDS, "entry_bounds", MP_CLASS_INVALID,                 \
	  "range mismatch")                                                    \
	X(MP_E_ENTRY_CONTIGUITY, "entry_contiguity", MP_CLASS_INVALID,         \
	  "not contiguous")                                                    \
	X(MP_E_TRAILING_BYTES, "trailing_bytes", MP_CLASS_INVALID,             \
	  "pack has bytes after the last payload")                             \
	X(MP_E_INDEX_DIGEST, "index_digest", MP_CLASS_INVALID,                 \
	  "index SHA-256 does not match manifest")                             \
	X(MP_E_FULL_DIGEST_MISSING, "full_digest_missing", MP_CLASS_USAGE,     \
	  "full SHA-256 requested but the manifest has no whole-file digest")  \
	X(MP_E_FULL_DIGEST, "full_digest", MP_CLASS_INVALID,                   \
	  "pack SHA-256 does not match manifest")                              \
	X(MP_E_PAYLOAD, "payload", MP_CLASS_INVALID,                           \
	  "payload scan found problems")                                       \
	X(MP_E_GGUF_IO, "gguf_io", MP_CLASS_IO,                                \
	  "cannot read GGUF file")                                             \
	X(MP_E_GGUF_FORMAT, "gguf_format", MP_CLASS_INVALID,                   \
	  "not a valid GGUF file")                                             \
	X(MP_E_GGUF_MLA_K, "gguf_mla_k", MP_CLASS_INVALID,                     \
	  "Kimi-K3 MLA K projection must remain GGUF Q4_0")                    \
	X(MP_E_GGUF_MLA_V, "gguf_mla_v", MP_CLASS_INVALID,                     \
	  "Kimi-K3 MLA V projection must remain GGUF Q2_K")                    \
	X(MP_E_GGUF_EXPERT_TYPE, "gguf_expert_type", MP_CLASS_INVALID,         \
	  "routed expert tensor has the wrong quant type")                     \
	X(MP_E_SHARD_NAMES, "shard_names", MP_CLASS_INVALID,                   \
	  "GGUF shard names do not form one split set")                        \
	X(MP_E_SHARD_MISSING, "shard_missing", MP_CLASS_INVALID,               \
	  "a shard of the split set is missing")                               \
	X(MP_E_SHARD_SPLIT, "shard_split", MP_CLASS_INVALID,                   \
	  "split metadata is inconsistent")                                    \
	X(MP_E_GGUF_DUPLICATE, "gguf_duplicate_tensor", MP_CLASS_INVALID,      \
	  "tensor appears in more than one shard")                             \
	X(MP_E_GGUF_ARCH, "gguf_architecture", MP_CLASS_INVALID,               \
	  "checkpoint architecture must be kimi-k3")                           \
	X(MP_E_GGUF_EXPERTS, "gguf_expert_tensors", MP_CLASS_INVALID,          \
	  "routed expert tensors are missing or inconsistent")                 \
	X(MP_E_GGUF_GEOMETRY, "gguf_geometry", MP_CLASS_INVALID,               \
	  "expert geometry is not Kimi-K3's")                                  \
	X(MP_E_CONFIG_MISMATCH, "config_mismatch", MP_CLASS_INVALID,           \
	  "model config disagrees")                                            \
	X(MP_E_CONFIG_LIMIT, "config_limit", MP_CLASS_INVALID,                 \
	  "model config exceeds a limit")                                      \
	X(MP_E_BUILD_LOCKED, "build_locked", MP_CLASS_IO,                      \
	  "another build holds the pack's lock")                               \
	X(MP_E_NO_SPACE, "no_space", MP_CLASS_IO,                              \
	  "not enough free space for the pack")                                \
	X(MP_E_INTERRUPTED, "interrupted", MP_CLASS_IO,                        \
	  "build interrupted")                                                 \
	X(MP_E_PAYLOAD_MISMATCH, "payload_mismatch", MP_CLASS_INVALID,         \
	  "pack payload differs from its GGUF slice")                          \
	X(MP_E_PACK_LAYOUT, "pack_layout", MP_CLASS_INVALID,                   \
	  "pack is not the one the shards give")                               \
	X(MP_E_NOT_FOUND, "not_found", MP_CLASS_USAGE,                         \
	  "no such entry")                                                     \
	X(MP_E_SEAL_IO, "seal_io", MP_CLASS_IO,                                \
	  "cannot read or write seal")                                         \
	X(MP_E_SEAL_FORMAT, "seal_format", MP_CLASS_INVALID,                   \
	  "seal file is malformed")                                            \
	X(MP_E_SEAL_LIMIT, "seal_limit", MP_CLASS_INVALID,                     \
	  "seal would exceed its table limit")                                 \
	X(MP_E_SEAL_MISMATCH, "seal_mismatch", MP_CLASS_INVALID,               \
	  "seal is not this pack's")                                           \
	X(MP_E_SEAL_CHUNK, "seal_chunk", MP_CLASS_INVALID,                     \
	  "pack bytes differ from their sealed digest")                        \
	X(MP_E_SIGNATURE, "signature", MP_CLASS_INVALID,                       \
	  "pack signature is missing or does not verify")                      \
	X(MP_E_KEY, "key", MP_CLASS_USAGE,                                     \
	  "unusable key file")                                                 \
	/* moepack fetch (src/fetch/) */                                      \
	X(MP_E_FETCH_TRUST, "fetch_no_trust", MP_CLASS_USAGE,                  \
	  "no root of trust for the fetched pack")                             \
	X(MP_E_FETCH_MIRROR, "fetch_mirror", MP_CLASS_IO,                      \
	  "mirror failed")                                                     \
	X(MP_E_FETCH_CHUNK, "fetch_chunk", MP_CLASS_INVALID,                   \
	  "no mirror served a chunk correctly")                                \
	/* SGLang's expert pack (pack/expertpack.h), in its validator's order */ \
	X(MP_E_EP_HEADER_TRUNCATED, "ep_header_truncated", MP_CLASS_INVALID,   \
	  "expert-pack header is truncated")                                   \
	X(MP_E_EP_STRUCT_SIZES, "ep_struct_sizes", MP_CLASS_INVALID,           \
	  "expert-pack struct sizes do not match")                             \
	X(MP_E_EP_COVERAGE, "ep_header_coverage", MP_CLASS_INVALID,            \
	  "expert-pack header coverage is inconsistent")                       \
	X(MP_E_EP_FLAGS, "ep_header_flags", MP_CLASS_INVALID,                  \
	  "expert-pack is not identity triplet layout")                        \
	X(MP_E_EP_DATA_START, "ep_data_start", MP_CLASS_INVALID,               \
	  "expert-pack data offset is not aligned")                            \
	X(MP_E_EP_ROLE_RANK, "ep_entry_role_rank", MP_CLASS_INVALID,           \
	  "expert-pack index role or rank is invalid")                         \
	X(MP_E_EP_TEXT, "ep_entry_text", MP_CLASS_INVALID,                     \
	  "expert-pack index text is not UTF-8")                               \
	X(MP_E_EXPECT_TOP_K, "expect_top_k", MP_CLASS_INVALID,                 \
	  "top-k differs from the expected one")                               \
	X(MP_E_EXPECT_DIGEST, "expect_digest", MP_CLASS_INVALID,               \
	  "expert-pack digest does not match the configured one")              \
	X(MP_E_EP_DUPLICATE, "ep_entry_duplicate", MP_CLASS_INVALID,           \
	  "duplicate expert-pack entry")                                       \
	X(MP_E_EP_DTYPE, "ep_entry_dtype", MP_CLASS_INVALID,                   \
	  "unsupported expert dtype")                                          \
	X(MP_E_EP_TRANSFORM, "ep_entry_transform", MP_CLASS_INVALID,           \
	  "unsupported expert transform")                                      \
	X(MP_E_EP_IDENTITY_SIZE, "ep_entry_identity_size", MP_CLASS_INVALID,   \
	  "non-identity expert payload size")                                  \
	X(MP_E_EP_ROLE_SIZE, "ep_role_size", MP_CLASS_INVALID,                 \
	  "expert-pack roles are not fixed size")                              \
	X(MP_E_EP_GENERATION, "ep_generation", MP_CLASS_INVALID,               \
	  "mixed generation in expert object")                                 \
	X(MP_E_EP_EMPTY, "ep_empty", MP_CLASS_INVALID,                         \
	  "expert-pack has no entries")                                        \
	X(MP_E_EP_STRIDE, "ep_object_stride", MP_CLASS_INVALID,                \
	  "expert-pack object stride is smaller than its payload")             \
	X(MP_E_EP_FILE_SIZE, "ep_file_size", MP_CLASS_INVALID,                 \
	  "expert-pack file size does not match its index")                    \
	X(MP_E_EP_MISSING, "ep_entry_missing", MP_CLASS_INVALID,               \
	  "expert-pack index has no entry")                                    \
	X(MP_E_EP_LAYOUT, "ep_object_layout", MP_CLASS_INVALID,                \
	  "expert-pack object layout mismatch")                                \
	X(MP_E_EP_HEADER_MANIFEST, "ep_header_manifest", MP_CLASS_INVALID,     \
	  "pack header does not match manifest")                               \
	X(MP_E_EP_TOP_K, "ep_top_k", MP_CLASS_INVALID,                         \
	  "top-k is not between 1 and the expert count")                       \
	X(MP_E_EP_TENSORS, "ep_tensor_coverage", MP_CLASS_INVALID,             \
	  "manifest tensors do not match its coverage")                        \
	X(MP_E_EP_OBJECT_ALIGN, "ep_object_alignment", MP_CLASS_INVALID,       \
	  "expert object is not aligned")                                      \
	X(MP_E_EP_SHAPE, "ep_entry_shape", MP_CLASS_INVALID,                   \
	  "invalid role shape")                                                \
	X(MP_E_EP_NAME, "ep_entry_name", MP_CLASS_INVALID,                     \
	  "entry does not name its routed tensor")                             \
	X(MP_E_EP_TENSOR, "ep_entry_tensor", MP_CLASS_INVALID,                 \
	  "entry does not map to a routed tensor")                             \
	X(MP_E_EP_CHECKSUM, "ep_entry_checksum", MP_CLASS_INVALID,             \
	  "entry is not an auditable identity transform")                      \
	X(MP_E_EP_SOURCE, "ep_entry_source", MP_CLASS_INVALID,                 \
	  "entry source tensor does not match manifest")                       \
	X(MP_E_EP_SLICE, "ep_entry_slice", MP_CLASS_INVALID,                   \
	  "entry source slice is misplaced")                                   \
	X(MP_E_EP_PAYLOAD_DIGEST, "ep_entry_digest", MP_CLASS_INVALID,         \
	  "entry payload does not match its checksum")                         \
	X(MP_E_EP_SOURCE_SIZE, "ep_source_size", MP_CLASS_INVALID,             \
	  "source size does not match manifest")                               \
	X(MP_E_EP_SOURCE_TENSOR, "ep_source_tensor", MP_CLASS_INVALID,         \
	  "source tensor SHA-256 does not match manifest")                     \
	X(MP_E_EP_SOURCE_DIGEST, "ep_source_digest", MP_CLASS_INVALID,         \
	  "source SHA-256 does not match manifest")                            \
	X(MP_E_EP_SOURCE_BYTES, "ep_source_bytes", MP_CLASS_INVALID,           \
	  "source and pack bytes differ")

enum mp_err {
#define MP_ERR_ENUM(code, name, cls, summary) code,
	MP_ERRORS(MP_ERR_ENUM)
#undef MP_ERR_ENUM
	MP_ERR_COUNT
};

#define MP_MSG_MAX 512

/* What a failing function leaves behind: a code and a one-line message. */
struct mp_error {
	enum mp_err code;
	char msg[MP_MSG_MAX];
};

/* Symbolic name of a code ("entry_name"), for --json and the man page. */
const char *mp_err_name(enum mp_err code);
/* The class of a code: decides the CLI exit status. */
enum mp_err_class mp_err_class(enum mp_err code);
/* The one-line summary of a code, without the specifics. */
const char *mp_err_summary(enum mp_err code);
/* The exit status of moepack and moepackfs for a code: its class, 0..3. */
int mp_err_exit_status(enum mp_err code);

/*
 * Fill *err (which may be NULL) with code and a printf-style message and
 * return code, so that failure sites read `return mp_fail(err, CODE, ...)`.
 * The message is passed through mp_text_sanitize(): control characters and
 * invalid UTF-8 from untrusted names and paths come out as \xNN, and a
 * backslash as \\, so every message is one line of valid UTF-8, safe for a
 * terminal and for JSON, and each name in it maps back to one name.
 */
enum mp_err mp_fail(struct mp_error *err, enum mp_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * The same for a message whose every argument is escaped already (another
 * error's message, a name through mp_text_escape()): its backslashes are
 * escapes and are kept, control bytes are still escaped.
 */
enum mp_err mp_fail_escaped(struct mp_error *err, enum mp_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
