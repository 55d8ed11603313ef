/*
 * gguf.c - GGUF metadata reader and the Kimi-K3 tensor quant type check.
 *
 * A GGUF file is read front to back through a small buffered reader that
 * knows the file's size: every read or skip is checked against the bytes
 * left and the metadata limit first, and every count is checked against
 * the limits of gguf.h and what the bytes left could hold before anything
 * loops on it.  Memory grows only with bytes actually read (keys and tensor
 * names, to find duplicates), never with a count.
 *
 * What is refused follows ggml's gguf_init_from_file() (ggml 0.23.0): a
 * file this reader passes must be one ggml loads, with the same tensor names
 * and types, or check-gguf would vouch for a file the loader rejects, or
 * judge a tensor under a name the loader does not use.  Where following
 * ggml exactly is costly, the reader is stricter, never laxer.
 */
#include "config.h"

#include "writer/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/quant.h"
#include "base/text.h"

/* Bytes fetched per pread: the metadata of a real checkpoint (a vocabulary
 * of ~160k strings, ~1500 tensor infos) takes a few MB. */
#define READ_CHUNK (64 * 1024)

/* The smallest encodings, for bounding counts by the bytes left. */
#define KV_MIN_BYTES (8 + 4 + 1)          /* empty key, type, one-byte value */
#define TENSOR_INFO_MIN_BYTES (8 + 4 + 4 + 8) /* empty name, no dims */
#define STRING_MIN_BYTES 8

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

/* A key or tensor name kept to find duplicates: bytes in an arena. */
struct name_ref {
	uint64_t off;   /* into the arena */
	uint32_t len;
	uint32_t index; /* KV pair or tensor info number (both < 2^32 by the limits) */
};

struct name_set {
	char *arena;
	uint64_t arena_len, arena_cap;
	struct name_ref *refs;
	size_t count, cap;
};

/* Where a tensor's data lies, to name the tensor another one overlaps. */
struct tensor_span {
	uint64_t offset, nbytes;
};

struct reader {
	int fd;
	const char *path;
	uint64_t size;
	uint64_t pos;       /* next byte to consume */
	uint64_t buf_start; /* file offset of buf[0] */
	size_t buf_len;
	unsigned char *buf;
	/* "KV pair 3", "tensor info 7": prefixes format errors.  Kept as a
	 * label and a number, formatted only on error: a million snprintf()
	 * calls would be a tenth of the time a million tensor infos take. */
	const char *where;
	uint64_t where_index;
	uint32_t alignment; /* of the data section and of every tensor's offset */
	int alignment_seen;
	uint64_t array_elements; /* of all arrays so far */
	struct name_set keys, names;
	struct tensor_span *spans; /* one per tensor info read, in file order */
	uint64_t expected_offset;  /* where ggml wants the next tensor's data */
	struct mp_error *err;
};

/*
 * The furthest end of tensor data seen so far, relative to the data
 * section: its start is only known once every tensor info is read.
 */
struct data_extent {
	int any;           /* a tensor with data was seen */
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
	if (r->where)
		return mp_fail(r->err, MP_E_GGUF_FORMAT, "%s: %s %llu: %s",
			       mp_err_summary(MP_E_GGUF_FORMAT), r->where,
			       (unsigned long long)r->where_index, detail);
	return mp_fail(r->err, MP_E_GGUF_FORMAT, "%s: %s", mp_err_summary(MP_E_GGUF_FORMAT),
		       detail);
}

static uint64_t bytes_left(const struct reader *r)
{
	return r->size - r->pos;
}

/* Bytes left before the end of the file or of the metadata limit. */
static uint64_t metadata_left(const struct reader *r)
{
	uint64_t limit = r->size < MP_GGUF_MAX_METADATA ? r->size : MP_GGUF_MAX_METADATA;

	return r->pos < limit ? limit - r->pos : 0;
}

static enum mp_err need(struct reader *r, uint64_t n, const char *what)
{
	if (n > bytes_left(r))
		return corrupt(r, "%s of %llu bytes at offset %llu runs past the end of the "
			       "file (%llu bytes left)", what, (unsigned long long)n,
			       (unsigned long long)r->pos, (unsigned long long)bytes_left(r));
	if (n > metadata_left(r))
		return corrupt(r, "%s of %llu bytes at offset %llu runs past the limit of %u "
			       "bytes of metadata", what, (unsigned long long)n,
			       (unsigned long long)r->pos, MP_GGUF_MAX_METADATA);
	return MP_OK;
}

static enum mp_err fill(struct reader *r)
{
	uint64_t want = bytes_left(r) < READ_CHUNK ? bytes_left(r) : READ_CHUNK;
	enum mp_err rc = mp_pread_full(r->fd, r->buf, (size_t)want, r->pos, "GGUF file", r->path,
				       MP_E_GGUF_IO, r->err);

	if (rc)
		return rc;
	r->buf_start = r->pos;
	r->buf_len = (size_t)want;
	return MP_OK;
}

static enum mp_err read_bytes(struct reader *r, void *dst, uint64_t n, const char *what)
{
	unsigned char *out = dst;
	enum mp_err rc;

	/* the common case, a few bytes already buffered: 16M string lengths
	 * of a crafted array must cost little more than a memcpy each */
	if (r->pos >= r->buf_start && r->pos - r->buf_start <= r->buf_len &&
	    n <= r->buf_len - (r->pos - r->buf_start) && n <= metadata_left(r)) {
		memcpy(out, r->buf + (r->pos - r->buf_start), (size_t)n);
		r->pos += n;
		return MP_OK;
	}
	rc = need(r, n, what);

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

/* Skipped bytes are never fetched: a long string costs one check. */
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

/* ---- keys and names, for duplicates ------------------------------------- */

static void name_set_free(struct name_set *s)
{
	free(s->arena);
	free(s->refs);
}

/*
 * Make room for n more bytes and one more entry.  n comes from bytes the
 * file has (checked by need() first), so memory follows the file's size.
 */
static enum mp_err name_set_reserve(struct reader *r, struct name_set *s, uint64_t n)
{
	/* allocated even for n == 0: memcpy() wants a real pointer */
	if (!s->arena || s->arena_len + n > s->arena_cap) {
		uint64_t cap = s->arena_cap ? s->arena_cap : 4096;
		char *grown;

		while (cap < s->arena_len + n)
			cap *= 2;
		grown = realloc(s->arena, (size_t)cap);
		if (!grown)
			return mp_fail(r->err, MP_E_NOMEM, "out of memory");
		s->arena = grown;
		s->arena_cap = cap;
	}
	if (s->count == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct name_ref *grown = realloc(s->refs, cap * sizeof *grown);

		if (!grown)
			return mp_fail(r->err, MP_E_NOMEM, "out of memory");
		s->refs = grown;
		s->cap = cap;
	}
	return MP_OK;
}

/* Keep the n bytes just written at the arena's end as entry `index`. */
static void name_set_push(struct name_set *s, uint32_t n, uint64_t index)
{
	s->refs[s->count++] = (struct name_ref){s->arena_len, n, (uint32_t)index};
	s->arena_len += n;
}

/* qsort() passes no context, so each entry to sort carries its arena. */
struct ref_view {
	const char *arena;
	struct name_ref ref;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref_view *x = a, *y = b;
	uint32_t n = x->ref.len < y->ref.len ? x->ref.len : y->ref.len;
	int c = memcmp(x->arena + x->ref.off, y->arena + y->ref.off, n);

	if (c)
		return c;
	if (x->ref.len != y->ref.len)
		return x->ref.len < y->ref.len ? -1 : 1;
	return x->ref.index < y->ref.index ? -1 : x->ref.index > y->ref.index;
}

/*
 * Find two equal entries by sorting, O(n log n) even for a million names.
 * Of all pairs, the one whose later entry comes first in the file is
 * reported, as ggml (which compares each entry with all before it) would.
 */
static enum mp_err find_duplicate(struct reader *r, const struct name_set *s, int *found,
				  struct name_ref *first, struct name_ref *second)
{
	struct ref_view *v;

	*found = 0;
	if (s->count < 2)
		return MP_OK;
	v = malloc(s->count * sizeof *v);
	if (!v)
		return mp_fail(r->err, MP_E_NOMEM, "out of memory");
	for (size_t i = 0; i < s->count; i++)
		v[i] = (struct ref_view){s->arena, s->refs[i]};
	qsort(v, s->count, sizeof *v, ref_cmp);
	for (size_t i = 1; i < s->count; i++) {
		const struct name_ref *a = &v[i - 1].ref, *b = &v[i].ref;

		if (a->len != b->len || memcmp(s->arena + a->off, s->arena + b->off, a->len))
			continue;
		/* a run of equal entries is in file order, so its first pair,
		 * the only one that can win here, is its first two entries */
		if (!*found || b->index < second->index) {
			*first = *a;
			*second = *b;
			*found = 1;
		}
	}
	free(v);
	return MP_OK;
}

/* ---- KV pairs ------------------------------------------------------------ */

static enum mp_err skip_string(struct reader *r, const char *what)
{
	uint64_t len;
	enum mp_err rc = read_u64(r, &len, what);

	return rc ? rc : skip_bytes(r, len, what);
}

static enum mp_err skip_array(struct reader *r)
{
	uint32_t elem;
	uint64_t count, min;
	enum mp_err rc = read_u32(r, &elem, "array element type");

	if (!rc)
		rc = read_u64(r, &count, "array length");
	if (rc)
		return rc;
	/* ggml reads arrays of fixed-size values and of strings only */
	if (elem == GGUF_ARRAY)
		return corrupt(r, "array of arrays, which ggml does not read");
	if (elem >= GGUF_VALUE_TYPE_COUNT)
		return corrupt(r, "unknown array element type %u", elem);
	if (count > MP_GGUF_MAX_ARRAY_ELEMENTS - r->array_elements)
		return corrupt(r, "array of %llu elements exceeds the limit of %u elements "
			       "in all arrays (%llu before it)", (unsigned long long)count,
			       MP_GGUF_MAX_ARRAY_ELEMENTS, (unsigned long long)r->array_elements);
	r->array_elements += count;
	min = elem == GGUF_STRING ? STRING_MIN_BYTES : fixed_value_bytes[elem];
	if (count > metadata_left(r) / min)
		return corrupt(r, "array of %llu elements of type %u cannot fit in the %llu "
			       "bytes left at offset %llu", (unsigned long long)count, elem,
			       (unsigned long long)metadata_left(r), (unsigned long long)r->pos);
	if (elem != GGUF_STRING)
		return skip_bytes(r, count * min, "array");
	/* bounded by the element limit, and each string costs 8 bytes */
	for (uint64_t i = 0; i < count && !rc; i++)
		rc = skip_string(r, "string value");
	return rc;
}

static enum mp_err skip_value(struct reader *r, uint32_t type)
{
	if (type == GGUF_STRING)
		return skip_string(r, "string value");
	if (type == GGUF_ARRAY)
		return skip_array(r);
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
	if (h->tensor_count > MP_GGUF_MAX_TENSORS)
		return corrupt(r, "tensor count %llu exceeds the limit of %u",
			       (unsigned long long)h->tensor_count, MP_GGUF_MAX_TENSORS);
	if (h->kv_count > MP_GGUF_MAX_KV)
		return corrupt(r, "KV count %llu exceeds the limit of %u",
			       (unsigned long long)h->kv_count, MP_GGUF_MAX_KV);
	if (h->tensor_count > metadata_left(r) / TENSOR_INFO_MIN_BYTES)
		return corrupt(r, "tensor count %llu cannot fit in the %llu bytes left",
			       (unsigned long long)h->tensor_count,
			       (unsigned long long)metadata_left(r));
	if (h->kv_count > metadata_left(r) / KV_MIN_BYTES)
		return corrupt(r, "KV count %llu cannot fit in the %llu bytes left",
			       (unsigned long long)h->kv_count,
			       (unsigned long long)metadata_left(r));
	return MP_OK;
}

/* The keys whose values are read rather than skipped. */
enum special_key {
	KEY_OTHER,
	KEY_ALIGNMENT,
	KEY_SPLIT_NO,
	KEY_SPLIT_COUNT,
	KEY_SPLIT_TENSORS_COUNT,
	KEY_ARCHITECTURE,
};

static const char *const special_keys[] = {
	[KEY_ALIGNMENT] = ALIGNMENT_KEY,
	[KEY_SPLIT_NO] = "split.no",
	[KEY_SPLIT_COUNT] = "split.count",
	[KEY_SPLIT_TENSORS_COUNT] = "split.tensors.count",
	[KEY_ARCHITECTURE] = "general.architecture",
};

#define SPECIAL_KEY_COUNT (sizeof special_keys / sizeof special_keys[0])

/* Read key i into the key set; *which says whether it is one to read. */
static enum mp_err read_key(struct reader *r, uint64_t i, enum special_key *which)
{
	uint64_t len, at;
	enum mp_err rc = read_u64(r, &len, "key");

	*which = KEY_OTHER;
	if (rc)
		return rc;
	/* ggml's reader refuses an empty key before anything else about it */
	if (len == 0)
		return corrupt(r, "the key is empty");
	if (len > MP_GGUF_MAX_KEY)
		return corrupt(r, "key of %llu bytes exceeds the limit of %u bytes",
			       (unsigned long long)len, MP_GGUF_MAX_KEY);
	if (r->keys.arena_len + len > MP_GGUF_MAX_KEY_BYTES)
		return corrupt(r, "keys exceed the limit of %u bytes in all",
			       MP_GGUF_MAX_KEY_BYTES);
	rc = need(r, len, "key");
	if (!rc)
		rc = name_set_reserve(r, &r->keys, len);
	if (!rc)
		rc = read_bytes(r, r->keys.arena + r->keys.arena_len, len, "key");
	if (rc)
		return rc;
	at = r->keys.arena_len;
	name_set_push(&r->keys, (uint32_t)len, i);
	for (size_t k = 1; k < SPECIAL_KEY_COUNT; k++)
		if (len == strlen(special_keys[k]) &&
		    memcmp(r->keys.arena + at, special_keys[k], len) == 0)
			*which = (enum special_key)k;
	return MP_OK;
}

/*
 * An integer value of any integer type, as the reference reads split.*
 * keys; any other type is skipped and leaves is_integer 0.
 */
static enum mp_err read_int_value(struct reader *r, uint32_t type, struct mp_gguf_int *v)
{
	unsigned char b[8] = {0};
	unsigned n;
	uint64_t u = 0;
	enum mp_err rc;

	v->present = 1;
	v->is_integer = 0;
	if (type >= GGUF_VALUE_TYPE_COUNT || type == GGUF_F32 || type == GGUF_F64 ||
	    type == GGUF_BOOL || type == GGUF_STRING || type == GGUF_ARRAY)
		return skip_value(r, type);
	n = fixed_value_bytes[type];
	rc = read_bytes(r, b, n, "value");
	if (rc)
		return rc;
	for (int i = (int)n - 1; i >= 0; i--)
		u = u << 8 | b[i];
	v->is_integer = 1;
	if (type == GGUF_I8 || type == GGUF_I16 || type == GGUF_I32 || type == GGUF_I64) {
		unsigned bits = 8 * n;
		/* sign-extend from the value's width */
		if (bits < 64 && (u >> (bits - 1)) & 1)
			u |= ~0ULL << bits;
		v->value = (int64_t)u;
	} else {
		v->value = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
	}
	return MP_OK;
}

static enum mp_err read_architecture(struct reader *r, uint32_t type,
				     struct mp_gguf_header *h)
{
	uint64_t len, keep;
	enum mp_err rc;

	if (type != GGUF_STRING)
		return skip_value(r, type);
	rc = read_u64(r, &len, "string value");
	if (!rc)
		rc = need(r, len, "string value");
	if (rc)
		return rc;
	keep = len < MP_GGUF_ARCH_MAX ? len : MP_GGUF_ARCH_MAX;
	rc = read_bytes(r, h->architecture, keep, "string value");
	if (!rc)
		rc = skip_bytes(r, len - keep, "string value");
	if (rc)
		return rc;
	h->architecture[keep] = '\0';
	h->has_architecture = 1;
	h->architecture_cut = len > keep;
	return MP_OK;
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

static enum mp_err check_duplicate_keys(struct reader *r)
{
	struct name_ref a, b;
	char key[256];
	int found;
	enum mp_err rc = find_duplicate(r, &r->keys, &found, &a, &b);

	if (rc || !found)
		return rc;
	/* a key may hold any byte, NUL included: escape it with its length */
	mp_text_escape(key, sizeof key, r->keys.arena + b.off, b.len, 0);
	r->where = "KV pair";
	r->where_index = b.index;
	/* escaped already: mp_fail() would escape its backslashes again */
	return mp_fail_escaped(r->err, MP_E_GGUF_FORMAT,
			       "%s: KV pair %u: duplicate key \"%s\" (KV pair %u has it too)",
			       mp_err_summary(MP_E_GGUF_FORMAT), b.index, key, a.index);
}

static enum mp_err read_kv_pairs(struct reader *r, struct mp_gguf_header *h)
{
	enum mp_err rc = MP_OK;

	for (uint64_t i = 0; i < h->kv_count && !rc; i++) {
		uint32_t type;
		enum special_key which;

		r->where = "KV pair";
		r->where_index = i;
		rc = read_key(r, i, &which);
		if (!rc)
			rc = read_u32(r, &type, "value type");
		if (rc)
			break;
		switch (which) {
		case KEY_ALIGNMENT:
			rc = read_alignment(r, type);
			break;
		case KEY_SPLIT_NO:
			rc = read_int_value(r, type, &h->split_no);
			break;
		case KEY_SPLIT_COUNT:
			rc = read_int_value(r, type, &h->split_count);
			break;
		case KEY_SPLIT_TENSORS_COUNT:
			rc = read_int_value(r, type, &h->split_tensors_count);
			break;
		case KEY_ARCHITECTURE:
			rc = read_architecture(r, type, h);
			break;
		default:
			rc = skip_value(r, type);
		}
	}
	if (!rc)
		rc = check_duplicate_keys(r);
	r->where = NULL;
	return rc;
}

/* ---- tensor infos -------------------------------------------------------- */

/*
 * ggml's test that the element count is representable, with the same
 * quotients, so that a shape it refuses is refused here too.  A dimension
 * of 0 counts as 1: ggml loads empty tensors, and this is then stricter.
 */
static int elements_overflow(const uint64_t ne[MP_GGUF_MAX_DIMS])
{
	uint64_t n[MP_GGUF_MAX_DIMS], prod;

	for (unsigned d = 0; d < MP_GGUF_MAX_DIMS; d++)
		n[d] = ne[d] ? ne[d] : 1;
	prod = n[0];
	for (unsigned d = 1; d < MP_GGUF_MAX_DIMS; d++) {
		if ((uint64_t)INT64_MAX / n[d] <= prod)
			return 1;
		prod *= n[d];
	}
	return 0;
}

static enum mp_err read_tensor_info(struct reader *r, struct mp_gguf_tensor *t,
				    char name[MP_GGUF_NAME_MAX + 1])
{
	enum mp_err rc = read_u64(r, &t->name_bytes, "name length");

	if (rc)
		return rc;
	/* ggml counts every byte, those after a NUL too */
	if (t->name_bytes > MP_GGUF_NAME_MAX)
		return corrupt(r, "name of %llu bytes is too long, ggml takes at most %d",
			       (unsigned long long)t->name_bytes, MP_GGUF_NAME_MAX);
	rc = read_bytes(r, name, t->name_bytes, "name");
	if (rc)
		return rc;
	name[t->name_bytes] = '\0';
	t->name = name;
	t->name_len = strlen(name);

	rc = read_u32(r, &t->n_dims, "dimension count");
	if (rc)
		return rc;
	if (t->n_dims > MP_GGUF_MAX_DIMS)
		return corrupt(r, "tensor %s has %u dimensions, at most %d allowed", name,
			       t->n_dims, MP_GGUF_MAX_DIMS);
	for (unsigned d = 0; d < MP_GGUF_MAX_DIMS; d++)
		t->dims[d] = 1;
	for (unsigned d = 0; d < t->n_dims; d++) {
		rc = read_u64(r, &t->dims[d], "dimension");
		if (rc)
			return rc;
		/* ggml holds dimensions as int64_t */
		if (t->dims[d] > INT64_MAX)
			return corrupt(r, "tensor %s dimension %u is negative (%lld)", name, d,
				       (long long)(int64_t)t->dims[d]);
	}
	if (elements_overflow(t->dims))
		return corrupt(r, "tensor %s of shape (%llu, %llu, %llu, %llu) has too many "
			       "elements for ggml (2^63 - 1 or more)", name,
			       (unsigned long long)t->dims[0], (unsigned long long)t->dims[1],
			       (unsigned long long)t->dims[2], (unsigned long long)t->dims[3]);
	rc = read_u32(r, &t->type, "type");
	if (!rc)
		rc = read_u64(r, &t->offset, "data offset");
	return rc;
}

const char *mp_gguf_type_name(uint32_t type)
{
	const struct mp_quant_type *q = mp_ggml_type(type);

	return q ? q->name : NULL;
}

const char *mp_gguf_type_text(char *buf, size_t len, uint32_t id)
{
	if (mp_ggml_type(id))
		snprintf(buf, len, "%s (%u)", mp_ggml_type(id)->name, id);
	else
		snprintf(buf, len, "type %u", id);
	return buf;
}

/* The tensor before `count` whose data holds byte `offset`, or -1. */
static int64_t overlapped(const struct reader *r, uint64_t count, uint64_t offset)
{
	uint64_t lo = 0, hi = count;

	/* the spans of the tensors read so far are in increasing offset order */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (r->spans[mid].offset <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo > 0) {
		const struct tensor_span *s = &r->spans[--lo];

		if (s->nbytes == 0)
			continue;
		return offset < s->offset + s->nbytes ? (int64_t)lo : -1;
	}
	return -1;
}

/* Tensor t's type and size as ggml checks them: t->nbytes, and the bytes
 * it takes padded to the alignment into *padded. */
static enum mp_err check_tensor_size(struct reader *r, struct mp_gguf_tensor *t,
				     uint64_t *padded)
{
	const struct mp_quant_type *q = mp_ggml_type(t->type);
	uint64_t elements = 1, nbytes;
	char type[48];

	if (!q)
		return corrupt(r, "tensor %s has type %u, ggml knows types 0 to %d", t->name,
			       t->type, MP_GGML_TYPE_COUNT - 1);
	if (q->block_weights == 0)
		return corrupt(r, "tensor %s has type %s, which ggml no longer loads", t->name,
			       mp_gguf_type_text(type, sizeof type, t->type));
	if (t->dims[0] % q->block_weights)
		return corrupt(r, "tensor %s row of %llu weights is not a whole number of "
			       "%s blocks of %u", t->name, (unsigned long long)t->dims[0],
			       q->name, q->block_weights);
	/* elements_overflow() bounded this product by INT64_MAX */
	for (unsigned d = 0; d < MP_GGUF_MAX_DIMS; d++)
		elements *= t->dims[d];
	if (__builtin_mul_overflow(elements / q->block_weights, (uint64_t)q->block_bytes,
				   &nbytes) ||
	    __builtin_add_overflow(nbytes, (uint64_t)r->alignment - 1, padded))
		return corrupt(r, "tensor %s of %llu elements has a size in bytes that "
			       "overflows 64 bits", t->name, (unsigned long long)elements);
	*padded = *padded / r->alignment * r->alignment;
	t->nbytes = nbytes;
	return MP_OK;
}

/* A data offset before the expected one: name the tensor it overlaps, if
 * any (else the caller's message on the offset says enough). */
static enum mp_err check_overlap(struct reader *r, const struct mp_gguf_tensor *t)
{
	int64_t other = overlapped(r, t->index, t->offset);
	const struct name_ref *o;
	const struct tensor_span *span;
	char name[MP_GGUF_NAME_MAX + 1];

	if (other < 0)
		return MP_OK;
	o = &r->names.refs[other];
	span = &r->spans[other];
	memcpy(name, r->names.arena + o->off, o->len);
	name[o->len] = '\0';
	return corrupt(r, "tensor %s data at offset %llu overlaps the data of "
		       "tensor %s (tensor info %lld, offsets %llu to %llu)",
		       t->name, (unsigned long long)t->offset, name,
		       (long long)other, (unsigned long long)span->offset,
		       (unsigned long long)(span->offset + span->nbytes));
}

/*
 * The checks ggml makes of a tensor's type, size and offset, then fold its
 * end into *ext.  ggml wants tensor i's data exactly at the sum of the sizes
 * of tensors 0..i-1, each padded to the alignment: that also rules out
 * overlaps, gaps and data out of file order.
 */
static enum mp_err check_tensor_data(struct reader *r, struct mp_gguf_tensor *t,
				     struct data_extent *ext)
{
	uint64_t padded = 0, end;
	enum mp_err rc = check_tensor_size(r, t, &padded);

	if (rc)
		return rc;
	if (t->offset % r->alignment)
		return corrupt(r, "tensor %s data offset %llu is not a multiple of the "
			       "alignment %u", t->name, (unsigned long long)t->offset,
			       r->alignment);
	if (t->offset < r->expected_offset && (rc = check_overlap(r, t)))
		return rc;
	if (t->offset != r->expected_offset)
		return corrupt(r, "tensor %s data offset %llu is not the %llu ggml expects "
			       "(the sizes of the tensors before it, each padded to %u bytes)",
			       t->name, (unsigned long long)t->offset,
			       (unsigned long long)r->expected_offset, r->alignment);
	if (__builtin_add_overflow(r->expected_offset, padded, &r->expected_offset))
		return corrupt(r, "tensor %s data ends past 2^64 bytes", t->name);
	r->spans[t->index] = (struct tensor_span){t->offset, t->nbytes};
	end = t->offset + t->nbytes;
	if (t->nbytes && (!ext->any || end > ext->max_end)) {
		ext->any = 1;
		ext->max_end = end;
		memcpy(ext->name, t->name, t->name_len + 1);
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

static enum mp_err check_duplicate_names(struct reader *r)
{
	struct name_ref a, b;
	char name[MP_GGUF_NAME_MAX + 1];
	int found;
	enum mp_err rc = find_duplicate(r, &r->names, &found, &a, &b);

	if (rc || !found)
		return rc;
	memcpy(name, r->names.arena + b.off, b.len);
	name[b.len] = '\0';
	r->where = "tensor info";
	r->where_index = b.index;
	return corrupt(r, "duplicate tensor name %s (tensor info %u has it too)", name,
		       a.index);
}

static enum mp_err read_tensor_infos(struct reader *r, uint64_t count, mp_gguf_tensor_fn fn,
				     void *ctx, struct data_extent *ext)
{
	char name[MP_GGUF_NAME_MAX + 1];
	enum mp_err rc = MP_OK;

	/* count <= MP_GGUF_MAX_TENSORS, and each info takes 24 bytes or more of
	 * a file that has them (read_header checked) */
	r->spans = malloc((count ? count : 1) * sizeof *r->spans);
	if (!r->spans)
		return mp_fail(r->err, MP_E_NOMEM, "out of memory");
	for (uint64_t i = 0; !rc && i < count; i++) {
		struct mp_gguf_tensor t = {.index = i};

		r->where = "tensor info";
		r->where_index = i;
		rc = read_tensor_info(r, &t, name);
		if (!rc)
			rc = name_set_reserve(r, &r->names, t.name_len);
		if (!rc) {
			memcpy(r->names.arena + r->names.arena_len, name, t.name_len);
			name_set_push(&r->names, (uint32_t)t.name_len, i);
		}
		if (!rc)
			rc = check_tensor_data(r, &t, ext);
		if (!rc && fn)
			rc = fn(&t, ctx, r->err);
	}
	if (!rc)
		rc = check_duplicate_names(r);
	r->where = NULL;
	return rc;
}

enum mp_err mp_gguf_read(int fd, const char *path, struct mp_gguf_header *hdr,
			 mp_gguf_tensor_fn fn, void *ctx, struct mp_error *err)
{
	struct reader r = {.fd = fd, .path = path, .err = err, .alignment = DEFAULT_ALIGNMENT};
	struct mp_gguf_header h = {0};
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
		rc = read_kv_pairs(&r, &h);
	if (!rc && h.tensor_count > metadata_left(&r) / TENSOR_INFO_MIN_BYTES)
		rc = corrupt(&r, "tensor count %llu cannot fit in the %llu bytes left after "
			     "the KV pairs", (unsigned long long)h.tensor_count,
			     (unsigned long long)metadata_left(&r));
	if (!rc)
		rc = read_tensor_infos(&r, h.tensor_count, fn, ctx, &ext);
	if (!rc)
		rc = check_data_extent(&r, &ext);
	h.alignment = r.alignment;
	/* pos < 2^63 and the alignment fits 32 bits */
	h.data_start = (r.pos + r.alignment - 1) / r.alignment * r.alignment;
	free(r.buf);
	free(r.spans);
	name_set_free(&r.keys);
	name_set_free(&r.names);
	if (hdr)
		*hdr = h;
	return rc;
}
