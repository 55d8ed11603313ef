/*
 * check_dequant.c - Q2_K / Q3_K dequantization and the payload scan
 * (MXFP4 has check_mxfp4).
 *
 * Dequantization is compared bit for bit with ggml's own output: blocks
 * that ggml quantized (some with their fp16 scales patched to Inf, NaN and
 * subnormals) and what ggml's reference dequantizer made of them, committed
 * under tests/data/dequant (see its README).  When ggml can be loaded
 * (tests/ggml.py), fresh blocks from a new
 * seed are compared too; otherwise that test says why it skipped.
 *
 * The scan is run on small mkdemo packs with problems planted in chosen
 * roles, and must name exactly those.
 *
 * `check_dequant --decode TYPE` reads blocks on stdin and writes float32
 * on stdout: the shell suite's reference for `moepack dump`.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "payload/dequant.h"
#include "pack/digest.h"
#include "fixture.h"
#include "pack/pack.h"
#include "base/quant.h"
#include "payload/scan.h"

/* ---- fixtures from ggml --------------------------------------------------- */

static char *data_path(const char *dir, const char *name, char *out, size_t len)
{
	ck_assert_int_lt(snprintf(out, len, "%s/%s", dir, name), (int)len);
	return out;
}

static const char *fixture_dir(void)
{
	static char dir[PATH_MAX];

	return fx_data_path("dequant", dir, sizeof dir);
}

struct compare_result {
	size_t blocks;
	size_t nan, inf, zero;    /* in ggml's output: what was covered */
	size_t subnormal_scales;  /* fp16 scales of the blocks */
};

/*
 * Decode dir/<type>.bin with our code and compare every float's bits with
 * dir/<type>.f32 (ggml's output, little-endian).  Fails the test at the
 * first difference, naming the block and weight.
 */
static struct compare_result compare_with_ggml(const char *dir, const char *type)
{
	const struct mp_quant_type *qt = mp_quant_by_name(type);
	char lower[8], name[16], path[PATH_MAX];
	unsigned char *raw, *ref;
	size_t raw_len, ref_len, n;
	struct compare_result r = {0};
	float *got;

	ck_assert_ptr_nonnull(qt);
	for (size_t i = 0; i <= strlen(type); i++)
		lower[i] = (char)(type[i] >= 'A' && type[i] <= 'Z' ? type[i] + 32 : type[i]);
	snprintf(name, sizeof name, "%s.bin", lower);
	raw = (unsigned char *)fx_read_file(data_path(dir, name, path, sizeof path), &raw_len);
	snprintf(name, sizeof name, "%s.f32", lower);
	ref = (unsigned char *)fx_read_file(data_path(dir, name, path, sizeof path), &ref_len);
	ck_assert_msg(raw_len > 0 && raw_len % qt->block_bytes == 0,
		      "%s: %zu bytes is not whole blocks", type, raw_len);
	n = raw_len / qt->block_bytes;
	ck_assert_msg(ref_len == n * qt->block_weights * 4,
		      "%s: %zu bytes of floats for %zu blocks", type, ref_len, n);
	got = malloc(n * qt->block_weights * sizeof *got);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(mp_dequant(qt, raw, got, n), 0);
	for (size_t i = 0; i < n * qt->block_weights; i++) {
		const unsigned char *p = ref + 4 * i;
		uint32_t want = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				(uint32_t)p[3] << 24;
		uint32_t have;
		float w;

		memcpy(&have, &got[i], 4);
		memcpy(&w, &want, 4);
		ck_assert_msg(have == want,
			      "%s block %zu weight %zu: ggml 0x%08" PRIx32 " (%.9g), ours "
			      "0x%08" PRIx32 " (%.9g)",
			      type, i / qt->block_weights, i % qt->block_weights, want, (double)w, have,
			      (double)got[i]);
		r.nan += isnan(w) != 0;
		r.inf += isinf(w) != 0;
		r.zero += w == 0.0f;
	}
	for (size_t b = 0; b < n; b++) {
		uint16_t sc[2];
		unsigned ns;

		mp_block_scales(qt, raw + b * qt->block_bytes, sc, &ns);
		for (unsigned k = 0; k < ns; k++)
			r.subnormal_scales += (sc[k] & 0x7c00) == 0 && (sc[k] & 0x3ff) != 0;
	}
	r.blocks = n;
	free(got);
	free(raw);
	free(ref);
	return r;
}

static void test_fixture(const char *type)
{
	struct compare_result r = compare_with_ggml(fixture_dir(), type);

	/* the fixture must still cover what it was made for */
	ck_assert_uint_ge(r.blocks, 20);
	ck_assert_msg(r.nan > 0 && r.inf > 0 && r.subnormal_scales >= 4 && r.zero > 0,
		      "%s fixture lacks a case: %zu NaN, %zu Inf, %zu zero values, %zu "
		      "subnormal scales",
		      type, r.nan, r.inf, r.zero, r.subnormal_scales);
}

/* The .f32 encoding: little-endian binary32, also in place. */
START_TEST(test_f32_encode)
{
	static const unsigned char want[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0};
	float v[2] = {1.0f, -2.5f};
	unsigned char out[8];

	mp_f32_encode(out, v, 2);
	ck_assert_mem_eq(out, want, sizeof want);
	mp_f32_encode((unsigned char *)v, v, 2);
	ck_assert_mem_eq(v, want, sizeof want);
}
END_TEST

START_TEST(test_fixture_q2_k) { test_fixture("Q2_K"); }
END_TEST

START_TEST(test_fixture_q3_k) { test_fixture("Q3_K"); }
END_TEST

/* Blocks are independent: decoding one at a time gives the same bits. */
START_TEST(test_block_at_a_time)
{
	const char *types[] = {"Q2_K", "Q3_K", "MXFP4"};
	const char *files[] = {"q2_k.bin", "q3_k.bin", "mxfp4.bin"};

	for (int t = 0; t < 3; t++) {
		const struct mp_quant_type *qt = mp_quant_by_name(types[t]);
		const size_t w = qt->block_weights;
		char path[PATH_MAX];
		size_t len, n;
		unsigned char *raw;
		float *all, one[MP_CODEC_MAX_BLOCK_WEIGHTS];

		raw = (unsigned char *)fx_read_file(data_path(fixture_dir(), files[t], path,
							      sizeof path), &len);
		n = len / qt->block_bytes;
		ck_assert_uint_gt(n, 0);
		all = malloc(n * w * sizeof *all);
		ck_assert_ptr_nonnull(all);
		mp_dequant(qt, raw, all, n);
		for (size_t b = 0; b < n; b++) {
			mp_dequant(qt, raw + b * qt->block_bytes, one, 1);
			ck_assert_msg(memcmp(one, all + b * w, w * sizeof *one) == 0,
				      "%s block %zu differs alone", types[t], b);
		}
		free(all);
		free(raw);
	}
}
END_TEST

START_TEST(test_unsupported_type)
{
	unsigned char raw[256] = {0};
	float out[MP_QK_K] = {1.0f};

	ck_assert_int_eq(mp_dequant(mp_quant_by_name("Q4_K"), raw, out, 1), -1);
	ck_assert_int_eq(mp_dequant(NULL, raw, out, 1), -1);
	ck_assert(out[0] == 1.0f); /* nothing written */
	ck_assert(!mp_dequant_supported(mp_quant_by_name("Q4_0")));
	ck_assert(!mp_dequant_supported(NULL));
	ck_assert(mp_dequant_supported(mp_quant_by_name("Q3_K")));
	ck_assert(mp_dequant_supported(mp_quant_by_name("MXFP4")));
	/* the table answers by the type's id, for every id ggml knows */
	for (uint32_t id = 0; id < MP_GGML_TYPE_COUNT; id++) {
		const struct mp_codec *c = mp_codec(mp_ggml_type(id));

		ck_assert_msg(!c == !(id == MP_GGML_Q2_K || id == MP_GGML_Q3_K ||
				      id == MP_GGML_MXFP4), "type %u", id);
		if (c)
			ck_assert_ptr_eq(c->type, mp_ggml_type(id));
	}
}
END_TEST

/* Hand-made blocks whose values follow from the layout alone. */
START_TEST(test_hand_blocks)
{
	unsigned char q2[MP_Q2K_BYTES] = {0}, q3[MP_Q3K_BYTES] = {0};
	float v[MP_QK_K];
	uint16_t sc[2];
	unsigned ns;

	/* Q2_K: d = 1, dmin = 0.5; sub-block 0 scale 3 min 2; quant 0 of
	 * weight 0 is 1 (bits 0-1 of qs[0]); weight 32 takes qs[0] bits 2-3 */
	q2[MP_Q2K_D + 1] = 0x3c;    /* fp16 1.0 = 0x3c00 */
	q2[MP_Q2K_DMIN + 1] = 0x38; /* fp16 0.5 = 0x3800 */
	q2[MP_Q2K_SCALES + 0] = 0x23;
	q2[MP_Q2K_SCALES + 2] = 0x01; /* sub-block 2: weights 32..47, scale 1 */
	q2[MP_Q2K_QS + 0] = 0x01 | 0x03 << 2;
	mp_dequant_q2_k(q2, v, 1);
	ck_assert(v[0] == 3.0f * 1 - 1.0f);  /* 3*1 - 0.5*2 */
	ck_assert(v[1] == -1.0f);            /* quant 0 */
	ck_assert(v[32] == 1.0f * 3);         /* scale 1, min 0, quant 3 */
	mp_block_scales(mp_quant_by_name("Q2_K"), q2, sc, &ns);
	ck_assert_uint_eq(ns, 2);
	ck_assert_uint_eq(sc[0], 0x3c00);
	ck_assert_uint_eq(sc[1], 0x3800);

	/* Q3_K: d = 2; scale 0's low nibble 1 and top bits 2 -> 33 - 32 = 1;
	 * weight 0: low bits 3, high bit set -> 3; weight 1: 0, clear -> -4 */
	q3[MP_Q3K_D + 1] = 0x40;                /* fp16 2.0 */
	q3[MP_Q3K_SCALES + 0] = 0x01;
	q3[MP_Q3K_SCALES + 8] = 0x02;
	q3[MP_Q3K_QS + 0] = 0x03;
	q3[MP_Q3K_HMASK + 0] = 0x01;
	mp_dequant_q3_k(q3, v, 1);
	ck_assert(v[0] == 2.0f * (float)(33 - 32) * 3);
	ck_assert(v[1] == 2.0f * 1 * -4);
	/* scale 15: high nibble of byte 7, bits 6-7 of byte 11 */
	q3[MP_Q3K_SCALES + 7] = 0x50;
	q3[MP_Q3K_SCALES + 11] = 0x40;
	mp_dequant_q3_k(q3, v, 1);
	ck_assert(v[240] == 2.0f * (float)((5 | 1 << 4) - 32) * -4);
	mp_block_scales(mp_quant_by_name("Q3_K"), q3, sc, &ns);
	ck_assert_uint_eq(ns, 1);
	ck_assert_uint_eq(sc[0], 0x4000);
}
END_TEST

/*
 * Fresh blocks from ggml, a new seed each run.  Skips (passing, with a
 * "SKIP: reason" line on stdout) when ggml cannot be loaded: see
 * tests/ggml.py for where it is looked for.
 * gen.py's exit status 77 means "cannot load", 127 that there is no python3.
 */
START_TEST(test_oracle_fresh)
{
	char gen[PATH_MAX], tmp[PATH_MAX], cmd[3 * PATH_MAX], why[512] = "";
	unsigned seed = (unsigned)time(NULL);

	fx_mkdtemp(tmp, sizeof tmp);
	snprintf(cmd, sizeof cmd, "python3 '%s' --out '%s' --seed %u 2>&1",
		 fx_data_path("dequant/gen.py", gen, sizeof gen), tmp, seed);
	if (fx_run_script(cmd, why, sizeof why) == 77) {
		/* the one-line form the suite summaries count */
		printf("SKIP: check_dequant: ggml's dequantizer on fresh blocks: %s\n", why);
		fx_rmtree(tmp);
		return;
	}
	compare_with_ggml(tmp, "Q2_K");
	compare_with_ggml(tmp, "Q3_K");
	printf("check_dequant: oracle comparison with seed %u: bit-identical\n", seed);
	fx_rmtree(tmp);
}
END_TEST

/* ---- the payload scan ------------------------------------------------------ */

struct seen {
	struct mp_scan_problem p[64];
	size_t n;
};

static void collect(const struct mp_scan_problem *p, void *arg)
{
	struct seen *s = arg;

	if (s->n < 64)
		s->p[s->n] = *p;
	s->n++;
}

static void role_range(const struct mp_pack *p, uint32_t layer, uint64_t expert,
		       enum mp_role r, uint64_t *off, uint64_t *len)
{
	long li = mp_pack_layer_index(p, layer);

	ck_assert_int_ge(li, 0);
	mp_pack_role_range(p, mp_pack_object(p, (uint64_t)li, expert), r, off, len);
}

static void scan(const struct fx *f, bool hash, struct seen *seen,
		 struct mp_scan_summary *sum, unsigned char digest[MP_SHA256_LEN])
{
	struct mp_pack *p;
	struct mp_error err;
	struct mp_scan_opts o = {.hash = hash};

	ck_assert_int_eq(fx_open_pack(f, NULL, &p, &err), MP_OK);
	memset(seen, 0, sizeof *seen);
	ck_assert_int_eq(mp_scan_pack(p, &o, collect, seen, sum, digest, &err), MP_OK);
	mp_pack_close(p);
}

START_TEST(test_scan_clean)
{
	struct fx f;
	struct seen seen;
	struct mp_scan_summary sum;
	unsigned char d[MP_SHA256_LEN];
	char hex[MP_SHA256_HEX], want[MP_SHA256_HEX];

	fx_setup(&f, NULL); /* 92 x 2 experts of 256 x 256, well-formed blocks */
	scan(&f, false, &seen, &sum, d);
	ck_assert_uint_eq(seen.n, 0);
	ck_assert_uint_eq(sum.roles, 92 * 2 * 3);
	ck_assert_uint_eq(sum.experts, 92 * 2);
	ck_assert_uint_eq(sum.blocks, 92 * 2 * 3 * 256);
	ck_assert_uint_eq(sum.zero_roles + sum.nonfinite_scales + sum.zero_scale_experts, 0);

	scan(&f, true, &seen, &sum, d);
	ck_assert_uint_eq(seen.n, 0);
	ck_assert_uint_eq(sum.blocks, 92 * 2 * 3 * 256);
	mp_sha256_hex(d, hex);
	fx_sha256_file(f.pack, want);
	ck_assert_str_eq(hex, want);
	fx_cleanup(&f);
}
END_TEST

static void put16(const struct fx *f, uint64_t at, uint16_t v)
{
	unsigned char b[2];

	fx_put_le(b, v, 2);
	fx_pwrite(f, at, b, 2);
}

/*
 * A zeroed role (layer 3 expert 1 gate), a NaN d (layer 40 expert 0 down,
 * block 7), an Inf dmin (layer 92 expert 1 up, blocks 0 and 255) and an
 * expert whose every scale is zero but whose quants are not (layer 17
 * expert 0).  Nothing else is fixed up: no digest covers payloads.
 */
static void plant(const struct fx *f, bool gap)
{
	struct fx_pack_opts o = {.gap = gap ? 3000 : 0};
	struct mp_pack *p;
	struct mp_error err;
	uint64_t off, len;
	unsigned char *zero;

	fx_build((struct fx *)f, &o);
	ck_assert_int_eq(fx_open_pack(f, NULL, &p, &err), MP_OK);
	role_range(p, 3, 1, MP_ROLE_GATE, &off, &len);
	zero = calloc(1, len);
	ck_assert_ptr_nonnull(zero);
	fx_pwrite(f, off, zero, len);
	free(zero);
	role_range(p, 40, 0, MP_ROLE_DOWN, &off, &len);
	put16(f, off + 7 * MP_Q3K_BYTES + MP_Q3K_D, 0x7e00);
	role_range(p, 92, 1, MP_ROLE_UP, &off, &len);
	put16(f, off + MP_Q2K_DMIN, 0xfc00);
	put16(f, off + 255 * MP_Q2K_BYTES + MP_Q2K_DMIN, 0x7c00);
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const struct mp_quant_type *qt = mp_quant_by_id(p->m.roles[r].dtype_id);

		role_range(p, 17, 0, r, &off, &len);
		for (uint64_t b = 0; b < len / qt->block_bytes; b++) {
			uint64_t at = off + b * qt->block_bytes;

			if (qt->id == MP_GGML_Q2_K) {
				put16(f, at + MP_Q2K_D, 0x8000); /* -0 is zero too */
				put16(f, at + MP_Q2K_DMIN, 0);
			} else {
				put16(f, at + MP_Q3K_D, 0);
			}
		}
	}
	mp_pack_close(p);
}

static void assert_planted(const struct seen *s, const struct mp_scan_summary *sum)
{
	ck_assert_uint_eq(s->n, 4);
	/* pack order: layer 3, 17, 40, 92 */
	ck_assert_int_eq(s->p[0].kind, MP_SCAN_ZERO_ROLE);
	ck_assert_uint_eq(s->p[0].layer, 3);
	ck_assert_uint_eq(s->p[0].expert, 1);
	ck_assert_int_eq(s->p[0].role, MP_ROLE_GATE);
	ck_assert(!s->p[0].hole); /* written zeros, not a hole */

	ck_assert_int_eq(s->p[1].kind, MP_SCAN_ZERO_SCALES);
	ck_assert_uint_eq(s->p[1].layer, 17);
	ck_assert_uint_eq(s->p[1].expert, 0);
	ck_assert_int_eq(s->p[1].role, MP_ROLE_COUNT);

	ck_assert_int_eq(s->p[2].kind, MP_SCAN_NONFINITE_SCALE);
	ck_assert_uint_eq(s->p[2].layer, 40);
	ck_assert_uint_eq(s->p[2].expert, 0);
	ck_assert_int_eq(s->p[2].role, MP_ROLE_DOWN);
	ck_assert_uint_eq(s->p[2].count, 1);
	ck_assert_uint_eq(s->p[2].first_block, 7);
	ck_assert_str_eq(s->p[2].first_scale, "d");
	ck_assert_uint_eq(s->p[2].first_value, 0x7e00);

	ck_assert_int_eq(s->p[3].kind, MP_SCAN_NONFINITE_SCALE);
	ck_assert_uint_eq(s->p[3].layer, 92);
	ck_assert_uint_eq(s->p[3].expert, 1);
	ck_assert_int_eq(s->p[3].role, MP_ROLE_UP);
	ck_assert_uint_eq(s->p[3].count, 2);
	ck_assert_uint_eq(s->p[3].first_block, 0);
	ck_assert_str_eq(s->p[3].first_scale, "dmin");
	ck_assert_uint_eq(s->p[3].first_value, 0xfc00);

	ck_assert_uint_eq(sum->nonfinite_scales, 3);
	ck_assert_uint_eq(sum->nonfinite_roles, 2);
	ck_assert_uint_eq(sum->zero_roles, 1);
	ck_assert_uint_eq(sum->hole_roles, 0);
	ck_assert_uint_eq(sum->zero_scale_experts, 1);
}

START_TEST(test_scan_planted)
{
	struct fx f;
	struct seen seen;
	struct mp_scan_summary sum;
	unsigned char d[MP_SHA256_LEN];
	char hex[MP_SHA256_HEX], want[MP_SHA256_HEX];

	fx_init(&f);
	plant(&f, _i == 1);
	scan(&f, false, &seen, &sum, d);
	assert_planted(&seen, &sum);
	/* the hashing pass reads everything, gaps included, and finds the same */
	scan(&f, true, &seen, &sum, d);
	assert_planted(&seen, &sum);
	mp_sha256_hex(d, hex);
	fx_sha256_file(f.pack, want);
	ck_assert_str_eq(hex, want);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_scan_sparse)
{
	struct fx f;
	struct fx_pack_opts o = {.sparse = true};
	struct seen seen;
	struct mp_scan_summary sum;
	unsigned char d[MP_SHA256_LEN];

	fx_setup(&f, &o);
	scan(&f, false, &seen, &sum, d);
	/* every role is zero (a hole), every expert has all-zero scales */
	ck_assert_uint_eq(sum.roles, 552);
	ck_assert_uint_eq(sum.zero_roles, 552);
	ck_assert_uint_eq(sum.zero_scale_experts, 184);
	ck_assert_uint_eq(sum.nonfinite_scales, 0);
	ck_assert_uint_eq(seen.n, 552 + 184);
	ck_assert_int_eq(seen.p[0].kind, MP_SCAN_ZERO_ROLE);
	ck_assert_uint_eq(seen.p[0].layer, 1);
	ck_assert_int_eq(seen.p[0].role, MP_ROLE_UP);
	ck_assert_int_eq(seen.p[3].kind, MP_SCAN_ZERO_SCALES);
	/*
	 * Holes are found without reading, where the file system tells.  The
	 * first role may share a file-system block with the index (alignment
	 * 256): that one is read, and is zero all the same.
	 */
	if (sum.hole_roles) {
		ck_assert_uint_ge(sum.hole_roles, 551);
		ck_assert_uint_le(sum.bytes_read, (552 - sum.hole_roles) * 256 * MP_Q2K_BYTES);
		ck_assert(seen.p[4].hole); /* layer 1 expert 1 up */
	} else {
		printf("check_dequant: this file system reports no holes (SEEK_DATA)\n");
	}
	/* the hashing pass reads the zeros: same findings, no holes claimed */
	scan(&f, true, &seen, &sum, d);
	ck_assert_uint_eq(sum.zero_roles, 552);
	ck_assert_uint_eq(sum.hole_roles, 0);
	ck_assert_uint_eq(sum.zero_scale_experts, 184);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_scan_digest_check)
{
	struct fx f;
	struct fx_pack_opts o = {.full_sha256 = true};
	struct mp_pack *p;
	struct mp_error err;
	unsigned char d[MP_SHA256_LEN];
	struct mp_scan_summary sum;
	struct mp_scan_opts so = {.hash = true};

	fx_setup(&f, &o);
	ck_assert_int_eq(fx_open_pack(&f, NULL, &p, &err), MP_OK);
	ck_assert_int_eq(mp_scan_pack(p, &so, NULL, NULL, &sum, d, &err), MP_OK);
	ck_assert_int_eq(mp_pack_check_digest(p, d, &err), MP_OK);
	d[5] ^= 1;
	mp_pack_check_digest(p, d, &err);
	fx_assert_err(&err, MP_E_FULL_DIGEST, "expert_pack.sha256");
	p->m.sha256[0] = '\0';
	mp_pack_check_digest(p, d, &err);
	fx_assert_err(&err, MP_E_FULL_DIGEST_MISSING, "expert_pack.sha256");
	mp_pack_close(p);
	fx_cleanup(&f);
}
END_TEST

START_TEST(test_scan_short_file)
{
	struct fx f;
	struct mp_pack *p;
	struct mp_error err;
	unsigned char d[MP_SHA256_LEN];
	struct mp_scan_summary sum;
	struct mp_scan_opts so = {0};

	fx_setup(&f, NULL);
	ck_assert_int_eq(fx_open_pack(&f, NULL, &p, &err), MP_OK);
	/* the pack shrinks after validation: an I/O error, not a crash */
	fx_truncate(&f, fx_file_size(f.pack) - 1000);
	ck_assert_int_eq(mp_scan_pack(p, &so, NULL, NULL, &sum, d, &err), MP_E_PACK_IO);
	fx_assert_err(&err, MP_E_PACK_IO, "the file is shorter (ends before byte");
	so.hash = true;
	ck_assert_int_eq(mp_scan_pack(p, &so, NULL, NULL, &sum, d, &err), MP_E_PACK_IO);
	mp_pack_close(p);
	fx_cleanup(&f);
}
END_TEST

/* ---- --decode: the shell suite's reference --------------------------------- */

static int decode_stdin(const char *type)
{
	const struct mp_quant_type *qt = mp_quant_by_name(type);
	unsigned char raw[MP_CODEC_MAX_BLOCK_BYTES];
	float v[MP_CODEC_MAX_BLOCK_WEIGHTS];

	if (!mp_dequant_supported(qt)) {
		fprintf(stderr, "check_dequant --decode: %s is not Q2_K, Q3_K or MXFP4\n", type);
		return 2;
	}
	while (fread(raw, qt->block_bytes, 1, stdin) == 1) {
		unsigned char out[4 * MP_CODEC_MAX_BLOCK_WEIGHTS];

		mp_dequant(qt, raw, v, 1);
		for (unsigned i = 0; i < qt->block_weights; i++) {
			uint32_t u;

			memcpy(&u, &v[i], 4);
			for (int k = 0; k < 4; k++)
				out[4 * i + k] = (unsigned char)(u >> (8 * k));
		}
		if (fwrite(out, 4 * qt->block_weights, 1, stdout) != 1)
			return 3;
	}
	return ferror(stdin) || fflush(stdout) ? 3 : 0;
}

static Suite *dequant_suite(void)
{
	Suite *s = suite_create("dequant");
	TCase *tc = tcase_create("dequant");
	TCase *sc = tcase_create("scan");

	tcase_add_test(tc, test_f32_encode);
	tcase_add_test(tc, test_fixture_q2_k);
	tcase_add_test(tc, test_fixture_q3_k);
	tcase_add_test(tc, test_block_at_a_time);
	tcase_add_test(tc, test_unsupported_type);
	tcase_add_test(tc, test_hand_blocks);
	tcase_add_test(tc, test_oracle_fresh);
	suite_add_tcase(s, tc);

	tcase_add_test(sc, test_scan_clean);
	tcase_add_loop_test(sc, test_scan_planted, 0, 2); /* without and with gaps */
	tcase_add_test(sc, test_scan_sparse);
	tcase_add_test(sc, test_scan_digest_check);
	tcase_add_test(sc, test_scan_short_file);
	suite_add_tcase(s, sc);
	return s;
}

/* `check_dequant --decode TYPE`; -1 (run the suite) for anything else. */
static int decode_command(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--decode") == 0)
		return decode_stdin(argv[2]);
	return -1;
}

const struct fx_suite_def fx_suite = {.make = dequant_suite, .command = decode_command};
