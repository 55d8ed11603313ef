/*
 * check_gguf.c - the GGUF reader, the Kimi-K3 quant type check (src/writer/gguf.c)
 * and the Kimi-K3 names both it and the builder read (src/writer/k3names.c).
 *
 * The fixtures in tests/data/gguf were written by ggml's own GGUF writer
 * (tests/data/gguf/README), so what the reader must find there comes from
 * outside the code under test.  Corrupt inputs are made here by patching
 * bytes of the valid fixture, located by searching for known names rather
 * than with the reader itself.  A reader that trusted a patched count would
 * ask for exabytes (ASan aborts on that) or loop for ages (Check's timeout).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "base/errors.h"
#include "fixture.h"
#include "writer/gguf.h"
#include "writer/kimi/ggufcheck.h"
#include "writer/ggufwrite.h"
#include "writer/kimi/k3names.h"
#include "writer/kimi/shards.h"
#include "base/quant.h"

#define HUGE_COUNT (UINT64_C(1) << 62)

/* ggml type ids (ggml.h) */
#define GGML_F32 0
#define GGML_Q4_0 2
#define GGML_Q2_K 10
#define GGML_Q3_K 11
#define GGML_Q4_K 12

/* ---- helpers -------------------------------------------------------------- */

/* tests/data/gguf/<name>, malloc'd. */
static char *fixture_path(const char *name)
{
	char rel[PATH_MAX], path[PATH_MAX], *copy;

	ck_assert_int_lt(snprintf(rel, sizeof rel, "gguf/%s", name), (int)sizeof rel);
	copy = strdup(fx_data_path(rel, path, sizeof path));
	ck_assert_ptr_nonnull(copy);
	return copy;
}

struct bytes {
	unsigned char *data;
	size_t len;
};

static struct bytes load_fixture(const char *name)
{
	char *path = fixture_path(name);
	struct bytes b;

	b.data = (unsigned char *)fx_read_file(path, &b.len);
	ck_assert_uint_gt(b.len, 0);
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
	fx_put_le(b->data + off, v, 4);
}

static void put_u64(struct bytes *b, size_t off, uint64_t v)
{
	ck_assert_uint_le(off + 8, b->len);
	fx_put_le(b->data + off, v, 8);
}

/* Check `len` bytes as a file and return the code; *err and *res filled. */
static enum mp_err check_bytes(const void *data, size_t len,
			       struct mp_gguf_check_result *res, struct mp_error *err)
{
	char path[PATH_MAX];
	enum mp_err rc;
	int fd = fx_mkstemp(path);

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
	expect_format_error(&b, b.len, "tensor count 4611686018427387904 exceeds the limit "
				       "of 1048576");
	/* within the limit, but more than the file's bytes could hold */
	put_u64(&b, 8, MP_GGUF_MAX_TENSORS);
	expect_format_error(&b, b.len, "tensor count 1048576 cannot fit");
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
	expect_format_error(&b, b.len, "KV count 4611686018427387904 exceeds the limit of 65536");
	put_u64(&b, 16, MP_GGUF_MAX_KV);
	expect_format_error(&b, b.len, "KV count 65536 cannot fit");
	free(b.data);
}
END_TEST

START_TEST(test_huge_string_length)
{
	struct bytes b = load_fixture("valid.gguf");
	size_t key = find(&b, "general.architecture");

	put_u64(&b, key - 8, HUGE_COUNT);
	expect_format_error(&b, b.len, "KV pair 0: key of 4611686018427387904 bytes exceeds the "
				       "limit of 65535 bytes");

	/* a tensor name */
	free(b.data);
	b = load_fixture("valid.gguf");
	put_u64(&b, find(&b, "token_embd.weight") - 8, HUGE_COUNT);
	expect_format_error(&b, b.len, "tensor info 0: name of 4611686018427387904 bytes is too "
				       "long, ggml takes at most 63");
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
	expect_format_error(&b, b.len, "tensor info 0: tensor token_embd.weight has 9 "
				       "dimensions, at most 4");
	free(b.data);
}
END_TEST

START_TEST(test_dims_overflow)
{
	struct bytes b = load_fixture("valid.gguf");
	size_t dims = find(&b, "token_embd.weight") + strlen("token_embd.weight") + 4;

	put_u64(&b, dims, UINT64_C(1) << 40);
	put_u64(&b, dims + 8, UINT64_C(1) << 40);
	expect_format_error(&b, b.len, "tensor info 0: tensor token_embd.weight of shape "
				       "(1099511627776, 1099511627776, 1, 1) has too many elements");
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

	/* a type ggml does not know is refused, not left unchecked */
	put_u32(&b, tensor_field(&b, "output_norm.weight", 1, 1) - 4, 200);
	expect_format_error(&b, b.len, "tensor output_norm.weight has type 200, ggml knows "
				       "types 0 to 42");
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
	/* aligned, but not where ggml wants it: far out, or a block further */
	snprintf(words, sizeof words,
		 "tensor info 2: tensor blk.1.attn_k_b.weight data offset %llu is not the "
		 "%llu ggml expects", (unsigned long long)(UINT64_MAX - 31),
		 (unsigned long long)offset);
	put_u64(&b, off_at, UINT64_MAX - 31);
	expect_format_error(&b, b.len, words);
	put_u64(&b, off_at, offset + 32);
	expect_format_error(&b, b.len, "is not the");
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
	size_t len = nested_gguf(buf, sizeof buf, 1, GGML_Q4_K);

	/* the tensor after the array is read, so the rule fires */
	ck_assert_int_eq(check_bytes(buf, len, &res, &err), MP_E_GGUF_MLA_V);
	ck_assert_str_eq(err.msg, "Kimi-K3 MLA V projection must remain GGUF Q2_K: "
				  "blk.0.attn_v_b.weight is Q4_K (12)");
	ck_assert_uint_eq(res.tensors_checked, 1);

	len = nested_gguf(buf, sizeof buf, 1, GGML_Q2_K);
	ck_assert_int_eq(check_bytes(buf, len, &res, &err), MP_OK);

	/* ggml reads no array of arrays, however shallow */
	for (unsigned depth = 2; depth <= 50; depth += 48) {
		len = nested_gguf(buf, sizeof buf, depth, GGML_Q2_K);
		ck_assert_int_eq(check_bytes(buf, len, &res, &err), MP_E_GGUF_FORMAT);
		ck_assert_str_eq(err.msg, "not a valid GGUF file: KV pair 0: array of arrays, "
					  "which ggml does not read");
	}
}
END_TEST

START_TEST(test_rule_names)
{
	/* names that look like a judged tensor but are not */
	static const char *const unjudged[] = {
		"blk.attn_v_b.weight", "blk.x.attn_v_b.weight", "blk.1.attn_v_b.weight.bak",
		"xblk.1.attn_v_b.weight", "blk.1.attn_v_b", "blk.-1.attn_v_b.weight",
		/* names "blk.%d." never formats: no layer's, never looked up */
		"blk.017.attn_v_b.weight", "blk.00.attn_v_b.weight", "blk.+1.attn_v_b.weight",
		"blk.1x.attn_v_b.weight", "blk..attn_v_b.weight",
		"blk.99999999999999999999.attn_v_b.weight", "blk.2147483648.attn_v_b.weight",
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

/* ---- crafted files of any apparent size ---------------------------------- */

/*
 * A sparse file of `size` bytes that starts with head[0..len).  The reader
 * must reject or accept it in about a second whatever its size and counts;
 * Check's per-test timeout turns a regression (hours) into a failure.
 * Returns -1, after saying why, when the filesystem cannot hold such a file.
 */
static int sparse_file(const void *head, size_t len, uint64_t size, char path[PATH_MAX])
{
	int fd = fx_mkstemp(path);

	unlink(path);
	ck_assert_int_eq(write(fd, head, len), (ssize_t)len);
	if (ftruncate(fd, (off_t)size) != 0) {
		printf("SKIP: check_gguf: a sparse file of %llu bytes: %s: %s\n",
		       (unsigned long long)size, path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static const uint64_t sparse_sizes[] = {UINT64_C(1) << 30, UINT64_C(1) << 40};

/* A v3 header, then `extra` bytes of body written by the caller. */
static struct bytes header(unsigned char *buf, size_t cap, uint64_t tensors, uint64_t kvs)
{
	struct bytes b = {buf, cap};

	memset(buf, 0, cap);
	memcpy(buf, "GGUF", 4);
	put_u32(&b, 4, 3);
	put_u64(&b, 8, tensors);
	put_u64(&b, 16, kvs);
	return b;
}

/* Check a sparse file; false (after a SKIP line) when it cannot be made. */
static int check_sparse(const struct bytes *b, size_t len, uint64_t size, enum mp_err want,
			const char *words)
{
	char path[PATH_MAX];
	struct mp_error err = {0};
	enum mp_err rc;
	int fd = sparse_file(b->data, len, size, path);

	if (fd < 0)
		return 0;
	rc = mp_gguf_check_fd(fd, path, NULL, &err);
	close(fd);
	ck_assert_msg(rc == want, "%llu bytes: expected %s, got %s: %s",
		      (unsigned long long)size, mp_err_name(want), mp_err_name(rc), err.msg);
	ck_assert_msg(strstr(err.msg, words), "%llu bytes: message \"%s\" lacks \"%s\"",
		      (unsigned long long)size, err.msg, words);
	return 1;
}

START_TEST(test_sparse_counts)
{
	uint64_t size = sparse_sizes[_i];
	unsigned char buf[64];
	struct bytes b;
	char words[128];

	/* the file: as many empty KV pairs as the size could hold */
	b = header(buf, sizeof buf, 0, (size - 24) / 13);
	snprintf(words, sizeof words, "KV count %llu exceeds the limit of 65536",
		 (unsigned long long)((size - 24) / 13));
	if (!check_sparse(&b, 24, size, MP_E_GGUF_FORMAT, words))
		return;
	b = header(buf, sizeof buf, (size - 24) / 24, 0);
	snprintf(words, sizeof words, "tensor count %llu exceeds the limit of 1048576",
		 (unsigned long long)((size - 24) / 24));
	check_sparse(&b, 24, size, MP_E_GGUF_FORMAT, words);
	/* at the limits, every pair or info is read: all-zero ones are the
	 * cheapest to encode, and the reader still gets to a verdict */
	b = header(buf, sizeof buf, 0, MP_GGUF_MAX_KV);
	/* an all-zero pair has an empty key, which ggml refuses first */
	check_sparse(&b, 24, size, MP_E_GGUF_FORMAT, "KV pair 0: the key is empty");
	b = header(buf, sizeof buf, MP_GGUF_MAX_TENSORS, 0);
	check_sparse(&b, 24, size, MP_E_GGUF_FORMAT,
		     "tensor info 1: tensor  data at offset 0 overlaps the data of tensor  "
		     "(tensor info 0, offsets 0 to 4)");
}
END_TEST

START_TEST(test_sparse_arrays)
{
	uint64_t size = sparse_sizes[_i];
	unsigned char buf[128];
	struct bytes b = header(buf, sizeof buf, 0, 1);
	char words[160];

	/* key "a", an array of u8 as long as the file */
	put_u64(&b, 24, 1);
	buf[32] = 'a';
	put_u32(&b, 33, 9);
	put_u32(&b, 37, 0);
	put_u64(&b, 41, size - 49);
	snprintf(words, sizeof words, "KV pair 0: array of %llu elements exceeds the limit "
		 "of 16777216 elements in all arrays (0 before it)",
		 (unsigned long long)(size - 49));
	if (!check_sparse(&b, 49, size, MP_E_GGUF_FORMAT, words))
		return;
	/* the limit holds for all arrays together: half of it, then a string
	 * array one element too long */
	put_u64(&b, 16, 2);
	put_u64(&b, 41, MP_GGUF_MAX_ARRAY_ELEMENTS / 2);
	{
		/* the second pair follows the first array's bytes */
		char path[PATH_MAX];
		unsigned char pair[8 + 1 + 4 + 4 + 8];
		struct bytes p = {pair, sizeof pair};
		uint64_t at = 49 + MP_GGUF_MAX_ARRAY_ELEMENTS / 2;
		struct mp_error err = {0};
		enum mp_err rc;
		int fd = sparse_file(buf, 49, size, path);

		if (fd < 0)
			return;
		put_u64(&p, 0, 1);
		pair[8] = 'b';
		put_u32(&p, 9, 9);
		put_u32(&p, 13, 8);
		put_u64(&p, 17, MP_GGUF_MAX_ARRAY_ELEMENTS / 2 + 1);
		ck_assert_int_eq(pwrite(fd, pair, sizeof pair, (off_t)at), (ssize_t)sizeof pair);
		rc = mp_gguf_check_fd(fd, path, NULL, &err);
		close(fd);
		ck_assert_int_eq(rc, MP_E_GGUF_FORMAT);
		ck_assert_str_eq(err.msg, "not a valid GGUF file: KV pair 1: array of 8388609 "
					  "elements exceeds the limit of 16777216 elements in "
					  "all arrays (8388608 before it)");
	}
	/* an array of strings right at the limit: 16M empty strings are read
	 * one by one (128 MiB), then one all-zero tensor info: a valid file */
	put_u64(&b, 16, 1);
	put_u64(&b, 8, 1);
	put_u32(&b, 37, 8);
	put_u64(&b, 41, MP_GGUF_MAX_ARRAY_ELEMENTS);
	check_sparse(&b, 49, size, MP_OK, "");
}
END_TEST

START_TEST(test_sparse_strings)
{
	uint64_t size = sparse_sizes[_i];
	uint64_t len = size / 2;
	unsigned char buf[128];
	struct bytes b = header(buf, sizeof buf, 0, 1);
	char words[160];

	/* a key as long as half the file */
	put_u64(&b, 24, len);
	snprintf(words, sizeof words, "KV pair 0: key of %llu bytes exceeds the limit of "
		 "65535 bytes", (unsigned long long)len);
	if (!check_sparse(&b, 32, size, MP_E_GGUF_FORMAT, words))
		return;
	/* a string value as long: past the metadata limit, never read */
	put_u64(&b, 24, 1);
	buf[32] = 'a';
	put_u32(&b, 33, 8);
	put_u64(&b, 37, len);
	snprintf(words, sizeof words, "KV pair 0: string value of %llu bytes at offset 45 "
		 "runs past the limit of 268435456 bytes of metadata", (unsigned long long)len);
	check_sparse(&b, 45, size, MP_E_GGUF_FORMAT, words);
	/* two strings that fit the limit apart, not together */
	put_u64(&b, 16, 2);
	put_u64(&b, 37, MP_GGUF_MAX_METADATA / 2);
	{
		char path[PATH_MAX];
		unsigned char pair[8 + 1 + 4 + 8];
		struct bytes p = {pair, sizeof pair};
		struct mp_error err = {0};
		enum mp_err rc;
		int fd = sparse_file(buf, 45, size, path);

		if (fd < 0)
			return;
		put_u64(&p, 0, 1);
		pair[8] = 'b';
		put_u32(&p, 9, 8);
		put_u64(&p, 13, MP_GGUF_MAX_METADATA / 2);
		ck_assert_int_eq(pwrite(fd, pair, sizeof pair,
					(off_t)(45 + MP_GGUF_MAX_METADATA / 2)),
				 (ssize_t)sizeof pair);
		rc = mp_gguf_check_fd(fd, path, NULL, &err);
		close(fd);
		ck_assert_int_eq(rc, MP_E_GGUF_FORMAT);
		ck_assert_msg(strstr(err.msg, "KV pair 1: string value of 134217728 bytes"),
			      "%s", err.msg);
		ck_assert_msg(strstr(err.msg, "runs past the limit of 268435456 bytes of "
					      "metadata"), "%s", err.msg);
	}
	/* a tensor name as long */
	b = header(buf, sizeof buf, 1, 0);
	put_u64(&b, 24, len);
	snprintf(words, sizeof words, "tensor info 0: name of %llu bytes is too long, ggml "
		 "takes at most 63", (unsigned long long)len);
	check_sparse(&b, 32, size, MP_E_GGUF_FORMAT, words);
}
END_TEST

/*
 * A million tensor infos, all valid and empty (ne = [0], so every offset is
 * 0), named t0000000, t0000001, ...; the last one reuses the first one's
 * name.  Comparing each name with all before it, as ggml does, would take
 * 5*10^11 comparisons: the reader must find the pair in well under a second.
 */
START_TEST(test_million_tensors)
{
	const uint64_t n = MP_GGUF_MAX_TENSORS;
	const size_t info = 8 + 8 + 4 + 8 + 4 + 8;
	size_t len = 24 + n * info;
	unsigned char *buf = calloc(1, len);
	struct mp_error err = {0};
	struct mp_gguf_check_result res;
	char words[128];

	ck_assert_ptr_nonnull(buf);
	header(buf, 24, n, 0);
	for (uint64_t i = 0; i < n; i++) {
		size_t at = 24 + i * info;
		char name[9];

		/* plain stores: a Check assertion per field would take minutes */
		snprintf(name, sizeof name, "t%07llu", (unsigned long long)(i + 1 < n ? i : 0));
		buf[at] = 8;                  /* name length; then the name */
		memcpy(buf + at + 8, name, 8);
		buf[at + 16] = 1;             /* n_dims; ne[0] = 0, type F32, offset 0 */
	}
	ck_assert_int_eq(check_bytes(buf, len, &res, &err), MP_E_GGUF_FORMAT);
	snprintf(words, sizeof words,
		 "not a valid GGUF file: tensor info %llu: duplicate tensor name t0000000 "
		 "(tensor info 0 has it too)", (unsigned long long)(n - 1));
	ck_assert_str_eq(err.msg, words);
	/* and without the duplicate, all million pass */
	memcpy(buf + 24 + (n - 1) * info + 8, "t9999999", 8);
	ck_assert_msg(check_bytes(buf, len, &res, &err) == MP_OK, "%s", err.msg);
	ck_assert_uint_eq(res.tensor_count, n);
	free(buf);
}
END_TEST

/* Empty F32 tensors (ne = [0]: all at offset 0) named names[0..n). */
static size_t empty_tensors(unsigned char *buf, size_t cap, const char *const *names, size_t n)
{
	struct bytes b = header(buf, cap, n, 0);
	size_t at = 24;

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);

		put_u64(&b, at, len);
		memcpy(buf + at + 8, names[i], len);
		at += 8 + len;
		put_u32(&b, at, 1);
		put_u64(&b, at + 4, 0);
		put_u32(&b, at + 12, GGML_F32);
		put_u64(&b, at + 16, 0);
		at += 24;
	}
	return at;
}

START_TEST(test_duplicate_reported_as_ggml_does)
{
	/* ggml compares each name with all before it: the first repeat it
	 * meets is b at 2 (of 1), though a's pair (0, 3) sorts first */
	static const char *const names[] = {"a", "b", "b", "a"};
	unsigned char buf[256];
	struct mp_error err = {0};
	size_t len = empty_tensors(buf, sizeof buf, names, 4);

	ck_assert_int_eq(check_bytes(buf, len, NULL, &err), MP_E_GGUF_FORMAT);
	ck_assert_str_eq(err.msg, "not a valid GGUF file: tensor info 2: duplicate tensor "
				  "name b (tensor info 1 has it too)");
}
END_TEST

/* ---- the crafted corpus, against ggml's own verdicts ---------------------- */

/*
 * tests/data/gguf/corpus holds variants of valid.gguf (mkcorpus.py) and two
 * tables: expect.txt, the verdict moepack must give each file, and
 * ggml-verdicts.txt, what ggml's gguf_init_from_file() made of each one
 * (ggml_verdicts.py).  Whatever the reader accepts, ggml must load with the
 * same tensor names and types; whatever ggml refuses, the reader refuses.
 */

#define CORPUS_MAX 128
#define CORPUS_TENSORS 32

struct ggml_verdict {
	char file[64];
	int ok;
	unsigned count;
	char names[CORPUS_TENSORS][MP_GGUF_NAME_MAX + 1];
	uint32_t types[CORPUS_TENSORS];
};

static int unhex(const char *hex, size_t n, char *out, size_t cap)
{
	size_t len = n / 2;

	if (n % 2 || len >= cap)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (char)v;
	}
	out[len] = '\0';
	return (int)len;
}

static FILE *open_corpus_table(const char *name)
{
	char *path;
	FILE *f;

	path = fixture_path(name);
	f = fopen(path, "r");
	ck_assert_msg(f, "cannot open %s", path);
	free(path);
	return f;
}

static size_t load_ggml_verdicts(struct ggml_verdict *v, size_t cap)
{
	FILE *f = open_corpus_table("corpus/ggml-verdicts.txt");
	char *line = NULL;
	size_t n = 0, linecap = 0;

	while (getline(&line, &linecap, f) > 0) {
		char *save = NULL, *tok;
		struct ggml_verdict *e;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		ck_assert_uint_lt(n, cap);
		e = &v[n++];
		memset(e, 0, sizeof *e);
		tok = strtok_r(line, " \n", &save);
		ck_assert_ptr_nonnull(tok);
		snprintf(e->file, sizeof e->file, "%s", tok);
		tok = strtok_r(NULL, " \n", &save);
		ck_assert_ptr_nonnull(tok);
		e->ok = strcmp(tok, "ok") == 0;
		ck_assert_msg(e->ok || strcmp(tok, "refused") == 0, "%s: verdict %s", e->file,
			      tok);
		if (!e->ok)
			continue;
		tok = strtok_r(NULL, " \n", &save);
		ck_assert_ptr_nonnull(tok);
		e->count = (unsigned)strtoul(tok, NULL, 10);
		ck_assert_uint_le(e->count, CORPUS_TENSORS);
		for (unsigned i = 0; i < e->count; i++) {
			char *colon;

			tok = strtok_r(NULL, " \n", &save);
			ck_assert_msg(tok, "%s: tensor %u missing", e->file, i);
			colon = strchr(tok, ':');
			ck_assert_ptr_nonnull(colon);
			if (strncmp(tok, "-:", 2) == 0)
				e->names[i][0] = '\0';
			else
				ck_assert_int_ge(unhex(tok, (size_t)(colon - tok), e->names[i],
						       sizeof e->names[i]), 0);
			e->types[i] = (uint32_t)strtoul(colon + 1, NULL, 10);
		}
	}
	free(line);
	fclose(f);
	return n;
}

struct tensor_list {
	unsigned count;
	char names[CORPUS_TENSORS][MP_GGUF_NAME_MAX + 1];
	uint32_t types[CORPUS_TENSORS];
};

static enum mp_err list_tensor(const struct mp_gguf_tensor *t, void *ctx, struct mp_error *err)
{
	struct tensor_list *l = ctx;

	(void)err;
	ck_assert_uint_lt(l->count, CORPUS_TENSORS);
	/* the name is cut at a NUL inside it, as ggml cuts it */
	ck_assert_uint_eq(strlen(t->name), t->name_len);
	ck_assert_uint_le(t->name_len, t->name_bytes);
	snprintf(l->names[l->count], sizeof l->names[l->count], "%s", t->name);
	l->types[l->count++] = t->type;
	return MP_OK;
}

START_TEST(test_corpus_matches_ggml)
{
	static struct ggml_verdict ggml[CORPUS_MAX];
	size_t nggml = load_ggml_verdicts(ggml, CORPUS_MAX);
	FILE *f = open_corpus_table("corpus/expect.txt");
	char *line = NULL;
	size_t linecap = 0, files = 0, ggml_ok = 0, ggml_refused = 0, stricter = 0;

	while (getline(&line, &linecap, f) > 0) {
		char file[64], code[32], rel[128];
		const char *words;
		const struct ggml_verdict *g = NULL;
		struct mp_gguf_check_result res;
		struct tensor_list list = {0};
		struct mp_error err = {0};
		enum mp_err rc, read_rc;
		char *path;
		int fd, n = 0;

		if (line[0] == '#')
			continue;
		line[strcspn(line, "\n")] = '\0';
		ck_assert_int_eq(sscanf(line, "%63s %31s %n", file, code, &n), 2);
		words = line + n;
		for (size_t i = 0; i < nggml; i++)
			if (strcmp(ggml[i].file, file) == 0)
				g = &ggml[i];
		ck_assert_msg(g, "%s: not in ggml-verdicts.txt", file);
		files++;

		snprintf(rel, sizeof rel, "corpus/%s", file);
		path = fixture_path(rel);
		fd = open(path, O_RDONLY);
		ck_assert_msg(fd >= 0, "%s", path);
		rc = mp_gguf_check_fd(fd, path, &res, &err);
		ck_assert_msg(strcmp(mp_err_name(rc), code) == 0, "%s: expected %s, got %s: %s",
			      file, code, mp_err_name(rc), err.msg);
		ck_assert_msg(strstr(err.msg, words) || (rc == MP_OK && !words[0]),
			      "%s: message \"%s\" lacks \"%s\"", file, err.msg, words);
		/* the reader alone, without the Kimi-K3 rules */
		read_rc = mp_gguf_read(fd, path, NULL, list_tensor, &list, &err);
		close(fd);
		free(path);

		if (!g->ok) {
			ggml_refused++;
			ck_assert_msg(read_rc == MP_E_GGUF_FORMAT && rc == MP_E_GGUF_FORMAT,
				      "%s: ggml refuses it, the reader says %s", file,
				      mp_err_name(read_rc));
			continue;
		}
		ggml_ok++;
		if (read_rc != MP_OK) {
			stricter++;
			continue;
		}
		ck_assert_msg(list.count == g->count, "%s: %u tensors, ggml has %u", file,
			      list.count, g->count);
		for (unsigned i = 0; i < list.count; i++) {
			ck_assert_msg(strcmp(list.names[i], g->names[i]) == 0,
				      "%s: tensor %u is \"%s\", ggml calls it \"%s\"", file, i,
				      list.names[i], g->names[i]);
			ck_assert_msg(list.types[i] == g->types[i],
				      "%s: tensor %u has type %u, ggml says %u", file, i,
				      list.types[i], g->types[i]);
		}
	}
	free(line);
	fclose(f);
	ck_assert_uint_eq(files, nggml);
	/* the corpus must exercise both sides, and stay mostly in agreement */
	ck_assert_uint_ge(ggml_ok, 10);
	ck_assert_uint_ge(ggml_refused, 10);
	ck_assert_uint_le(stricter, 2);
}
END_TEST

/* ---- the writer: what it writes, the reader reads back ---------------------- */

struct written {
	struct mp_gguf_tensor t[3];
	char names[3][64];
	unsigned count;
};

static enum mp_err keep_written(const struct mp_gguf_tensor *t, void *ctx, struct mp_error *err)
{
	struct written *w = ctx;

	(void)err;
	if (w->count < 3) {
		w->t[w->count] = *t;
		snprintf(w->names[w->count], sizeof w->names[0], "%s", t->name);
	}
	w->count++;
	return MP_OK;
}

static void out_tensor(struct mp_gguf_out_tensor *t, const char *name, uint32_t type,
		       uint32_t n_dims, uint64_t d0, uint64_t d1, bool demo)
{
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->type = type;
	t->n_dims = n_dims;
	t->dims[0] = d0;
	t->dims[1] = d1;
	t->dims[2] = t->dims[3] = 1;
	t->demo = demo;
	t->seed = 77;
}

START_TEST(test_writer_round_trip)
{
	char path[PATH_MAX];
	int fd = fx_mkstemp(path);
	struct mp_gguf_out_kv kv[] = {
		{"general.architecture", MP_GGUF_STRING, "kimi-k3", 0},
		{"split.no", MP_GGUF_U16, NULL, 1},
		{"split.count", MP_GGUF_U16, NULL, 3},
		{"split.tensors.count", MP_GGUF_I32, NULL, 464},
	};
	struct mp_gguf_out_tensor t[3];
	struct mp_gguf_header h;
	struct mp_error err = {0};
	struct written w = {0};
	unsigned char got[2 * 84], want[2 * 84];
	struct stat st;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	out_tensor(&t[0], "token_embd.weight", GGML_F32, 2, 5, 3, false);  /* 60 bytes */
	out_tensor(&t[1], "blk.1.attn_k_b.weight", GGML_Q4_0, 1, 64, 1, false); /* 36 */
	out_tensor(&t[2], "blk.1.ffn_up_exps.weight", GGML_Q2_K, 2, 256, 2, true); /* 168 */
	ck_assert_uint_eq(mp_gguf_out_tensor_bytes(&t[0]), 60);
	ck_assert_uint_eq(mp_gguf_out_tensor_bytes(&t[1]), 36);
	ck_assert_uint_eq(mp_gguf_out_tensor_bytes(&t[2]), 168);
	ck_assert_int_eq(mp_gguf_write(fd, path, kv, 4, t, 3, &err), MP_OK);

	ck_assert_int_eq(mp_gguf_read(fd, path, &h, keep_written, &w, &err), MP_OK);
	ck_assert_uint_eq(h.version, 3);
	ck_assert_uint_eq(h.kv_count, 4);
	ck_assert_uint_eq(h.tensor_count, 3);
	ck_assert_uint_eq(h.alignment, 32);
	ck_assert_uint_eq(h.data_start % 32, 0);
	ck_assert(h.has_architecture);
	ck_assert_str_eq(h.architecture, "kimi-k3");
	ck_assert(h.split_no.present && h.split_no.is_integer);
	ck_assert_int_eq(h.split_no.value, 1);
	ck_assert_int_eq(h.split_count.value, 3);
	ck_assert_int_eq(h.split_tensors_count.value, 464);
	ck_assert_uint_eq(w.count, 3);
	ck_assert_str_eq(w.names[2], "blk.1.ffn_up_exps.weight");
	ck_assert_uint_eq(w.t[2].type, GGML_Q2_K);
	ck_assert_uint_eq(w.t[2].n_dims, 2);
	ck_assert_uint_eq(w.t[2].dims[1], 2);
	/* each tensor's data at the sum of the padded sizes before it */
	ck_assert_uint_eq(w.t[0].offset, 0);
	ck_assert_uint_eq(w.t[1].offset, 64);
	ck_assert_uint_eq(w.t[2].offset, 64 + 64);
	ck_assert_uint_eq(w.t[2].nbytes, 168);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, h.data_start + 64 + 64 + 192);

	/* the demo blocks, byte for byte; zeros elsewhere */
	ck_assert_int_eq(pread(fd, got, sizeof got, (off_t)(h.data_start + 128)), (ssize_t)sizeof got);
	ck_assert_int_eq(mp_quant_fill_demo(mp_quant_by_id(GGML_Q2_K), 77, 0, want, sizeof want), 0);
	ck_assert_mem_eq(got, want, sizeof got);
	ck_assert_int_eq(pread(fd, got, 60, (off_t)h.data_start), 60);
	for (int i = 0; i < 60; i++)
		ck_assert_uint_eq(got[i], 0);
	close(fd);
}
END_TEST

START_TEST(test_writer_refuses_partial_blocks)
{
	struct mp_gguf_out_tensor t;
	struct mp_error err = {0};
	int fd = open("/dev/null", O_WRONLY);

	out_tensor(&t, "blk.1.ffn_up_exps.weight", GGML_Q2_K, 2, 200, 2, true);
	ck_assert_uint_eq(mp_gguf_out_tensor_bytes(&t), 0);
	ck_assert_int_eq(mp_gguf_write(fd, "/dev/null", NULL, 0, &t, 1, &err), MP_E_USAGE);
	ck_assert_ptr_nonnull(strstr(err.msg, "blk.1.ffn_up_exps.weight"));
	close(fd);
}
END_TEST


/* ---- Kimi-K3 names (k3names.h) -------------------------------------------- */

START_TEST(test_k3_layer)
{
	static const struct {
		const char *name;
		long layer;
		const char *rest;
	} cases[] = {
		{"blk.17.x", 17, "x"},
		{"blk.0.attn_k_b.weight", 0, "attn_k_b.weight"},
		{"blk.92.ffn_up_exps.weight", 92, "ffn_up_exps.weight"},
		{"blk.2147483647.x", 2147483647, "x"},
		{"blk.1.", 1, ""},
		{"blk.017.x", -1, NULL},
		{"blk.00.x", -1, NULL},
		{"blk.-1.x", -1, NULL},
		{"blk.+1.x", -1, NULL},
		{"blk. 1.x", -1, NULL},
		{"blk.1x.", -1, NULL},
		{"blk.1", -1, NULL},
		{"blk..x", -1, NULL},
		{"blk.99999999999999999999.x", -1, NULL},
		{"blk.2147483648.x", -1, NULL},
		{"blk.", -1, NULL},
		{"blk", -1, NULL},
		{"", -1, NULL},
		{"Blk.1.x", -1, NULL},
		{"token_embd.weight", -1, NULL},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *rest = NULL;
		long got = mp_k3_layer(cases[i].name, &rest);

		ck_assert_msg(got == cases[i].layer, "%s: layer %ld, want %ld", cases[i].name, got,
			      cases[i].layer);
		if (cases[i].rest)
			ck_assert_str_eq(rest, cases[i].rest);
		else
			ck_assert_ptr_null(rest);
	}
}
END_TEST

START_TEST(test_k3_rules)
{
	long layer = -1;
	const struct mp_k3_rule *r = mp_k3_rule_for("blk.17.ffn_down_exps.weight", &layer);

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(layer, 17);
	ck_assert_int_eq(r->type, GGML_Q3_K);
	ck_assert_int_eq(r->expert_role, MP_ROLE_DOWN);
	ck_assert_ptr_null(mp_k3_rule_for("blk.017.ffn_down_exps.weight", NULL));
	ck_assert_ptr_null(mp_k3_rule_for("blk.17.ffn_down_exps.weight.1", NULL));
	ck_assert_ptr_null(mp_k3_rule_for("blk.17.attn_norm.weight", NULL));
	r = mp_k3_rule_for("blk.3.attn_k_b.weight", NULL);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->expert_role, -1);
	ck_assert_int_eq(r->code, MP_E_GGUF_MLA_K);
	/* the expert rules are the pack's roles: names and dtypes */
	for (unsigned i = 0; i < mp_k3_rule_count; i++) {
		char want[64];

		r = &mp_k3_rules[i];
		if (r->expert_role < 0)
			continue;
		snprintf(want, sizeof want, "ffn_%s_exps.weight",
			 mp_role_name((enum mp_role)r->expert_role));
		ck_assert_str_eq(r->rest, want);
		ck_assert_int_eq(r->type, mp_role_dtype[r->expert_role]);
	}
}
END_TEST

/*
 * check-gguf (mp_gguf_check_fd) and build (mp_shards_experts) judge the
 * same tensors: a K projection of the wrong type under each name is
 * refused by both or by neither.
 */
static const struct {
	const char *name;
	bool judged;
} agree_cases[] = {
	{"blk.17.attn_k_b.weight", true},
	{"blk.0.attn_k_b.weight", true},
	{"blk.017.attn_k_b.weight", false},
	{"blk.-1.attn_k_b.weight", false},
	{"blk.1x.attn_k_b.weight", false},
	{"blk.99999999999999999999.attn_k_b.weight", false},
	{"blk..attn_k_b.weight", false},
};

START_TEST(test_check_and_build_agree)
{
	char dir[] = "/tmp/check_gguf_agree.XXXXXX", path[PATH_MAX];
	struct mp_gguf_out_kv kv[] = {{"general.architecture", MP_GGUF_STRING, "kimi-k3", 0}};
	struct mp_gguf_out_tensor t;
	struct mp_gguf_check_result res;
	struct mp_error err = {0};
	struct mp_shard_set *set = NULL;
	struct mp_experts ex;
	enum mp_err checked, built;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/one.gguf", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	/* Q2_K where Q4_0 is required */
	out_tensor(&t, agree_cases[_i].name, GGML_Q2_K, 1, 256, 1, false);
	ck_assert_int_eq(mp_gguf_write(fd, path, kv, 1, &t, 1, &err), MP_OK);
	checked = mp_gguf_check_fd(fd, path, &res, &err);
	close(fd);
	ck_assert_int_eq(mp_shards_open(path, &set, &err), MP_OK);
	built = mp_shards_experts(set, false, &ex);
	mp_shards_close(set);
	unlink(path);
	rmdir(dir);
	ck_assert_msg((checked == MP_E_GGUF_MLA_K) == agree_cases[_i].judged,
		      "check-gguf on %s: %s", agree_cases[_i].name, mp_err_name(checked));
	ck_assert_uint_eq(res.tensors_checked, agree_cases[_i].judged);
	ck_assert_msg((built == MP_E_GGUF_MLA_K) == agree_cases[_i].judged,
		      "build on %s: %s", agree_cases[_i].name, mp_err_name(built));
}
END_TEST

static Suite *gguf_suite(void)
{
	Suite *s = suite_create("gguf");
	TCase *fixtures = tcase_create("fixtures");
	TCase *corrupt = tcase_create("corrupt");
	TCase *bounded = tcase_create("bounded");

	tcase_add_test(fixtures, test_reader_sees_what_ggml_wrote);
	tcase_add_test(fixtures, test_valid_fixture_passes);
	tcase_add_loop_test(fixtures, test_bad_fixture_fails, 0,
			    (int)(sizeof bad_fixtures / sizeof bad_fixtures[0]));
	tcase_add_test(fixtures, test_callback_stops_walk);
	tcase_add_test(fixtures, test_corpus_matches_ggml);
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
	tcase_add_test(corrupt, test_duplicate_reported_as_ggml_does);
	suite_add_tcase(s, corrupt);

	/*
	 * each takes about a second; a file that took hours fails.  The
	 * ceiling leaves room for a sanitizer build on a loaded machine.
	 */
	tcase_set_timeout(bounded, 60);
	tcase_add_loop_test(bounded, test_sparse_counts, 0, 2);
	tcase_add_loop_test(bounded, test_sparse_arrays, 0, 2);
	tcase_add_loop_test(bounded, test_sparse_strings, 0, 2);
	tcase_add_test(bounded, test_million_tensors);
	suite_add_tcase(s, bounded);

	TCase *writer = tcase_create("writer");
	tcase_add_test(writer, test_writer_round_trip);
	tcase_add_test(writer, test_writer_refuses_partial_blocks);
	suite_add_tcase(s, writer);

	TCase *names = tcase_create("k3names");
	tcase_add_test(names, test_k3_layer);
	tcase_add_test(names, test_k3_rules);
	tcase_add_loop_test(names, test_check_and_build_agree, 0,
			    (int)(sizeof agree_cases / sizeof agree_cases[0]));
	suite_add_tcase(s, names);
	return s;
}

const struct fx_suite_def fx_suite = {.make = gguf_suite};
