/*
 * check_gguf.c - the GGUF reader and the Kimi-K3 quant type check (src/gguf.c).
 *
 * The fixtures in tests/data/gguf were written by ggml's own GGUF writer
 * (tests/data/gguf/README), so what the reader must find there comes from
 * outside the code under test.  Corrupt inputs are made here by patching
 * bytes of the valid fixture, located by searching for known names rather
 * than with the reader itself.  A reader that trusted a patched count would
 * ask for exabytes (ASan aborts on that) or loop for ages (Check's timeout).
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "errors.h"
#include "gguf.h"

#define HUGE_COUNT (UINT64_C(1) << 62)

/* ggml type ids (ggml.h) */
#define GGML_F32 0
#define GGML_Q4_0 2
#define GGML_Q2_K 10
#define GGML_Q4_K 12

/* ---- helpers -------------------------------------------------------------- */

static char *fixture_path(const char *name)
{
	const char *top = getenv("top_srcdir");
	char *path;

	ck_assert_int_ge(asprintf(&path, "%s/tests/data/gguf/%s", top ? top : "..", name), 0);
	return path;
}

struct bytes {
	unsigned char *data;
	size_t len;
};

static struct bytes load_fixture(const char *name)
{
	char *path = fixture_path(name);
	struct bytes b = {0};
	FILE *f = fopen(path, "rb");
	long len;

	ck_assert_msg(f, "cannot open fixture %s (is top_srcdir set?)", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	ck_assert_int_gt(len, 0);
	rewind(f);
	b.len = (size_t)len;
	b.data = malloc(b.len);
	ck_assert_ptr_nonnull(b.data);
	ck_assert_uint_eq(fread(b.data, 1, b.len, f), b.len);
	fclose(f);
	free(path);
	return b;
}

/* Offset of the first occurrence of a string's bytes (without its NUL). */
static size_t find(const struct bytes *b, const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i + n <= b->len; i++)
		if (memcmp(b->data + i, s, n) == 0)
			return i;
	ck_abort_msg("\"%s\" not found in the fixture", s);
	return 0;
}

static void put_u32(struct bytes *b, size_t off, uint32_t v)
{
	ck_assert_uint_le(off + 4, b->len);
	for (int i = 0; i < 4; i++)
		b->data[off + i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(struct bytes *b, size_t off, uint64_t v)
{
	ck_assert_uint_le(off + 8, b->len);
	for (int i = 0; i < 8; i++)
		b->data[off + i] = (unsigned char)(v >> (8 * i));
}

/* Check `len` bytes as a file and return the code; *err and *res filled. */
static enum mp_err check_bytes(const void *data, size_t len,
			       struct mp_gguf_check_result *res, struct mp_error *err)
{
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];
	enum mp_err rc;
	int fd;

	snprintf(path, sizeof path, "%s/check_gguf.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	fd = mkstemp(path);
	ck_assert_msg(fd >= 0, "mkstemp %s", path);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	rc = mp_gguf_check_fd(fd, path, res, err);
	close(fd);
	unlink(path);
	return rc;
}

static void expect_format_error(const struct bytes *b, size_t len, const char *words)
{
	struct mp_gguf_check_result res;
	struct mp_error err = {0};
	enum mp_err rc = check_bytes(b->data, len, &res, &err);

	ck_assert_msg(rc == MP_E_GGUF_FORMAT, "expected gguf_format, got %s: %s",
		      mp_err_name(rc), err.msg);
	ck_assert_int_eq(err.code, MP_E_GGUF_FORMAT);
	ck_assert_msg(strncmp(err.msg, "not a valid GGUF file: ", 23) == 0, "message: %s",
		      err.msg);
	ck_assert_msg(strstr(err.msg, words), "message \"%s\" lacks \"%s\"", err.msg, words);
	ck_assert_msg(!strchr(err.msg, '\n'), "message has a newline: %s", err.msg);
}

/* ---- the fixtures ggml wrote -------------------------------------------- */

struct seen {
	unsigned count;
	struct mp_gguf_tensor first, k_b;
	char first_name[64];
	int k_b_found;
};

static enum mp_err collect(const struct mp_gguf_tensor *t, void *ctx,
			   struct mp_error *err)
{
	struct seen *s = ctx;

	(void)err;
	ck_assert_uint_eq(t->index, s->count);
	if (s->count++ == 0) {
		s->first = *t;
		snprintf(s->first_name, sizeof s->first_name, "%s", t->name);
	}
	if (strcmp(t->name, "blk.1.attn_k_b.weight") == 0) {
		s->k_b = *t;
		s->k_b_found = 1;
	}
	return MP_OK;
}

START_TEST(test_reader_sees_what_ggml_wrote)
{
	char *path = fixture_path("valid.gguf");
	struct mp_gguf_header h;
	struct mp_error err = {0};
	struct seen s = {0};
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mp_gguf_read(fd, path, &h, collect, &s, &err), MP_OK);
	close(fd);
	ck_assert_uint_eq(h.version, 3);
	ck_assert_uint_eq(h.tensor_count, 14);
	ck_assert_uint_eq(h.kv_count, 11); /* mkfixtures.py's KV dict */
	ck_assert_uint_eq(s.count, 14);

	ck_assert_str_eq(s.first_name, "token_embd.weight");
	ck_assert_uint_eq(s.first.name_len, strlen("token_embd.weight"));
	ck_assert_uint_eq(s.first.type, GGML_F32);
	ck_assert_uint_eq(s.first.n_dims, 2);
	ck_assert_uint_eq(s.first.dims[0], 32);
	ck_assert_uint_eq(s.first.dims[1], 4);
	ck_assert_uint_eq(s.first.dims[2], 1);
	ck_assert_uint_eq(s.first.offset, 0);

	ck_assert(s.k_b_found);
	ck_assert_uint_eq(s.k_b.type, GGML_Q4_0);
	ck_assert_uint_eq(s.k_b.n_dims, 3);
	ck_assert_uint_eq(s.k_b.dims[0], 256);
	ck_assert_uint_eq(s.k_b.dims[1], 4);
	ck_assert_uint_eq(s.k_b.dims[2], 2);
	ck_assert_uint_eq(s.k_b.offset % 32, 0);
	free(path);
}
END_TEST

START_TEST(test_valid_fixture_passes)
{
	char *path = fixture_path("valid.gguf");
	struct mp_gguf_check_result res;
	struct mp_error err = {0};

	ck_assert_msg(mp_gguf_check_file(path, &res, &err) == MP_OK, "%s", err.msg);
	ck_assert_uint_eq(res.tensor_count, 14);
	/* two layers of k_b, v_b, gate, up, down; norms and embeddings unjudged */
	ck_assert_uint_eq(res.tensors_checked, 10);
	free(path);
}
END_TEST

static const struct bad_fixture {
	const char *file;
	enum mp_err code;
	const char *message;
	uint64_t checked;
} bad_fixtures[] = {
	{"v_b_q4_k.gguf", MP_E_GGUF_MLA_V,
	 "Kimi-K3 MLA V projection must remain GGUF Q2_K: blk.2.attn_v_b.weight is Q4_K (12)",
	 7},
	{"k_b_q8_0.gguf", MP_E_GGUF_MLA_K,
	 "Kimi-K3 MLA K projection must remain GGUF Q4_0: blk.1.attn_k_b.weight is Q8_0 (8)", 1},
	{"down_q2_k.gguf", MP_E_GGUF_EXPERT_TYPE,
	 "routed expert tensor has the wrong quant type: blk.1.ffn_down_exps.weight is Q2_K "
	 "(10), must be Q3_K (11)",
	 5},
};

START_TEST(test_bad_fixture_fails)
{
	const struct bad_fixture *f = &bad_fixtures[_i];
	char *path = fixture_path(f->file);
	struct mp_gguf_check_result res;
	struct mp_error err = {0};
	enum mp_err rc = mp_gguf_check_file(path, &res, &err);

	ck_assert_msg(rc == f->code, "%s: expected %s, got %s: %s", f->file,
		      mp_err_name(f->code), mp_err_name(rc), err.msg);
	ck_assert_int_eq(err.code, f->code);
	ck_assert_str_eq(err.msg, f->message);
	ck_assert_int_eq(mp_err_class(rc), MP_CLASS_INVALID);
	ck_assert_uint_eq(res.tensors_checked, f->checked);
	free(path);
}
END_TEST

/* ---- corrupt and odd inputs ---------------------------------------------- */

START_TEST(test_bad_magic)
{
	struct bytes b = load_fixture("valid.gguf");

	b.data[0] = 'X';
	expect_format_error(&b, b.len, "bad magic 58 47 55 46");
	free(b.data);
}
END_TEST

START_TEST(test_version_1)
{
	struct bytes b = load_fixture("valid.gguf");

	put_u32(&b, 4, 1);
	expect_format_error(&b, b.len, "unsupported version 1");
	put_u32(&b, 4, UINT32_C(3) << 24);
	expect_format_error(&b, b.len, "big-endian");
	free(b.data);
}
END_TEST

START_TEST(test_huge_tensor_count)
{
	struct bytes b = load_fixture("valid.gguf");

	put_u64(&b, 8, HUGE_COUNT);
	expect_format_error(&b, b.len, "tensor count 4611686018427387904 cannot fit");
	/* small enough for the header check, too big once the KV pairs are read */
	put_u64(&b, 8, (b.len - 24) / 24);
	expect_format_error(&b, b.len, "after the KV pairs");
	free(b.data);
}
END_TEST

START_TEST(test_huge_kv_count)
{
	struct bytes b = load_fixture("valid.gguf");

	put_u64(&b, 16, HUGE_COUNT);
	expect_format_error(&b, b.len, "KV count 4611686018427387904 cannot fit");
	free(b.data);
}
END_TEST

START_TEST(test_huge_string_length)
{
	struct bytes b = load_fixture("valid.gguf");
	size_t key = find(&b, "general.architecture");

	put_u64(&b, key - 8, HUGE_COUNT);
	expect_format_error(&b, b.len, "KV pair 0: key of 4611686018427387904 bytes");

	/* a tensor name */
	free(b.data);
	b = load_fixture("valid.gguf");
	put_u64(&b, find(&b, "token_embd.weight") - 8, HUGE_COUNT);
	expect_format_error(&b, b.len, "tensor info 0: name of 4611686018427387904 bytes");
	free(b.data);
}
END_TEST

START_TEST(test_huge_array_count)
{
	struct bytes b = load_fixture("valid.gguf");
	/* key, then value type (u32 9), element type (u32 8), count (u64) */
	const char *key = "tokenizer.ggml.tokens";
	size_t count_at = find(&b, key) + strlen(key) + 8;

	put_u64(&b, count_at, HUGE_COUNT);
	expect_format_error(&b, b.len, "array of 4611686018427387904 elements");
	/* element type i32 with a count just too big for the rest of the file */
	put_u32(&b, count_at - 4, 5);
	put_u64(&b, count_at, (b.len - count_at) / 4 + 1);
	expect_format_error(&b, b.len, "cannot fit");
	free(b.data);
}
END_TEST

START_TEST(test_unknown_value_type)
{
	struct bytes b = load_fixture("valid.gguf");

	put_u32(&b, find(&b, "general.architecture") + strlen("general.architecture"), 13);
	expect_format_error(&b, b.len, "KV pair 0: unknown value type 13");
	free(b.data);
}
END_TEST

START_TEST(test_too_many_dims)
{
	struct bytes b = load_fixture("valid.gguf");

	put_u32(&b, find(&b, "token_embd.weight") + strlen("token_embd.weight"), 9);
	expect_format_error(&b, b.len, "tensor info 0: 9 dimensions, at most 4");
	free(b.data);
}
END_TEST

START_TEST(test_dims_overflow)
{
	struct bytes b = load_fixture("valid.gguf");
	size_t dims = find(&b, "token_embd.weight") + strlen("token_embd.weight") + 4;

	put_u64(&b, dims, UINT64_C(1) << 40);
	put_u64(&b, dims + 8, UINT64_C(1) << 40);
	expect_format_error(&b, b.len, "overflows the element count");
	free(b.data);
}
END_TEST

START_TEST(test_truncated)
{
	struct bytes b = load_fixture("valid.gguf");
	size_t last = find(&b, "output_norm.weight");
	static const char *const cut_words[] = {"runs past the end", "cannot fit"};
	struct mp_gguf_check_result res;
	struct mp_error err = {0};

	/* in the middle of the last tensor info, after the checker judged all */
	expect_format_error(&b, last + 5, "tensor info 13: name of 18 bytes");
	ck_assert_int_eq(check_bytes(b.data, last + 5, &res, &err), MP_E_GGUF_FORMAT);
	ck_assert_uint_eq(res.tensors_checked, 10);
	/* every shorter length, down to nothing, fails cleanly */
	for (size_t len = 0; len < last; len++) {
		enum mp_err rc = check_bytes(b.data, len, NULL, &err);

		ck_assert_msg(rc == MP_E_GGUF_FORMAT, "length %zu: %s: %s", len,
			      mp_err_name(rc), err.msg);
		ck_assert_msg(strstr(err.msg, cut_words[0]) || strstr(err.msg, cut_words[1]),
			      "length %zu: %s", len, err.msg);
	}
	free(b.data);
}
END_TEST

/*
 * The data section of a hand-made GGUF whose tensor infos end at `at`:
 * zeros up to the default alignment, then room for one block of any type.
 */
static size_t add_data(unsigned char *out, size_t cap, size_t at)
{
	size_t end = (at + 31) / 32 * 32 + 256;

	ck_assert_uint_le(end, cap);
	memset(out + at, 0, end - at);
	return end;
}

/* Offset of a tensor info's field, found through the tensor's name. */
static size_t tensor_field(const struct bytes *b, const char *name, unsigned n_dims,
			   int want_offset)
{
	size_t dims = find(b, name) + strlen(name) + 4;

	return want_offset ? dims + 8 * n_dims + 4 : dims;
}

START_TEST(test_data_past_end)
{
	struct bytes b = load_fixture("valid.gguf");
	struct mp_gguf_check_result res;
	struct mp_error err = {0};
	char words[160];

	/* ggml writes tensor data in info order: output_norm.weight's is last */
	snprintf(words, sizeof words,
		 "not a valid GGUF file: tensor output_norm.weight data ends at byte %zu, "
		 "the file has %zu bytes", b.len, b.len - 1);
	expect_format_error(&b, b.len - 1, words);
	ck_assert_int_eq(check_bytes(b.data, b.len - 1, &res, &err), MP_E_GGUF_FORMAT);
	ck_assert_str_eq(err.msg, words);
	ck_assert_uint_eq(res.tensors_checked, 10);
	ck_assert_int_eq(check_bytes(b.data, b.len, &res, &err), MP_OK);

	/* a type without a known size is not checked: the rest then fits */
	put_u32(&b, tensor_field(&b, "output_norm.weight", 1, 1) - 4, 200);
	ck_assert_msg(check_bytes(b.data, b.len - 1, &res, &err) == MP_OK, "%s", err.msg);
	/* but blk.2.ffn_down_exps.weight's data, just before, must be there */
	expect_format_error(&b, b.len - 129, "tensor blk.2.ffn_down_exps.weight data ends");
	free(b.data);
}
END_TEST

START_TEST(test_rule_before_data_range)
{
	struct bytes b = load_fixture("down_q2_k.gguf");
	struct mp_gguf_check_result res;
	struct mp_error err = {0};

	/* the type violation, met while the infos are read, is what is reported */
	ck_assert_int_eq(check_bytes(b.data, b.len - 1, &res, &err), MP_E_GGUF_EXPERT_TYPE);
	ck_assert_msg(strstr(err.msg, "blk.1.ffn_down_exps.weight is Q2_K"), "%s", err.msg);
	free(b.data);
}
END_TEST

START_TEST(test_bad_alignment)
{
	static const uint32_t bad[] = {0, 3, 48, UINT32_MAX};
	struct bytes b = load_fixture("valid.gguf");
	const char *key = "general.alignment";
	size_t type_at = find(&b, key) + strlen(key);
	struct mp_gguf_check_result res;
	struct mp_error err = {0};
	char words[80];

	ck_assert_uint_eq(b.data[type_at], 4); /* u32, as mkfixtures.py wrote it */
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		put_u32(&b, type_at + 4, bad[i]);
		snprintf(words, sizeof words, "general.alignment is %u, must be a power of two",
			 bad[i]);
		expect_format_error(&b, b.len, words);
	}
	/* 1 is a power of two: the data then starts right after the infos,
	 * before where ggml put it, so everything still fits */
	put_u32(&b, type_at + 4, 1);
	ck_assert_msg(check_bytes(b.data, b.len, &res, &err) == MP_OK, "%s", err.msg);
	/* as a u64 it is not the alignment ggml reads */
	put_u32(&b, type_at, 10);
	expect_format_error(&b, b.len, "general.alignment has value type 10, must be u32");
	free(b.data);
}
END_TEST

START_TEST(test_misaligned_offset)
{
	struct bytes b = load_fixture("valid.gguf");
	size_t off_at = tensor_field(&b, "blk.1.attn_k_b.weight", 3, 1);
	uint64_t offset = 0;
	char words[160];

	for (int i = 7; i >= 0; i--)
		offset = offset << 8 | b.data[off_at + i];
	ck_assert_uint_eq(offset % 32, 0);
	put_u64(&b, off_at, offset + 16);
	snprintf(words, sizeof words,
		 "tensor info 2: tensor blk.1.attn_k_b.weight data offset %llu is not a "
		 "multiple of the alignment 32", (unsigned long long)offset + 16);
	expect_format_error(&b, b.len, words);
	/* aligned, but so far out that offset + size overflows */
	put_u64(&b, off_at, UINT64_MAX - 31);
	expect_format_error(&b, b.len, "blk.1.attn_k_b.weight data at offset");
	expect_format_error(&b, b.len, "overflows");
	/* aligned and inside 64 bits, but far past the end */
	put_u64(&b, off_at, UINT64_C(1) << 62);
	expect_format_error(&b, b.len, "tensor blk.1.attn_k_b.weight data ends at byte");
	free(b.data);
}
END_TEST

START_TEST(test_partial_block_row)
{
	struct bytes b = load_fixture("valid.gguf");

	put_u64(&b, tensor_field(&b, "blk.1.attn_v_b.weight", 3, 0), 255);
	expect_format_error(&b, b.len, "tensor blk.1.attn_v_b.weight row of 255 weights is "
				       "not a whole number of Q2_K blocks of 256");
	free(b.data);
}
END_TEST

/* A hand-made GGUF: one KV pair holding an array of arrays, then one tensor. */
static size_t nested_gguf(unsigned char *out, size_t cap, unsigned depth, uint32_t type)
{
	struct bytes b = {out, cap};
	size_t at = 0;

	memcpy(out, "GGUF", 4);
	put_u32(&b, 4, 3);
	put_u64(&b, 8, 1);
	put_u64(&b, 16, 1);
	at = 24;
	put_u64(&b, at, 1);
	out[at + 8] = 'a';
	at += 9;
	put_u32(&b, at, 9); /* array */
	at += 4;
	for (unsigned d = 1; d < depth; d++) {
		put_u32(&b, at, 9);    /* of arrays */
		put_u64(&b, at + 4, 1); /* one */
		at += 12;
	}
	put_u32(&b, at, 0); /* innermost: u8 */
	put_u64(&b, at + 4, 3);
	at += 12 + 3;
	put_u64(&b, at, strlen("blk.0.attn_v_b.weight"));
	memcpy(out + at + 8, "blk.0.attn_v_b.weight", strlen("blk.0.attn_v_b.weight"));
	at += 8 + strlen("blk.0.attn_v_b.weight");
	put_u32(&b, at, 1);
	put_u64(&b, at + 4, 256);
	put_u32(&b, at + 12, type);
	put_u64(&b, at + 16, 0);
	return add_data(out, cap, at + 24);
}

START_TEST(test_nested_arrays)
{
	unsigned char buf[1024] = {0};
	struct mp_gguf_check_result res;
	struct mp_error err = {0};
	size_t len = nested_gguf(buf, sizeof buf, 3, GGML_Q4_K);

	/* the tensor after the nested value is read, so the rule fires */
	ck_assert_int_eq(check_bytes(buf, len, &res, &err), MP_E_GGUF_MLA_V);
	ck_assert_str_eq(err.msg, "Kimi-K3 MLA V projection must remain GGUF Q2_K: "
				  "blk.0.attn_v_b.weight is Q4_K (12)");
	ck_assert_uint_eq(res.tensors_checked, 1);

	len = nested_gguf(buf, sizeof buf, 3, GGML_Q2_K);
	ck_assert_int_eq(check_bytes(buf, len, &res, &err), MP_OK);

	len = nested_gguf(buf, sizeof buf, 50, GGML_Q2_K);
	ck_assert_int_eq(check_bytes(buf, len, &res, &err), MP_E_GGUF_FORMAT);
	ck_assert_msg(strstr(err.msg, "nested more than"), "%s", err.msg);
}
END_TEST

START_TEST(test_rule_names)
{
	/* names that look like a judged tensor but are not */
	static const char *const unjudged[] = {
		"blk.attn_v_b.weight", "blk.x.attn_v_b.weight", "blk.1.attn_v_b.weight.bak",
		"xblk.1.attn_v_b.weight", "blk.1.attn_v_b", "blk.-1.attn_v_b.weight",
	};
	unsigned char buf[512];

	for (size_t i = 0; i < sizeof unjudged / sizeof unjudged[0]; i++) {
		struct bytes b = {buf, sizeof buf};
		size_t n = strlen(unjudged[i]), at = 24;
		struct mp_gguf_check_result res;
		struct mp_error err = {0};

		memcpy(buf, "GGUF", 4);
		put_u32(&b, 4, 2);
		put_u64(&b, 8, 1);
		put_u64(&b, 16, 0);
		put_u64(&b, at, n);
		memcpy(buf + at + 8, unjudged[i], n);
		at += 8 + n;
		put_u32(&b, at, 1);
		put_u64(&b, at + 4, 256);
		put_u32(&b, at + 12, GGML_Q4_K);
		put_u64(&b, at + 16, 0);
		ck_assert_msg(check_bytes(buf, add_data(buf, sizeof buf, at + 24), &res,
					  &err) == MP_OK,
			      "%s: %s", unjudged[i], err.msg);
		ck_assert_uint_eq(res.tensors_checked, 0);
		ck_assert_uint_eq(res.tensor_count, 1);
	}
}
END_TEST

START_TEST(test_unreadable)
{
	struct mp_gguf_check_result res;
	struct mp_error err = {0};
	int pipefd[2];

	ck_assert_int_eq(mp_gguf_check_file("/nonexistent/x.gguf", &res, &err), MP_E_GGUF_IO);
	ck_assert_int_eq(mp_err_class(MP_E_GGUF_IO), MP_CLASS_IO);
	ck_assert_msg(strstr(err.msg, "/nonexistent/x.gguf"), "%s", err.msg);
	ck_assert_int_eq(mp_gguf_check_file("/", &res, &err), MP_E_GGUF_IO);
	ck_assert_msg(strstr(err.msg, "is a directory"), "%s", err.msg);
	ck_assert_int_eq(pipe(pipefd), 0);
	ck_assert_int_eq(mp_gguf_check_fd(pipefd[0], "pipe", &res, &err), MP_E_GGUF_IO);
	close(pipefd[0]);
	close(pipefd[1]);
}
END_TEST

static enum mp_err stop_at_second(const struct mp_gguf_tensor *t, void *ctx,
				  struct mp_error *err)
{
	unsigned *calls = ctx;

	++*calls;
	return t->index == 1 ? mp_fail(err, MP_E_NOT_FOUND, "stop") : MP_OK;
}

START_TEST(test_callback_stops_walk)
{
	char *path = fixture_path("valid.gguf");
	struct mp_error err = {0};
	unsigned calls = 0;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mp_gguf_read(fd, path, NULL, stop_at_second, &calls, &err),
			 MP_E_NOT_FOUND);
	ck_assert_uint_eq(calls, 2);
	ck_assert_str_eq(err.msg, "stop");
	close(fd);
	free(path);
}
END_TEST

static Suite *gguf_suite(void)
{
	Suite *s = suite_create("gguf");
	TCase *fixtures = tcase_create("fixtures");
	TCase *corrupt = tcase_create("corrupt");

	tcase_add_test(fixtures, test_reader_sees_what_ggml_wrote);
	tcase_add_test(fixtures, test_valid_fixture_passes);
	tcase_add_loop_test(fixtures, test_bad_fixture_fails, 0,
			    (int)(sizeof bad_fixtures / sizeof bad_fixtures[0]));
	tcase_add_test(fixtures, test_callback_stops_walk);
	suite_add_tcase(s, fixtures);

	tcase_add_test(corrupt, test_bad_magic);
	tcase_add_test(corrupt, test_version_1);
	tcase_add_test(corrupt, test_huge_tensor_count);
	tcase_add_test(corrupt, test_huge_kv_count);
	tcase_add_test(corrupt, test_huge_string_length);
	tcase_add_test(corrupt, test_huge_array_count);
	tcase_add_test(corrupt, test_unknown_value_type);
	tcase_add_test(corrupt, test_too_many_dims);
	tcase_add_test(corrupt, test_dims_overflow);
	tcase_add_test(corrupt, test_truncated);
	tcase_add_test(corrupt, test_data_past_end);
	tcase_add_test(corrupt, test_rule_before_data_range);
	tcase_add_test(corrupt, test_bad_alignment);
	tcase_add_test(corrupt, test_misaligned_offset);
	tcase_add_test(corrupt, test_partial_block_row);
	tcase_add_test(corrupt, test_nested_arrays);
	tcase_add_test(corrupt, test_rule_names);
	tcase_add_test(corrupt, test_unreadable);
	suite_add_tcase(s, corrupt);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(gguf_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
