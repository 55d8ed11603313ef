/*
 * gguf.c - GGUF metadata reader and the Kimi-K3 tensor quant type check.
 *
 * A GGUF file is read front to back through a small buffered reader that
 * knows the file's size: every read or skip is checked against the bytes
 * left first, and every count is checked against what those bytes could
 * hold before anything loops on it.  Nothing is allocated from a count.
 */
#include "config.h"

#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "quant.h"

/* Bytes fetched per pread: the metadata of a real checkpoint (a vocabulary
 * of ~160k strings, ~1500 tensor infos) takes a few MB. */
#define READ_CHUNK (64 * 1024)

/* Nested arrays are legal in GGUF but unused in practice; a bound keeps a
 * crafted file from exhausting the stack. */
#define MAX_ARRAY_DEPTH 8

/* The smallest encodings, for bounding counts by the bytes left. */
#define KV_MIN_BYTES (8 + 4 + 1)          /* empty key, type, one-byte value */
#define TENSOR_INFO_MIN_BYTES (8 + 4 + 4 + 8) /* empty name, no dims */
#define STRING_MIN_BYTES 8
#define ARRAY_MIN_BYTES (4 + 8)

/* The one KV pair the reader needs: where the data section starts. */
#define ALIGNMENT_KEY "general.alignment"
#define DEFAULT_ALIGNMENT 32

enum gguf_value_type {
	GGUF_U8 = 0,
	GGUF_I8 = 1,
	GGUF_U16 = 2,
	GGUF_I16 = 3,
	GGUF_U32 = 4,
	GGUF_I32 = 5,
	GGUF_F32 = 6,
	GGUF_BOOL = 7,
	GGUF_STRING = 8,
	GGUF_ARRAY = 9,
	GGUF_U64 = 10,
	GGUF_I64 = 11,
	GGUF_F64 = 12,
	GGUF_VALUE_TYPE_COUNT
};

/* Encoded size of each fixed-size value type; 0 for string and array. */
static const unsigned char fixed_value_bytes[GGUF_VALUE_TYPE_COUNT] = {
	[GGUF_U8] = 1,  [GGUF_I8] = 1,  [GGUF_U16] = 2, [GGUF_I16] = 2, [GGUF_U32] = 4,
	[GGUF_I32] = 4, [GGUF_F32] = 4, [GGUF_BOOL] = 1, [GGUF_U64] = 8, [GGUF_I64] = 8,
	[GGUF_F64] = 8,
};

struct reader {
	int fd;
	const char *path;
	uint64_t size;
	uint64_t pos;       /* next byte to consume */
	uint64_t buf_start; /* file offset of buf[0] */
	size_t buf_len;
	unsigned char *buf;
	char where[64];     /* "KV pair 3", "tensor info 7": prefixes format errors */
	uint32_t alignment; /* of the data section and of every tensor's offset */
	int alignment_seen;
	struct mp_error *err;
};

/*
 * The furthest end of tensor data seen so far, relative to the data
 * section: its start is only known once every tensor info is read.
 */
struct data_extent {
	int any;           /* a tensor of a known type was seen */
	uint64_t max_end;
	char name[MP_GGUF_NAME_MAX + 1]; /* the first tensor ending at max_end */
};

static enum mp_err corrupt(struct reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static enum mp_err corrupt(struct reader *r, const char *fmt, ...)
{
	char detail[MP_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	if (r->where[0])
		return mp_fail(r->err, MP_E_GGUF_FORMAT, "%s: %s: %s",
			       mp_err_summary(MP_E_GGUF_FORMAT), r->where, detail);
	return mp_fail(r->err, MP_E_GGUF_FORMAT, "%s: %s", mp_err_summary(MP_E_GGUF_FORMAT),
		       detail);
}

static uint64_t bytes_left(const struct reader *r)
{
	return r->size - r->pos;
}

static enum mp_err need(struct reader *r, uint64_t n, const char *what)
{
	if (n > bytes_left(r))
		return corrupt(r, "%s of %llu bytes at offset %llu runs past the end of the "
			       "file (%llu bytes left)", what, (unsigned long long)n,
			       (unsigned long long)r->pos, (unsigned long long)bytes_left(r));
	return MP_OK;
}

static enum mp_err fill(struct reader *r)
{
	uint64_t want = bytes_left(r) < READ_CHUNK ? bytes_left(r) : READ_CHUNK;
	size_t done = 0;

	while (done < want) {
		ssize_t got = pread(r->fd, r->buf + done, (size_t)want - done,
				    (off_t)(r->pos + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return mp_fail(r->err, MP_E_GGUF_IO,
				       "cannot read GGUF file %s at byte %llu: %s", r->path,
				       (unsigned long long)(r->pos + done), strerror(errno));
		if (got == 0)
			return mp_fail(r->err, MP_E_GGUF_IO,
				       "cannot read GGUF file %s at byte %llu: the file shrank",
				       r->path, (unsigned long long)(r->pos + done));
		done += (size_t)got;
	}
	r->buf_start = r->pos;
	r->buf_len = done;
	return MP_OK;
}

static enum mp_err read_bytes(struct reader *r, void *dst, uint64_t n, const char *what)
{
	unsigned char *out = dst;
	enum mp_err rc = need(r, n, what);

	while (!rc && n) {
		size_t avail, take;

		if (r->pos < r->buf_start || r->pos >= r->buf_start + r->buf_len) {
			rc = fill(r);
			if (rc)
				break;
		}
		avail = (size_t)(r->buf_start + r->buf_len - r->pos);
		take = n < avail ? (size_t)n : avail;
		memcpy(out, r->buf + (r->pos - r->buf_start), take);
		out += take;
		r->pos += take;
		n -= take;
	}
	return rc;
}

static enum mp_err skip_bytes(struct reader *r, uint64_t n, const char *what)
{
	enum mp_err rc = need(r, n, what);

	if (!rc)
		r->pos += n;
	return rc;
}

static enum mp_err read_u32(struct reader *r, uint32_t *v, const char *what)
{
	unsigned char b[4];
	enum mp_err rc = read_bytes(r, b, sizeof b, what);

	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return rc;
}

static enum mp_err read_u64(struct reader *r, uint64_t *v, const char *what)
{
	unsigned char b[8];
	enum mp_err rc = read_bytes(r, b, sizeof b, what);

	*v = 0;
	for (int i = 7; i >= 0; i--)
		*v = *v << 8 | b[i];
	return rc;
}

static enum mp_err skip_string(struct reader *r, const char *what)
{
	uint64_t len;
	enum mp_err rc = read_u64(r, &len, what);

	return rc ? rc : skip_bytes(r, len, what);
}

static uint64_t min_value_bytes(uint32_t type)
{
	if (type == GGUF_STRING)
		return STRING_MIN_BYTES;
	if (type == GGUF_ARRAY)
		return ARRAY_MIN_BYTES;
	return fixed_value_bytes[type];
}

static enum mp_err skip_value(struct reader *r, uint32_t type, unsigned depth);

static enum mp_err skip_array(struct reader *r, unsigned depth)
{
	uint32_t elem;
	uint64_t count, min;
	enum mp_err rc;

	if (depth >= MAX_ARRAY_DEPTH)
		return corrupt(r, "arrays nested more than %d deep", MAX_ARRAY_DEPTH);
	rc = read_u32(r, &elem, "array element type");
	if (!rc)
		rc = read_u64(r, &count, "array length");
	if (rc)
		return rc;
	if (elem >= GGUF_VALUE_TYPE_COUNT)
		return corrupt(r, "unknown array element type %u", elem);
	min = min_value_bytes(elem);
	if (count > bytes_left(r) / min)
		return corrupt(r, "array of %llu elements of type %u cannot fit in the %llu "
			       "bytes left at offset %llu", (unsigned long long)count, elem,
			       (unsigned long long)bytes_left(r), (unsigned long long)r->pos);
	if (fixed_value_bytes[elem])
		return skip_bytes(r, count * min, "array");
	/* Each element consumes at least `min` bytes, so this loop is bounded
	 * by the file's size, not by the count alone. */
	for (uint64_t i = 0; i < count && !rc; i++)
		rc = skip_value(r, elem, depth + 1);
	return rc;
}

static enum mp_err skip_value(struct reader *r, uint32_t type, unsigned depth)
{
	if (type == GGUF_STRING)
		return skip_string(r, "string value");
	if (type == GGUF_ARRAY)
		return skip_array(r, depth);
	if (type >= GGUF_VALUE_TYPE_COUNT)
		return corrupt(r, "unknown value type %u", type);
	return skip_bytes(r, fixed_value_bytes[type], "value");
}

static enum mp_err read_header(struct reader *r, struct mp_gguf_header *h)
{
	unsigned char magic[4];
	enum mp_err rc = read_bytes(r, magic, sizeof magic, "magic");

	if (rc)
		return rc;
	if (memcmp(magic, "GGUF", 4) != 0)
		return corrupt(r, "bad magic %02x %02x %02x %02x, expected \"GGUF\"", magic[0],
			       magic[1], magic[2], magic[3]);
	rc = read_u32(r, &h->version, "version");
	if (rc)
		return rc;
	if (h->version != 2 && h->version != 3) {
		/* a big-endian GGUF has its small version number in the top byte */
		const char *hint = (h->version & 0x00ffffffu) == 0 ? " (big-endian file?)" : "";

		return corrupt(r, "unsupported version %u%s, expected 2 or 3", h->version,
			       hint);
	}
	rc = read_u64(r, &h->tensor_count, "tensor count");
	if (!rc)
		rc = read_u64(r, &h->kv_count, "KV count");
	if (rc)
		return rc;
	if (h->tensor_count > bytes_left(r) / TENSOR_INFO_MIN_BYTES)
		return corrupt(r, "tensor count %llu cannot fit in the %llu bytes left",
			       (unsigned long long)h->tensor_count,
			       (unsigned long long)bytes_left(r));
	if (h->kv_count > bytes_left(r) / KV_MIN_BYTES)
		return corrupt(r, "KV count %llu cannot fit in the %llu bytes left",
			       (unsigned long long)h->kv_count,
			       (unsigned long long)bytes_left(r));
	return MP_OK;
}

/* Read a key, setting *is_alignment when it is general.alignment. */
static enum mp_err read_key(struct reader *r, int *is_alignment)
{
	char key[sizeof ALIGNMENT_KEY - 1];
	uint64_t len;
	enum mp_err rc = read_u64(r, &len, "key");

	*is_alignment = 0;
	if (rc)
		return rc;
	if (len != sizeof key)
		return skip_bytes(r, len, "key");
	rc = read_bytes(r, key, sizeof key, "key");
	*is_alignment = !rc && memcmp(key, ALIGNMENT_KEY, sizeof key) == 0;
	return rc;
}

static enum mp_err read_alignment(struct reader *r, uint32_t type)
{
	uint32_t value;
	enum mp_err rc;

	if (r->alignment_seen)
		return corrupt(r, "%s appears twice", ALIGNMENT_KEY);
	if (type != GGUF_U32)
		return corrupt(r, "%s has value type %u, must be u32 (%d)", ALIGNMENT_KEY,
			       type, GGUF_U32);
	rc = read_u32(r, &value, ALIGNMENT_KEY);
	if (rc)
		return rc;
	if (value == 0 || (value & (value - 1)) != 0)
		return corrupt(r, "%s is %u, must be a power of two", ALIGNMENT_KEY, value);
	r->alignment = value;
	r->alignment_seen = 1;
	return MP_OK;
}

static enum mp_err skip_kv_pairs(struct reader *r, uint64_t kv_count)
{
	enum mp_err rc = MP_OK;

	for (uint64_t i = 0; i < kv_count && !rc; i++) {
		uint32_t type;
		int is_alignment;

		snprintf(r->where, sizeof r->where, "KV pair %llu", (unsigned long long)i);
		rc = read_key(r, &is_alignment);
		if (!rc)
			rc = read_u32(r, &type, "value type");
		if (!rc)
			rc = is_alignment ? read_alignment(r, type) : skip_value(r, type, 0);
	}
	r->where[0] = '\0';
	return rc;
}

static enum mp_err read_tensor_info(struct reader *r, struct mp_gguf_tensor *t,
				    char name[MP_GGUF_NAME_MAX + 1])
{
	uint64_t kept, elements = 1;
	enum mp_err rc = read_u64(r, &t->name_len, "name length");

	if (!rc)
		rc = need(r, t->name_len, "name");
	if (rc)
		return rc;
	kept = t->name_len < MP_GGUF_NAME_MAX ? t->name_len : MP_GGUF_NAME_MAX;
	rc = read_bytes(r, name, kept, "name");
	if (!rc)
		rc = skip_bytes(r, t->name_len - kept, "name");
	if (rc)
		return rc;
	name[kept] = '\0';
	t->name = name;
	t->name_truncated = kept < t->name_len;

	rc = read_u32(r, &t->n_dims, "dimension count");
	if (rc)
		return rc;
	if (t->n_dims > MP_GGUF_MAX_DIMS)
		return corrupt(r, "%u dimensions, at most %d allowed", t->n_dims,
			       MP_GGUF_MAX_DIMS);
	for (unsigned d = 0; d < MP_GGUF_MAX_DIMS; d++)
		t->dims[d] = 1;
	for (unsigned d = 0; d < t->n_dims; d++) {
		rc = read_u64(r, &t->dims[d], "dimension");
		if (rc)
			return rc;
		/* ggml holds dimensions and element counts as int64_t */
		if (t->dims[d] > INT64_MAX ||
		    __builtin_mul_overflow(elements, t->dims[d], &elements) ||
		    elements > INT64_MAX)
			return corrupt(r, "dimension %u (%llu) overflows the element count", d,
				       (unsigned long long)t->dims[d]);
	}
	rc = read_u32(r, &t->type, "type");
	if (!rc)
		rc = read_u64(r, &t->offset, "data offset");
	return rc;
}

/* Types with one weight per block, which quant.h does not list. */
static const struct mp_quant_type plain_types[] = {
	{"F32", 0, 1, 4},
	{"F16", 1, 1, 2},
	{"BF16", 30, 1, 2},
};

static const struct mp_quant_type *tensor_type(uint32_t id)
{
	for (size_t i = 0; i < sizeof plain_types / sizeof plain_types[0]; i++)
		if ((uint32_t)plain_types[i].id == id)
			return &plain_types[i];
	return id <= INT32_MAX ? mp_quant_by_id((int)id) : NULL;
}

/*
 * Check what can be checked of a tensor's data before the data section's
 * start is known, and fold its end into *ext.  Tensors of types we do not
 * know have a size we cannot compute; they are left alone.
 */
static enum mp_err note_tensor_data(struct reader *r, const struct mp_gguf_tensor *t,
				    struct data_extent *ext)
{
	const struct mp_quant_type *q = tensor_type(t->type);
	uint64_t elements = 1, nbytes, end;

	if (!q)
		return MP_OK;
	if (t->offset % r->alignment)
		return corrupt(r, "tensor %s data offset %llu is not a multiple of the "
			       "alignment %u", t->name, (unsigned long long)t->offset,
			       r->alignment);
	if (t->dims[0] % q->block_weights)
		return corrupt(r, "tensor %s row of %llu weights is not a whole number of "
			       "%s blocks of %u", t->name, (unsigned long long)t->dims[0],
			       q->name, q->block_weights);
	/* read_tensor_info bounded this product by INT64_MAX */
	for (unsigned d = 0; d < MP_GGUF_MAX_DIMS; d++)
		elements *= t->dims[d];
	if (__builtin_mul_overflow(elements / q->block_weights, (uint64_t)q->block_bytes,
				   &nbytes) ||
	    __builtin_add_overflow(t->offset, nbytes, &end))
		return corrupt(r, "tensor %s data at offset %llu overflows the file offsets",
			       t->name, (unsigned long long)t->offset);
	if (!ext->any || end > ext->max_end) {
		size_t kept = t->name_len < MP_GGUF_NAME_MAX ? (size_t)t->name_len
							     : MP_GGUF_NAME_MAX;

		ext->any = 1;
		ext->max_end = end;
		memcpy(ext->name, t->name, kept + 1);
	}
	return MP_OK;
}

static enum mp_err check_data_extent(struct reader *r, const struct data_extent *ext)
{
	uint64_t data_start, end;

	if (!ext->any)
		return MP_OK;
	/* pos <= size < 2^63 and the alignment fits 32 bits: no overflow */
	data_start = (r->pos + r->alignment - 1) / r->alignment * r->alignment;
	if (__builtin_add_overflow(data_start, ext->max_end, &end))
		return corrupt(r, "tensor %s data ends past byte %llu, the file has %llu bytes",
			       ext->name, (unsigned long long)UINT64_MAX,
			       (unsigned long long)r->size);
	if (end > r->size)
		return corrupt(r, "tensor %s data ends at byte %llu, the file has %llu bytes",
			       ext->name, (unsigned long long)end, (unsigned long long)r->size);
	return MP_OK;
}

enum mp_err mp_gguf_read(int fd, const char *path, struct mp_gguf_header *hdr,
			 mp_gguf_tensor_fn fn, void *ctx, struct mp_error *err)
{
	struct reader r = {.fd = fd, .path = path, .err = err, .alignment = DEFAULT_ALIGNMENT};
	struct mp_gguf_header h = {0};
	char name[MP_GGUF_NAME_MAX + 1];
	struct data_extent ext = {0};
	struct stat st;
	enum mp_err rc;

	if (fstat(fd, &st) < 0)
		return mp_fail(err, MP_E_GGUF_IO, "cannot read GGUF file %s: %s", path,
			       strerror(errno));
	if (!S_ISREG(st.st_mode))
		return mp_fail(err, MP_E_GGUF_IO, "cannot read GGUF file %s: %s", path,
			       S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
	r.size = (uint64_t)st.st_size;
	r.buf = malloc(READ_CHUNK);
	if (!r.buf)
		return mp_fail(err, MP_E_NOMEM, "out of memory");

	rc = read_header(&r, &h);
	if (!rc)
		rc = skip_kv_pairs(&r, h.kv_count);
	if (!rc && h.tensor_count > bytes_left(&r) / TENSOR_INFO_MIN_BYTES)
		rc = corrupt(&r, "tensor count %llu cannot fit in the %llu bytes left after "
			     "the KV pairs", (unsigned long long)h.tensor_count,
			     (unsigned long long)bytes_left(&r));
	for (uint64_t i = 0; !rc && i < h.tensor_count; i++) {
		struct mp_gguf_tensor t = {.index = i};

		snprintf(r.where, sizeof r.where, "tensor info %llu", (unsigned long long)i);
		rc = read_tensor_info(&r, &t, name);
		if (!rc)
			rc = note_tensor_data(&r, &t, &ext);
		if (!rc && fn)
			rc = fn(&t, ctx, err);
	}
	r.where[0] = '\0';
	if (!rc)
		rc = check_data_extent(&r, &ext);
	free(r.buf);
	if (hdr)
		*hdr = h;
	return rc;
}

/* ---- the Kimi-K3 type rules --------------------------------------------- */

struct type_rule {
	const char *role;    /* the name after "blk.N." */
	int type;            /* the GGML type it must have */
	enum mp_err code;
	int say_required;    /* the summary does not name the required type */
};

static const struct type_rule type_rules[] = {
	{"attn_k_b.weight", MP_GGML_Q4_0, MP_E_GGUF_MLA_K, 0},
	{"attn_v_b.weight", MP_GGML_Q2_K, MP_E_GGUF_MLA_V, 0},
	{"ffn_up_exps.weight", MP_GGML_Q2_K, MP_E_GGUF_EXPERT_TYPE, 1},
	{"ffn_gate_exps.weight", MP_GGML_Q2_K, MP_E_GGUF_EXPERT_TYPE, 1},
	{"ffn_down_exps.weight", MP_GGML_Q3_K, MP_E_GGUF_EXPERT_TYPE, 1},
};

#define TYPE_RULE_COUNT (sizeof type_rules / sizeof type_rules[0])

/* The rule for a tensor named "blk.<decimal>.<role>", or NULL. */
static const struct type_rule *rule_for(const struct mp_gguf_tensor *t)
{
	const char *p = t->name;

	/* a NUL inside the name or a cut-off name cannot be one we judge */
	if (t->name_truncated || strlen(t->name) != t->name_len)
		return NULL;
	if (strncmp(p, "blk.", 4) != 0)
		return NULL;
	p += 4;
	if (*p < '0' || *p > '9')
		return NULL;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p++ != '.')
		return NULL;
	for (size_t i = 0; i < TYPE_RULE_COUNT; i++)
		if (strcmp(p, type_rules[i].role) == 0)
			return &type_rules[i];
	return NULL;
}

/* "Q4_K (12)" for types we know, "type 20" for the others. */
static const char *type_text(char *buf, size_t len, uint32_t id)
{
	const struct mp_quant_type *q = id <= INT32_MAX ? mp_quant_by_id((int)id) : NULL;

	if (q)
		snprintf(buf, len, "%s (%u)", q->name, id);
	else
		snprintf(buf, len, "type %u", id);
	return buf;
}

static enum mp_err check_tensor(const struct mp_gguf_tensor *t, void *ctx,
				struct mp_error *err)
{
	struct mp_gguf_check_result *res = ctx;
	const struct type_rule *rule = rule_for(t);
	char have[32], want[32];

	if (!rule)
		return MP_OK;
	res->tensors_checked++;
	if (t->type == (uint32_t)rule->type)
		return MP_OK;
	type_text(have, sizeof have, t->type);
	type_text(want, sizeof want, (uint32_t)rule->type);
	return mp_fail(err, rule->code, "%s: %s is %s%s%s", mp_err_summary(rule->code),
		       t->name, have, rule->say_required ? ", must be " : "",
		       rule->say_required ? want : "");
}

enum mp_err mp_gguf_check_fd(int fd, const char *path, struct mp_gguf_check_result *res,
			     struct mp_error *err)
{
	struct mp_gguf_check_result local = {0};
	struct mp_gguf_header h = {0};
	enum mp_err rc = mp_gguf_read(fd, path, &h, check_tensor, &local, err);

	local.tensor_count = h.tensor_count;
	if (res)
		*res = local;
	return rc;
}

enum mp_err mp_gguf_check_file(const char *path, struct mp_gguf_check_result *res,
			       struct mp_error *err)
{
	struct stat st;
	enum mp_err rc;
	int fd;

	if ((rc = mp_open_regular(path, "GGUF file", MP_E_GGUF_IO, &fd, &st, err))) {
		if (res)
			*res = (struct mp_gguf_check_result){0};
		return rc;
	}
	rc = mp_gguf_check_fd(fd, path, res, err);
	close(fd);
	return rc;
}
