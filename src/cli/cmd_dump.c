/* cmd_dump.c - `moepack dump`: one expert's role dequantized to float32. */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "payload/dequant.h"

enum mode { MODE_STATS, MODE_F32, MODE_TEXT };

/* Blocks decoded per step: bounded memory (1 MiB of floats) whatever the
 * role's size, and few enough reads. */
#define STEP_BLOCKS 1024

struct stats {
	uint64_t values, finite, nan, inf;
	uint64_t blocks, zero_blocks, nonfinite_scales;
	double min, max, abs_max;
	double mean, m2; /* running mean and sum of squared deviations */
};

/*
 * Per block, a two-pass mean and M2 in double, merged into the running
 * totals with Chan et al.'s pairwise update: no catastrophic cancellation,
 * even for 11 million values of one sign.
 */
static void stats_add_block(struct stats *st, const float *v, unsigned nweights)
{
	double sum = 0, mean, m2 = 0, delta, n;
	uint64_t k = 0;
	bool zero = true;

	for (unsigned i = 0; i < nweights; i++) {
		double x = v[i];

		if (v[i] != 0.0f)
			zero = false;
		if (isnan(v[i])) {
			st->nan++;
			continue;
		}
		if (isinf(v[i])) {
			st->inf++;
			continue;
		}
		if (st->finite + k == 0 || x < st->min)
			st->min = x;
		if (st->finite + k == 0 || x > st->max)
			st->max = x;
		if (fabs(x) > st->abs_max)
			st->abs_max = fabs(x);
		sum += x;
		k++;
	}
	st->values += nweights;
	st->blocks++;
	st->zero_blocks += zero;
	if (k == 0)
		return;
	mean = sum / (double)k;
	for (unsigned i = 0; i < nweights; i++)
		if (isfinite(v[i]))
			m2 += ((double)v[i] - mean) * ((double)v[i] - mean);
	n = (double)st->finite + (double)k;
	delta = mean - st->mean;
	st->mean += delta * (double)k / n;
	st->m2 += m2 + delta * delta * (double)st->finite * (double)k / n;
	st->finite += k;
}

struct dump {
	const char *cmd, *pack_path;
	enum mode mode;
	int modes;       /* --f32, --text and --stats given */
	bool json, force;
	struct mp_open_opts open;
	struct mp_pack *pack;
	uint64_t layer_id, expert;
	enum mp_role role;
	struct mp_role_info ri; /* that expert's role, its own shape */
	int write_errno; /* of the write that failed: stdio forgets it */
};

static json_t *num_or_null(bool have, double v)
{
	return have ? json_real(v) : json_null();
}

static int print_stats_json(const struct dump *d, const struct stats *st, uint64_t row_len,
			    uint64_t rows)
{
	const struct mp_role_info *ri = &d->ri;
	bool have = st->finite > 0;
	double sd = have ? sqrt(st->m2 / (double)st->finite) : 0;
	json_t *o = json_object(), *sh = json_array();

	for (unsigned i = 0; i < ri->shape_len; i++)
		json_array_append_new(sh, json_integer((json_int_t)ri->shape[i]));
	json_object_set_new(o, "pack", cli_json_text(d->pack_path));
	json_object_set_new(o, "layer", json_integer((json_int_t)d->layer_id));
	json_object_set_new(o, "expert", json_integer((json_int_t)d->expert));
	json_object_set_new(o, "role", json_string(mp_role_name(d->role)));
	json_object_set_new(o, "dtype", json_string(ri->dtype));
	json_object_set_new(o, "logical_shape", sh);
	json_object_set_new(o, "row_length", json_integer((json_int_t)row_len));
	json_object_set_new(o, "rows", json_integer((json_int_t)rows));
	json_object_set_new(o, "values", json_integer((json_int_t)st->values));
	json_object_set_new(o, "finite_values", json_integer((json_int_t)st->finite));
	json_object_set_new(o, "min", num_or_null(have, st->min));
	json_object_set_new(o, "max", num_or_null(have, st->max));
	json_object_set_new(o, "mean", num_or_null(have, st->mean));
	json_object_set_new(o, "std", num_or_null(have, sd));
	json_object_set_new(o, "abs_max", num_or_null(have, st->abs_max));
	json_object_set_new(o, "blocks", json_integer((json_int_t)st->blocks));
	json_object_set_new(o, "zero_blocks", json_integer((json_int_t)st->zero_blocks));
	json_object_set_new(o, "nonfinite_scales",
			    json_integer((json_int_t)st->nonfinite_scales));
	json_object_set_new(o, "nan_values", json_integer((json_int_t)st->nan));
	json_object_set_new(o, "inf_values", json_integer((json_int_t)st->inf));
	return cli_print_json(o, JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_REAL_PRECISION(17))
		       ? CLI_EXIT_IO : CLI_EXIT_OK;
}

static int print_stats(const struct dump *d, const struct stats *st, uint64_t row_len,
		       uint64_t rows)
{
	const struct mp_role_info *ri = &d->ri;
	bool have = st->finite > 0;
	double sd = have ? sqrt(st->m2 / (double)st->finite) : 0;
	char shape[MP_SHAPE_TEXT_MAX];

	if (d->json)
		return print_stats_json(d, st, row_len, rows);
	mp_shape_text(ri, shape, sizeof shape);
	printf("layer %" PRIu64 " expert %" PRIu64 " %s: %s, logical shape %s, %" PRIu64
	       " rows of %" PRIu64 "\n",
	       d->layer_id, d->expert, mp_role_name(d->role), ri->dtype, shape, rows, row_len);
	printf("%-18s %" PRIu64 " (%" PRIu64 " finite)\n", "values", st->values, st->finite);
	if (have) {
		printf("%-18s %.9g\n", "min", st->min);
		printf("%-18s %.9g\n", "max", st->max);
		printf("%-18s %.9g\n", "mean", st->mean);
		printf("%-18s %.9g\n", "std", sd);
		printf("%-18s %.9g\n", "abs max", st->abs_max);
	} else {
		printf("%-18s none (no finite values)\n", "min/max/mean/std");
	}
	printf("%-18s %" PRIu64 " of %" PRIu64 "\n", "zero blocks", st->zero_blocks,
	       st->blocks);
	printf("%-18s %" PRIu64 "\n", "non-finite scales", st->nonfinite_scales);
	printf("%-18s %" PRIu64 " (%" PRIu64 " NaN, %" PRIu64 " Inf)\n", "non-finite values",
	       st->nan + st->inf, st->nan, st->inf);
	return CLI_EXIT_OK;
}

enum { OPT_F32 = CLI_LONG_ONLY, OPT_TEXT, OPT_STATS };

const struct cli_option cli_dump_options[] = {
	CLI_OPT_CALL("f32", OPT_F32, NULL, "little-endian float32 on stdout, row after row"),
	CLI_OPT_CALL("text", OPT_TEXT, NULL, "one row per line, values as %.9g (round-trips)"),
	CLI_OPT_CALL("stats", OPT_STATS, NULL, "shape, min, max, mean, standard deviation,\n"
		     "absolute max, zero blocks, non-finite scales and\n"
		     "values (the default)"),
	CLI_OPT_JSON("--stats as one JSON object", struct dump, json),
	CLI_OPT_TRUE("force", 'f', "--f32 even when standard output is a terminal", struct dump,
		     force),
	CLI_OPT_MANIFEST(struct dump, open.manifest_path),
	{NULL},
};

/* --f32, --text, --stats: the mode. */
enum cli_parse cli_dump_on_option(void *args, int key, const char *arg,
				  const char *cmd)
{
	struct dump *d = args;

	(void)arg;
	(void)cmd;
	d->mode = key == OPT_F32 ? MODE_F32 : key == OPT_TEXT ? MODE_TEXT : MODE_STATS;
	d->modes++;
	return CLI_RUN;
}

/* The modes exclude each other, and --json goes with --stats: checked
 * before the operands are counted. */
static enum cli_parse check_modes(const struct dump *d)
{
	if (d->modes > 1)
		cli_usage_error(d->cmd, "--f32, --text and --stats exclude each other");
	else if (d->json && d->mode != MODE_STATS)
		cli_usage_error(d->cmd, "--json goes with --stats only");
	else
		return CLI_RUN;
	return CLI_USAGE_ERROR;
}

static enum cli_parse parse_args(int argc, char **argv, struct dump *d,
				 struct cli_operands *ops)
{
	enum cli_parse p = cli_parse_options(&cli_dump_command, argc, argv, d);

	if (p == CLI_RUN)
		p = check_modes(d);
	if (p == CLI_RUN)
		p = cli_parse_operands(&cli_dump_command, argc, argv, ops);
	if (p != CLI_RUN)
		return p;
	if (cli_role_order(d->cmd, ops->v, false) >= 0)
		return CLI_USAGE_ERROR;
	d->pack_path = ops->v[0];
	d->role = mp_role_from_name(ops->v[3]);
	if (d->role == MP_ROLE_COUNT) {
		cli_usage_error(d->cmd, "ROLE: '%s' is not up, gate or down", ops->v[3]);
		return CLI_USAGE_ERROR;
	}
	return cli_refuse_terminal(d->cmd, d->mode != MODE_F32 || d->force);
}

static int read_blocks(const struct dump *d, unsigned char *buf, size_t n, uint64_t pos)
{
	size_t done;
	int e = mp_pread_all(d->pack->file.fd, buf, n, pos, &done);

	if (e) {
		fprintf(stderr, "moepack: %s: cannot read pack at offset %" PRIu64 ": %s\n",
			d->pack_path, pos + done,
			e > 0 ? strerror(e)
			      : "unexpected end of file (the pack changed after validation?)");
		return CLI_EXIT_IO;
	}
	return CLI_EXIT_OK;
}

/* One step's decoded blocks, and where the output stands. */
struct step {
	const struct mp_quant_type *qt;
	unsigned char *raw, *out;
	float *v;
	size_t n;           /* blocks in this step */
	struct stats st;
	uint64_t row_len, col;
};

/* The type's own judgement of its scales (an fp16 Inf or NaN for the
 * k-quants, an E8M0 byte that overflows a weight for MXFP4), as the
 * payload scan counts them. */
static void stats_step(struct step *s)
{
	struct mp_scale_tally t = {.all_zero = true};

	mp_codec(s->qt)->check_scales(s->raw, s->n, &t);
	s->st.nonfinite_scales += t.nonfinite;
	for (size_t i = 0; i < s->n; i++)
		stats_add_block(&s->st, s->v + i * s->qt->block_weights, s->qt->block_weights);
}

static int f32_step(struct dump *d, struct step *s)
{
	size_t nv = s->n * s->qt->block_weights;

	mp_f32_encode(s->out, s->v, nv);
	if (fwrite(s->out, 4, nv, stdout) == nv)
		return CLI_EXIT_OK;
	d->write_errno = errno;
	return CLI_EXIT_IO;
}

/* A row can end inside a step: the row length is a multiple of the block,
 * not of the step. */
static int text_step(struct dump *d, struct step *s)
{
	for (size_t i = 0; i < s->n * s->qt->block_weights; i++) {
		if (printf("%s%.9g", s->col ? " " : "", (double)s->v[i]) < 0) {
			d->write_errno = errno;
			return CLI_EXIT_IO;
		}
		if (++s->col == s->row_len) {
			putchar('\n');
			s->col = 0;
		}
	}
	return CLI_EXIT_OK;
}

static int emit_step(struct dump *d, struct step *s)
{
	switch (d->mode) {
	case MODE_STATS:
		stats_step(s);
		break;
	case MODE_F32:
		return f32_step(d, s);
	case MODE_TEXT:
		return text_step(d, s);
	}
	return CLI_EXIT_OK;
}

/* Decode the role step by step and hand each step to the mode's output. */
static int decode(struct dump *d)
{
	long layer_index = mp_pack_layer_index(d->pack, d->layer_id);
	uint64_t offset, nbytes, rows, blocks,
		object = mp_pack_object(d->pack, (uint64_t)layer_index, d->expert);
	struct step s;
	int rc = CLI_EXIT_OK;

	/* rows follow this expert's own shape, which another's may not share */
	mp_pack_role_info(d->pack, object, d->role, &d->ri);
	s = (struct step){.qt = mp_quant_by_id(d->ri.dtype_id)};
	s.raw = malloc((size_t)STEP_BLOCKS * MP_CODEC_MAX_BLOCK_BYTES);
	s.v = malloc(sizeof(float) * STEP_BLOCKS * MP_CODEC_MAX_BLOCK_WEIGHTS);
	s.out = malloc(sizeof(float) * STEP_BLOCKS * MP_CODEC_MAX_BLOCK_WEIGHTS);
	mp_pack_role_range(d->pack, object, d->role, &offset, &nbytes);
	mp_role_rows(&d->ri, &s.row_len, &rows);
	blocks = nbytes / s.qt->block_bytes;
	if (!s.raw || !s.v || !s.out || !mp_dequant_supported(s.qt)) {
		fprintf(stderr, "moepack %s: out of memory\n", d->cmd);
		rc = CLI_EXIT_IO;
	}
	for (uint64_t b = 0; b < blocks && rc == CLI_EXIT_OK; b += s.n) {
		s.n = blocks - b < STEP_BLOCKS ? (size_t)(blocks - b) : STEP_BLOCKS;
		rc = read_blocks(d, s.raw, s.n * s.qt->block_bytes,
				 offset + b * s.qt->block_bytes);
		if (rc)
			break;
		mp_dequant(s.qt, s.raw, s.v, s.n);
		rc = emit_step(d, &s);
	}
	if (rc == CLI_EXIT_OK && d->mode == MODE_STATS)
		rc = print_stats(d, &s.st, s.row_len, rows);
	free(s.raw);
	free(s.v);
	free(s.out);
	return rc;
}

int cli_dump_run(int argc, char **argv)
{
	struct dump d = {.cmd = argv[0]};
	struct cli_operands ops;
	struct mp_error err = {0};
	enum cli_parse p = parse_args(argc, argv, &d, &ops);
	int rc;

	if (p != CLI_RUN)
		return cli_parse_status(p, d.cmd);
	rc = cli_open_pack(d.pack_path, &d.open, true, &d.pack);
	if (rc)
		return rc;
	if (cli_entry_args(d.pack, ops.v[1], ops.v[2], &d.layer_id, &d.expert, &err)) {
		rc = cli_report(d.pack_path, &err);
		mp_pack_close(d.pack);
		return rc;
	}
	rc = decode(&d);
	mp_pack_close(d.pack);
	if (cli_finish_stdout_errno(d.cmd, d.write_errno) && !rc)
		rc = CLI_EXIT_IO;
	return rc;
}
