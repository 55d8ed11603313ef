/*
 * check_mxfp4.c - MXFP4 decoding and the payload scan of MXFP4 roles.
 *
 * Decoding is checked four ways: blocks whose values are worked out by
 * hand; every scale byte with every code in every position against the MX
 * definition computed in double (an independent derivation, not ggml's
 * formula); the committed blocks of tests/data/dequant (mxfp4.bin) against
 * what ggml's own dequantize_row_mxfp4 made of them (mxfp4.f32); and, when
 * ggml can be loaded (tests/ggml.py), fresh and exhaustive blocks from
 * gen.py against ggml itself.  Otherwise that last test says why it skipped.
 *
 * The scan is run on packs of MXFP4 roles.  pack/ does not accept an MXFP4
 * manifest yet, so those packs are a file of blocks and the struct mp_pack
 * that mp_pack_open() would fill in for it, built here by hand.
 */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "base/quant.h"
#include "fixture.h"
#include "pack/pack.h"
#include "payload/dequant.h"
#include "payload/scan.h"
#include "payload/scanreport.h"

static const struct mp_quant_type *mxfp4(void)
{
	const struct mp_quant_type *t = mp_quant_by_name("MXFP4");

	ck_assert_ptr_nonnull(t);
	return t;
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

/* ---- the entry ------------------------------------------------------------- */

START_TEST(test_entry)
{
	const struct mp_codec *c = mp_codec(mxfp4());
	unsigned char block[MP_MXFP4_BYTES] = {0x7f, 0x21};
	uint16_t sc[MP_CODEC_MAX_SCALES] = {1, 1};
	unsigned ns = 9;
	float v[MP_QK_MXFP4];

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_eq(c->type, mp_ggml_type(MP_GGML_MXFP4));
	ck_assert_uint_eq(c->type->block_weights, 32);
	ck_assert_uint_eq(c->type->block_bytes, 17);
	ck_assert(c->zero_scales_per_role);
	ck_assert(!mp_codec(mp_quant_by_name("Q2_K"))->zero_scales_per_role);
	ck_assert_uint_eq(c->nscales, 1);
	ck_assert_str_eq(c->scales[0].name, "e");
	mp_block_scales(mxfp4(), block, sc, &ns);
	ck_assert_uint_eq(ns, 1);
	ck_assert_uint_eq(sc[0], 0x7f);
	ck_assert_uint_eq(sc[1], 0);
	/* through the table: e = 127, d = 2^-1; nibble 1 is code 1 */
	ck_assert_int_eq(mp_dequant(mxfp4(), block, v, 1), 0);
	ck_assert(v[0] == 0.5f && v[16] == 1.0f && v[1] == 0.0f);
}
END_TEST

/* ---- decoding -------------------------------------------------------------- */

/* A block of scale byte e whose byte j (0..15) of codes is qs[j]. */
static void make_block(unsigned char *b, unsigned e, const unsigned char qs[16])
{
	b[MP_MXFP4_E] = (unsigned char)e;
	memcpy(b + MP_MXFP4_QS, qs, 16);
}

/*
 * Worked out by hand from ggml's rule, weight = code * 2^(e - 128):
 * the bit patterns are IEEE binary32 written out.
 */
START_TEST(test_hand_blocks)
{
	static const struct {
		unsigned e;
		unsigned char q0, q1, q2; /* bytes 0..2 of the codes, the rest 0 */
		uint32_t w0, w1, w2, w16, w17, w18;
	} c[] = {
		/* e = 128: d = 1.  0x21: weight 0 code 1, weight 16 code 2;
		 * 0xf7: 12 and -12; 0x98: nibble 8 is +0 (not -0), 9 is -1 */
		{128, 0x21, 0xf7, 0x98, 0x3f800000, 0x41400000, 0x00000000,
		 0x40000000, 0xc1400000, 0xbf800000},
		/* e = 127: d = 0.5.  code 3 -> 1.5, code -6 -> -3, code 4 -> 2 */
		{127, 0x53, 0x0d, 0x04, 0x3fc00000, 0xc0400000, 0x40000000,
		 0x40400000, 0, 0},
		/* e = 0: d = 2^-128, the subnormal 0x00200000; 12 x d = 1.5 x
		 * 2^-125 is normal again (exponent field 2); -1 x d */
		{0, 0x71, 0x09, 0x00, 0x00200000, 0x80200000, 0, 0x01400000, 0, 0},
		/* e = 1: d = 2^-127 = 0x00400000; code 3: 3 x 2^-127 */
		{1, 0x31, 0x00, 0x00, 0x00400000, 0, 0, 0x00c00000, 0, 0},
		/* e = 255: d = 2^127, not a NaN: code 1 is 2^127, -1 its negative,
		 * code 2 (2^128) +Inf, code -12 -Inf */
		{255, 0x21, 0xf9, 0x00, 0x7f000000, 0xff000000, 0, 0x7f800000,
		 0xff800000, 0},
		/* e = 254: 3 x 2^126 = 1.5 x 2^127 is the largest finite, code 4 Inf */
		{254, 0x43, 0x0b, 0x00, 0x7f400000, 0xff400000, 0, 0x7f800000, 0, 0},
		/* e = 253: code 6 finite (1.5 x 2^127), code -8 -Inf */
		{253, 0xe5, 0x00, 0x00, 0x7f400000, 0, 0, 0xff800000, 0, 0},
		/* e = 252: even code 12 stays finite: 12 x 2^124 */
		{252, 0xf7, 0x00, 0x00, 0x7f400000, 0, 0, 0xff400000, 0, 0},
	};
	unsigned char b[MP_MXFP4_BYTES];
	float v[MP_QK_MXFP4];

	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		unsigned char qs[16] = {c[i].q0, c[i].q1, c[i].q2};
		const uint32_t want[6] = {c[i].w0, c[i].w1, c[i].w2, c[i].w16, c[i].w17, c[i].w18};
		const int at[6] = {0, 1, 2, 16, 17, 18};

		make_block(b, c[i].e, qs);
		mp_dequant_mxfp4(b, v, 1);
		for (int k = 0; k < 6; k++)
			ck_assert_msg(bits(v[at[k]]) == want[k],
				      "e = %u weight %d: 0x%08" PRIx32 ", want 0x%08" PRIx32,
				      c[i].e, at[k], bits(v[at[k]]), want[k]);
		/* the bytes not set are nibble 0: +0 */
		ck_assert_uint_eq(bits(v[15]), 0);
		ck_assert_uint_eq(bits(v[31]), 0);
	}
}
END_TEST

/*
 * A weight from the MX definition, independently of ggml's formula: the
 * nibble is E2M1 (sign, two exponent bits with bias 1, one mantissa bit)
 * and the scale 2^(e - 127), computed exactly in double.  Two things are
 * ggml's own: e = 255 is a number (the MX spec makes it NaN) and the -0
 * of nibble 8 comes out +0.  Beyond float's range, +-Inf, as IEEE rounding
 * gives it.
 */
static float mx_definition(unsigned e, unsigned nibble)
{
	unsigned ex = (nibble >> 1) & 3, man = nibble & 1;
	double e2m1 = ex == 0 ? 0.5 * man : ldexp(1.0 + 0.5 * man, (int)ex - 1);
	double v = ldexp(e2m1, (int)e - 127);

	if (v == 0)
		return 0.0f;
	if (nibble & 8)
		v = -v;
	if (fabs(v) >= 0x1p128)
		return v > 0 ? INFINITY : -INFINITY;
	return (float)v; /* exact: an E2M1 value times a power of two in range */
}

/* Block k (0..15) of a scale byte's sixteen: weight j has nibble
 * (j + k) % 16 and weight j + 16 nibble (j + k + 8) % 16, so that every
 * position takes every nibble once over the sixteen blocks.  gen.py
 * --exhaustive writes the same blocks. */
static void sweep_block(unsigned char *b, unsigned e, unsigned k)
{
	unsigned char qs[16];

	for (unsigned j = 0; j < 16; j++)
		qs[j] = (unsigned char)(((j + k) & 15) | ((j + k + 8) & 15) << 4);
	make_block(b, e, qs);
}

static unsigned sweep_nibble(unsigned k, unsigned pos)
{
	return pos < 16 ? (pos + k) & 15 : (pos - 16 + k + 8) & 15;
}

START_TEST(test_every_scale_and_code)
{
	unsigned char b[MP_MXFP4_BYTES];
	float v[MP_QK_MXFP4];
	unsigned infinities = 0;

	for (unsigned e = 0; e < 256; e++) {
		for (unsigned k = 0; k < 16; k++) {
			sweep_block(b, e, k);
			mp_dequant_mxfp4(b, v, 1);
			for (unsigned pos = 0; pos < MP_QK_MXFP4; pos++) {
				float want = mx_definition(e, sweep_nibble(k, pos));

				ck_assert_msg(bits(v[pos]) == bits(want),
					      "e = %u nibble %u at %u: %a, want %a", e,
					      sweep_nibble(k, pos), pos, (double)v[pos],
					      (double)want);
				infinities += isinf(v[pos]) != 0;
			}
		}
	}
	/* e = 253: 4 nibbles overflow, 254: 8, 255: 12, each in 32 positions */
	ck_assert_uint_eq(infinities, 32 * (4 + 8 + 12));
}
END_TEST

/* Several blocks at once decode as each alone, into consecutive floats. */
START_TEST(test_many_blocks)
{
	enum { N = 300 };
	unsigned char *raw = malloc(N * MP_MXFP4_BYTES);
	float *all = malloc(N * MP_QK_MXFP4 * sizeof *all), one[MP_QK_MXFP4];

	ck_assert(raw && all);
	ck_assert_int_eq(mp_quant_fill_demo(mxfp4(), 5, 0, raw, N * MP_MXFP4_BYTES), 0);
	mp_dequant_mxfp4(raw, all, N);
	for (size_t i = 0; i < N; i++) {
		mp_dequant_mxfp4(raw + i * MP_MXFP4_BYTES, one, 1);
		ck_assert_msg(memcmp(one, all + i * MP_QK_MXFP4, sizeof one) == 0,
			      "block %zu differs alone", i);
	}
	free(raw);
	free(all);
}
END_TEST

/* ---- ggml's output --------------------------------------------------------- */

struct coverage {
	size_t blocks, inf, zero;
	bool e_seen[256];
	bool e_inf[256];          /* ggml gave an Inf in some block of this e */
};

static void read_pair(const char *dir, const char *name, unsigned char **raw, size_t *nraw,
		      unsigned char **ref, size_t *nref)
{
	char path[PATH_MAX];

	ck_assert_int_lt(snprintf(path, sizeof path, "%s/%s.bin", dir, name), (int)sizeof path);
	*raw = (unsigned char *)fx_read_file(path, nraw);
	ck_assert_int_lt(snprintf(path, sizeof path, "%s/%s.f32", dir, name), (int)sizeof path);
	*ref = (unsigned char *)fx_read_file(path, nref);
	ck_assert_msg(*nraw > 0 && *nraw % MP_MXFP4_BYTES == 0 &&
			      *nref == *nraw / MP_MXFP4_BYTES * MP_QK_MXFP4 * 4,
		      "%s: %zu bytes of blocks and %zu of floats do not match", name, *nraw,
		      *nref);
}

/*
 * dir/name.bin through our decoder against dir/name.f32 (ggml's floats,
 * little-endian), every bit; and what the floats cover, by scale byte.
 */
static struct coverage compare_with_ggml(const char *dir, const char *name)
{
	struct coverage cv = {0};
	unsigned char *raw, *ref;
	size_t nraw, nref;
	float v[MP_QK_MXFP4];

	read_pair(dir, name, &raw, &nraw, &ref, &nref);
	cv.blocks = nraw / MP_MXFP4_BYTES;
	for (size_t b = 0; b < cv.blocks; b++) {
		unsigned e = raw[b * MP_MXFP4_BYTES];

		mp_dequant_mxfp4(raw + b * MP_MXFP4_BYTES, v, 1);
		cv.e_seen[e] = true;
		for (unsigned i = 0; i < MP_QK_MXFP4; i++) {
			const unsigned char *p = ref + 4 * (b * MP_QK_MXFP4 + i);
			uint32_t want = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
					(uint32_t)p[3] << 24;

			ck_assert_msg(bits(v[i]) == want,
				      "%s block %zu (e = %u) weight %u: ggml 0x%08" PRIx32
				      ", ours 0x%08" PRIx32, name, b, e, i, want, bits(v[i]));
			cv.inf += (want & 0x7fffffffu) == 0x7f800000u;
			cv.zero += (want & 0x7fffffffu) == 0;
			ck_assert_msg((want & 0x7fffffffu) <= 0x7f800000u, "ggml gave a NaN");
			if ((want & 0x7fffffffu) == 0x7f800000u)
				cv.e_inf[e] = true;
		}
	}
	free(raw);
	free(ref);
	return cv;
}

/*
 * The scan's verdict on each scale byte is ggml's: an e is non-finite for
 * the check exactly when ggml decoded some code of it to Inf.  Needs a set
 * in which every e comes with every code.
 */
static void assert_scale_check_is_ggml(const struct coverage *cv)
{
	const struct mp_codec *c = mp_codec(mxfp4());

	for (unsigned e = 0; e < 256; e++) {
		unsigned char b[MP_MXFP4_BYTES] = {(unsigned char)e};
		struct mp_scale_tally t = {.all_zero = true};

		ck_assert_msg(cv->e_seen[e], "no block with e = %u", e);
		c->check_scales(b, 1, &t);
		ck_assert_msg((t.nonfinite != 0) == cv->e_inf[e],
			      "e = %u: the check says %s, ggml gave %s", e,
			      t.nonfinite ? "non-finite" : "finite",
			      cv->e_inf[e] ? "an Inf" : "no Inf");
	}
}

static const char *fixture_dir(char *buf, size_t len)
{
	return fx_data_path("dequant", buf, len);
}

START_TEST(test_fixture)
{
	char dir[PATH_MAX];
	struct coverage cv = compare_with_ggml(fixture_dir(dir, sizeof dir), "mxfp4");

	/* still what it was made for: ggml-quantized blocks, every scale
	 * byte once with every code, infinities, zeros */
	ck_assert_uint_ge(cv.blocks, 256 + 12);
	ck_assert_uint_gt(cv.inf, 0);
	ck_assert_uint_gt(cv.zero, 0);
	assert_scale_check_is_ggml(&cv);
}
END_TEST

/*
 * Fresh blocks from ggml: gen.py with a new seed, and --exhaustive, its
 * 4096 blocks of every scale byte with every nibble in every position.
 * Skips (passing, with a "SKIP: reason" line) when ggml cannot be loaded:
 * gen.py exits 77 then, and 127 means there is no python3.
 */
START_TEST(test_oracle_fresh)
{
	char gen[PATH_MAX], tmp[PATH_MAX], cmd[3 * PATH_MAX], why[512] = "";
	unsigned seed = (unsigned)time(NULL);
	struct coverage cv;

	fx_mkdtemp(tmp, sizeof tmp);
	snprintf(cmd, sizeof cmd, "python3 '%s' --out '%s' --seed %u --exhaustive 2>&1",
		 fx_data_path("dequant/gen.py", gen, sizeof gen), tmp, seed);
	if (fx_run_script(cmd, why, sizeof why) == 77) {
		printf("SKIP: check_mxfp4: ggml's dequantize_row_mxfp4 on fresh blocks: %s\n", why);
		fx_rmtree(tmp);
		return;
	}
	compare_with_ggml(tmp, "mxfp4");
	cv = compare_with_ggml(tmp, "mxfp4_all");
	ck_assert_uint_eq(cv.blocks, 256 * 16);
	/* as test_every_scale_and_code counts them from the MX definition */
	ck_assert_uint_eq(cv.inf, 32 * (4 + 8 + 12));
	assert_scale_check_is_ggml(&cv);
	printf("check_mxfp4: ggml comparison with seed %u and every scale byte, nibble and "
	       "position: bit-identical\n", seed);
	fx_rmtree(tmp);
}
END_TEST

/* ---- the scale check ------------------------------------------------------- */

START_TEST(test_scale_check)
{
	const struct mp_codec *c = mp_codec(mxfp4());
	unsigned char b[4 * MP_MXFP4_BYTES] = {0};
	struct mp_scale_tally t = {.all_zero = true};
	char text[96];

	/* all four e = 0: zero scales, nothing non-finite */
	c->check_scales(b, 4, &t);
	ck_assert(t.all_zero);
	ck_assert_uint_eq(t.blocks, 4);
	ck_assert_uint_eq(t.nonfinite, 0);
	/* then 252 (finite), 253, 0, 255 - counted on from the first call */
	b[0] = 252;
	b[17] = 253;
	b[51] = 255;
	c->check_scales(b, 4, &t);
	ck_assert(!t.all_zero);
	ck_assert_uint_eq(t.blocks, 8);
	ck_assert_uint_eq(t.nonfinite, 2);
	ck_assert_uint_eq(t.first_block, 5);
	ck_assert_uint_eq(t.first_scale, 0);
	ck_assert_uint_eq(t.first_value, 253);
	c->describe_scale(text, sizeof text, 253);
	ck_assert_str_eq(text, "0xfd, weight = code x 2^125: |code| >= 8 is Inf");
	c->describe_scale(text, sizeof text, 254);
	ck_assert_str_eq(text, "0xfe, weight = code x 2^126: |code| >= 4 is Inf");
	c->describe_scale(text, sizeof text, 255);
	ck_assert_str_eq(text, "0xff, weight = code x 2^127: |code| >= 2 is Inf");
	c->describe_scale(text, sizeof text, 1);
	ck_assert_str_eq(text, "0x01, weight = code x 2^-127");
	c->describe_scale(text, 8, 255); /* truncated, terminated */
	ck_assert_str_eq(text, "0xff, w");
	/* one non-zero scale byte is enough to end all_zero */
	memset(b, 0, sizeof b);
	b[34] = 1;
	t = (struct mp_scale_tally){.all_zero = true};
	c->check_scales(b, 4, &t);
	ck_assert(!t.all_zero);
	ck_assert_uint_eq(t.nonfinite, 0);
}
END_TEST

/* ---- the scan of MXFP4 roles ----------------------------------------------- */

#define MX_LAYERS 3
#define MX_EXPERTS 2
#define MX_OBJECTS (MX_LAYERS * MX_EXPERTS)
#define MX_DATA 4096 /* objects start here, page-aligned */

/* A file of objects and the mp_pack that would describe it. */
struct mxpack {
	char dir[PATH_MAX], file[PATH_MAX];
	struct mp_pack p;
	uint32_t layer_ids[MX_LAYERS];
	uint64_t offsets[MX_OBJECTS];
};

/*
 * Layers 1, 2, 3 of two experts, each object three roles of `blocks`
 * blocks of the given types (GGML ids), filled with demo blocks (finite,
 * non-zero scales), objects one after another from MX_DATA rounded up to
 * 4096 bytes.
 */
static void mx_build(struct mxpack *m, const int dtype[MP_ROLE_COUNT], uint64_t blocks)
{
	struct mp_model *mf = &m->p.m;
	uint64_t at = 0;
	int fd;

	memset(m, 0, sizeof *m);
	fx_mkdtemp(m->dir, sizeof m->dir);
	ck_assert_int_lt(snprintf(m->file, sizeof m->file, "%s/mx.pack", m->dir),
			 (int)sizeof m->file);
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const struct mp_quant_type *t = mp_ggml_type((uint32_t)dtype[r]);

		snprintf(mf->roles[r].dtype, sizeof mf->roles[r].dtype, "%s", t->name);
		mf->roles[r].dtype_id = dtype[r];
		mf->roles[r].expert_bytes = blocks * (t->block_bytes ? t->block_bytes : 1);
		mf->roles[r].role_offset = at;
		mf->roles[r].shape[0] = blocks * t->block_weights;
		mf->roles[r].shape[1] = 1;
		mf->roles[r].shape_len = 2;
		at += mf->roles[r].expert_bytes;
	}
	mf->object_bytes = at;
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		mf->order[r] = (enum mp_role)r;
	mf->num_experts = MX_EXPERTS;
	mf->layer_count = MX_LAYERS;
	mf->layer_ids = m->layer_ids;
	for (int l = 0; l < MX_LAYERS; l++)
		m->layer_ids[l] = (uint32_t)l + 1;
	m->p.object_count = MX_OBJECTS;
	m->p.object_offset = m->offsets;
	for (int o = 0; o < MX_OBJECTS; o++)
		m->offsets[o] = MX_DATA + (uint64_t)o * ((at + 4095) / 4096 * 4096);
	m->p.file.size = m->offsets[MX_OBJECTS - 1] + at;
	fd = open(m->file, O_RDWR | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)m->p.file.size), 0);
	m->p.file.fd = fd;
	m->p.file.path = m->file;
	for (int o = 0; o < MX_OBJECTS; o++)
		for (int r = 0; r < MP_ROLE_COUNT; r++) {
			const struct mp_quant_type *t = mp_ggml_type((uint32_t)dtype[r]);
			size_t n = (size_t)mf->roles[r].expert_bytes;
			unsigned char *buf = malloc(n);

			ck_assert_ptr_nonnull(buf);
			if (mp_quant_fill_demo(t, (uint64_t)(o * 3 + r), 0, buf, n) != 0)
				memset(buf, 0x11, n); /* a type without demo blocks */
			ck_assert_int_eq(pwrite(fd, buf, n,
						(off_t)(m->offsets[o] + mf->roles[r].role_offset)),
					 (ssize_t)n);
			free(buf);
		}
}

static void mx_free(struct mxpack *m)
{
	close(m->p.file.fd);
	fx_rmtree(m->dir);
}

/* Byte `at` of block `block` of (layer, expert, role). */
static uint64_t mx_at(const struct mxpack *m, uint32_t layer, uint64_t expert, enum mp_role r,
		      uint64_t block, unsigned at)
{
	const struct mp_role_info *ri = &m->p.m.roles[r];
	const struct mp_quant_type *t = mp_ggml_type((uint32_t)ri->dtype_id);

	return m->offsets[(layer - 1) * MX_EXPERTS + expert] + ri->role_offset +
	       block * t->block_bytes + at;
}

static void mx_put(const struct mxpack *m, uint64_t at, unsigned char byte)
{
	ck_assert_int_eq(pwrite(m->p.file.fd, &byte, 1, (off_t)at), 1);
}

/* Every scale byte of a role 0, codes as they were. */
static void mx_zero_scales(const struct mxpack *m, uint32_t layer, uint64_t expert,
			   enum mp_role r, uint64_t blocks)
{
	for (uint64_t b = 0; b < blocks; b++)
		mx_put(m, mx_at(m, layer, expert, r, b, MP_MXFP4_E), 0);
}

struct seen {
	struct mp_scan_problem p[32];
	char text[32][MP_MSG_MAX];
	size_t n;
};

static void collect(const struct mp_scan_problem *p, void *arg)
{
	struct seen *s = arg;

	if (s->n < 32) {
		s->p[s->n] = *p;
		mp_scan_problem_describe(s->text[s->n], sizeof s->text[s->n], p);
	}
	s->n++;
}

static void mx_scan(const struct mxpack *m, bool hash, struct seen *seen,
		    struct mp_scan_summary *sum)
{
	struct mp_scan_opts o = {.hash = hash};
	unsigned char d[MP_SHA256_LEN];
	struct mp_error err;

	memset(seen, 0, sizeof *seen);
	ck_assert_int_eq(mp_scan_pack(&m->p, &o, collect, seen, sum, d, &err), MP_OK);
	if (hash) {
		char hex[MP_SHA256_HEX], want[MP_SHA256_HEX];

		mp_sha256_hex(d, hex);
		fx_sha256_file(m->file, want);
		ck_assert_str_eq(hex, want);
	}
}

static const int all_mxfp4[MP_ROLE_COUNT] = {MP_GGML_MXFP4, MP_GGML_MXFP4, MP_GGML_MXFP4};

START_TEST(test_scan_clean)
{
	struct mxpack m;
	struct seen seen;
	struct mp_scan_summary sum;

	mx_build(&m, all_mxfp4, 100);
	for (int hash = 0; hash < 2; hash++) {
		mx_scan(&m, hash, &seen, &sum);
		ck_assert_uint_eq(seen.n, 0);
		ck_assert_uint_eq(sum.roles, MX_OBJECTS * 3);
		ck_assert_uint_eq(sum.experts, MX_OBJECTS);
		ck_assert_uint_eq(sum.blocks, MX_OBJECTS * 3 * 100);
		ck_assert_uint_eq(mp_scan_problem_total(&sum), 0);
	}
	mx_free(&m);
}
END_TEST

/*
 * Layer 1 expert 0 up: e = 252 at block 2 (finite: not reported), 253 at
 * block 3 and 255 at block 99.  Layer 1 expert 1 gate: every e 0, codes
 * untouched.  Layer 2 expert 0 down: zero bytes.  Layer 3 expert 1: every
 * e of all three roles 0.
 */
static void plant(const struct mxpack *m)
{
	unsigned char zero[100 * MP_MXFP4_BYTES] = {0};

	mx_put(m, mx_at(m, 1, 0, MP_ROLE_UP, 2, MP_MXFP4_E), 252);
	mx_put(m, mx_at(m, 1, 0, MP_ROLE_UP, 3, MP_MXFP4_E), 253);
	mx_put(m, mx_at(m, 1, 0, MP_ROLE_UP, 99, MP_MXFP4_E), 255);
	mx_zero_scales(m, 1, 1, MP_ROLE_GATE, 100);
	ck_assert_int_eq(pwrite(m->p.file.fd, zero, sizeof zero,
				(off_t)mx_at(m, 2, 0, MP_ROLE_DOWN, 0, 0)),
			 (ssize_t)sizeof zero);
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		mx_zero_scales(m, 3, 1, r, 100);
}

static void assert_planted(const struct seen *s, const struct mp_scan_summary *sum)
{
	static const char *want[] = {
		"layer 1 expert 0 up: non-finite scale: 2 in the role, first at block 3 "
		"(e = 0xfd, weight = code x 2^125: |code| >= 8 is Inf)",
		"layer 1 expert 1 gate: all-zero scales (every block of the role)",
		"layer 2 expert 0 down: all-zero role",
		"layer 3 expert 1 up: all-zero scales (every block of the role)",
		"layer 3 expert 1 gate: all-zero scales (every block of the role)",
		"layer 3 expert 1 down: all-zero scales (every block of the role)",
		"layer 3 expert 1: all-zero scales (every block of up, gate and down)",
	};
	char counts[256];

	ck_assert_uint_eq(s->n, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < s->n; i++)
		ck_assert_str_eq(s->text[i], want[i]);
	ck_assert_int_eq(s->p[0].kind, MP_SCAN_NONFINITE_SCALE);
	ck_assert_uint_eq(s->p[0].first_value, 253);
	ck_assert_str_eq(s->p[0].first_scale, "e");
	ck_assert_ptr_eq(s->p[0].codec, mp_codec(mxfp4()));
	ck_assert_int_eq(s->p[1].kind, MP_SCAN_ZERO_SCALES);
	ck_assert_int_eq(s->p[1].role, MP_ROLE_GATE);
	ck_assert_int_eq(s->p[6].role, MP_ROLE_COUNT);
	ck_assert_ptr_null(s->p[6].codec);
	ck_assert_uint_eq(sum->nonfinite_scales, 2);
	ck_assert_uint_eq(sum->nonfinite_roles, 1);
	ck_assert_uint_eq(sum->zero_roles, 1);
	ck_assert_uint_eq(sum->zero_scale_roles, 4);
	ck_assert_uint_eq(sum->zero_scale_experts, 1);
	ck_assert_uint_eq(mp_scan_problem_total(sum), 7);
	mp_scan_counts_describe(counts, sizeof counts, sum);
	ck_assert_str_eq(counts, "2 non-finite scales in 1 roles, 1 all-zero roles, 1 experts "
				 "with all-zero scales, 4 roles with all-zero scales");
}

START_TEST(test_scan_planted)
{
	struct mxpack m;
	struct seen seen;
	struct mp_scan_summary sum;

	mx_build(&m, all_mxfp4, 100);
	plant(&m);
	mx_scan(&m, false, &seen, &sum);
	assert_planted(&seen, &sum);
	/* the hashing pass reads everything in other slices, and agrees */
	mx_scan(&m, true, &seen, &sum);
	assert_planted(&seen, &sum);
	mx_free(&m);
}
END_TEST

/*
 * Roles of three types in one object: each is scanned as its own type
 * (an MXFP4 e of 0xfc..0xff is not an fp16 Inf, a Q2_K d of 0x7c00 is not
 * an MXFP4 scale), and only the MXFP4 role reports zero scales alone.
 */
START_TEST(test_scan_mixed_types)
{
	static const int mixed[MP_ROLE_COUNT] = {MP_GGML_Q2_K, MP_GGML_MXFP4, MP_GGML_Q3_K};
	struct mxpack m;
	struct seen seen;
	struct mp_scan_summary sum;

	mx_build(&m, mixed, 40);
	/* Q2_K up of layer 2 expert 1: dmin of block 7 = +Inf */
	mx_put(&m, mx_at(&m, 2, 1, MP_ROLE_UP, 7, MP_Q2K_DMIN), 0x00);
	mx_put(&m, mx_at(&m, 2, 1, MP_ROLE_UP, 7, MP_Q2K_DMIN + 1), 0x7c);
	/* MXFP4 gate of layer 2 expert 1: e = 254 in block 39 */
	mx_put(&m, mx_at(&m, 2, 1, MP_ROLE_GATE, 39, MP_MXFP4_E), 254);
	/* Q3_K down of layer 3 expert 0: every d zero (alone: no report) */
	for (uint64_t b = 0; b < 40; b++) {
		mx_put(&m, mx_at(&m, 3, 0, MP_ROLE_DOWN, b, MP_Q3K_D), 0);
		mx_put(&m, mx_at(&m, 3, 0, MP_ROLE_DOWN, b, MP_Q3K_D + 1), 0);
	}
	/* MXFP4 gate of layer 3 expert 1: every e zero */
	mx_zero_scales(&m, 3, 1, MP_ROLE_GATE, 40);
	for (int hash = 0; hash < 2; hash++) {
		mx_scan(&m, hash, &seen, &sum);
		ck_assert_uint_eq(seen.n, 3);
		ck_assert_str_eq(seen.text[0], "layer 2 expert 1 up: non-finite scale: 1 in the "
					       "role, first at block 7 (dmin = +Inf, 0x7c00)");
		ck_assert_str_eq(seen.text[1], "layer 2 expert 1 gate: non-finite scale: 1 in the "
					       "role, first at block 39 (e = 0xfe, weight = code "
					       "x 2^126: |code| >= 4 is Inf)");
		ck_assert_str_eq(seen.text[2],
				 "layer 3 expert 1 gate: all-zero scales (every block of the role)");
		ck_assert_uint_eq(sum.blocks, MX_OBJECTS * 3 * 40);
	}
	mx_free(&m);
}
END_TEST

/* A role of a type the table has no entry for: refused by name, unread. */
START_TEST(test_scan_undecodable_type)
{
	static const int q4[MP_ROLE_COUNT] = {MP_GGML_MXFP4, MP_GGML_MXFP4, MP_GGML_Q4_0};
	struct mxpack m;
	struct mp_scan_opts o = {0};
	struct mp_scan_summary sum;
	unsigned char d[MP_SHA256_LEN];
	struct mp_error err;

	mx_build(&m, q4, 8);
	ck_assert_int_eq(mp_scan_pack(&m.p, &o, NULL, NULL, &sum, d, &err), MP_E_ROLE_DTYPE);
	fx_assert_err(&err, MP_E_ROLE_DTYPE,
		      "quant type is unsupported: expert_pack.roles.down.dtype_id is Q4_0 (2), "
		      "which the payload scan cannot decode");
	ck_assert_uint_eq(sum.bytes_read, 0);
	m.p.m.roles[MP_ROLE_UP].dtype_id = 4000; /* not a GGML id at all */
	ck_assert_int_eq(mp_scan_pack(&m.p, &o, NULL, NULL, &sum, d, &err), MP_E_ROLE_DTYPE);
	fx_assert_err(&err, MP_E_ROLE_DTYPE, "roles.up.dtype_id is not a GGML type (4000)");
	m.p.m.roles[MP_ROLE_UP].dtype_id = -1;
	o.hash = true;
	ck_assert_int_eq(mp_scan_pack(&m.p, &o, NULL, NULL, &sum, d, &err), MP_E_ROLE_DTYPE);
	fx_assert_err(&err, MP_E_ROLE_DTYPE, "roles.up.dtype_id is not a GGML type (-1)");
	mx_free(&m);
}
END_TEST

/* A sparse pack of MXFP4 roles: holes, each said once as an all-zero role. */
START_TEST(test_scan_holes)
{
	struct mxpack m;
	struct seen seen;
	struct mp_scan_summary sum;

	mx_build(&m, all_mxfp4, 1000);
	ck_assert_int_eq(ftruncate(m.p.file.fd, 0), 0);
	ck_assert_int_eq(ftruncate(m.p.file.fd, (off_t)m.p.file.size), 0);
	mx_scan(&m, false, &seen, &sum);
	ck_assert_uint_eq(sum.zero_roles, MX_OBJECTS * 3);
	ck_assert_uint_eq(sum.zero_scale_roles, 0); /* said as zero roles */
	ck_assert_uint_eq(sum.zero_scale_experts, MX_OBJECTS);
	ck_assert_uint_eq(sum.blocks, MX_OBJECTS * 3 * 1000);
	ck_assert_uint_eq(seen.n, MX_OBJECTS * 4);
	mx_free(&m);
}
END_TEST

static Suite *mxfp4_suite(void)
{
	Suite *s = suite_create("mxfp4");
	TCase *tc = tcase_create("decode");
	TCase *sc = tcase_create("scan");

	tcase_add_test(tc, test_entry);
	tcase_add_test(tc, test_hand_blocks);
	tcase_add_test(tc, test_every_scale_and_code);
	tcase_add_test(tc, test_many_blocks);
	tcase_add_test(tc, test_fixture);
	tcase_add_test(tc, test_oracle_fresh);
	tcase_add_test(tc, test_scale_check);
	suite_add_tcase(s, tc);

	tcase_add_test(sc, test_scan_clean);
	tcase_add_test(sc, test_scan_planted);
	tcase_add_test(sc, test_scan_mixed_types);
	tcase_add_test(sc, test_scan_undecodable_type);
	tcase_add_test(sc, test_scan_holes);
	suite_add_tcase(s, sc);
	return s;
}

const struct fx_suite_def fx_suite = {.make = mxfp4_suite};
