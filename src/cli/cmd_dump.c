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
#include "payload/dequant.h"

static const char usage_text[] =
	"Usage: moepack dump [--f32 | --text | --stats] [--json] PACK LAYER EXPERT ROLE\n"
	"Validate PACK and dequantize one expert's role (up, gate or down) to\n"
	"float32 exactly as ggml's reference dequantizer does.  Rows follow the\n"
	"logical shape: its first number is the row length.\n"
	"\n"
	"      --f32                little-endian float32 on stdout, row after row\n"
	"      --text               one row per line, values as %.9g (round-trips)\n"
	"      --stats              shape, min, max, mean, standard deviation,\n"
	"                           absolute max, zero blocks, non-finite scales and\n"
	"                           values (the default)\n"
	"  -j, --json               --stats as one JSON object\n"
	"  -f, --force              --f32 even when standard output is a terminal\n"
	"  -m, --manifest=FILE      the manifest (default: PACK.manifest.json)\n"
	"  -h, --help               show this help and exit\n"
	"\n"
	"min, max, mean and standard deviation are over the finite values only.\n"
	"\n"
	"Exit status: 0 written, 1 invalid pack, 2 usage error or no such entry,\n"
	"3 read or write error.\n";

enum { OPT_F32 = 0x100, OPT_TEXT, OPT_STATS };

static const struct option long_options[] = {
	{"f32", no_argument, NULL, OPT_F32},
	{"text", no_argument, NULL, OPT_TEXT},
	{"stats", no_argument, NULL, OPT_STATS},
	{"json", no_argument, NULL, 'j'},
	{"force", no_argument, NULL, 'f'},
	{"manifest", required_argument, NULL, 'm'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

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
static void stats_add_block(struct stats *st, const float *v, const uint16_t *scales,
			    unsigned nscales)
{
	double sum = 0, mean, m2 = 0, delta, n;
	uint64_t k = 0;
	bool zero = true;

	for (unsigned i = 0; i < nscales; i++)
		if ((scales[i] & 0x7c00) == 0x7c00)
			st->nonfinite_scales++;
	for (int i = 0; i < MP_QK_K; i++) {
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
	st->values += MP_QK_K;
	st->blocks++;
	st->zero_blocks += zero;
	if (k == 0)
		return;
	mean = sum / (double)k;
	for (int i = 0; i < MP_QK_K; i++)
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
	bool json;
	struct mp_pack *pack;
	uint64_t layer_id, expert;
	enum mp_role role;
	int write_errno; /* of the write that failed: stdio forgets it */
};

static json_t *num_or_null(bool have, double v)
{
	return have ? json_real(v) : json_null();
}

static int print_stats(const struct dump *d, const struct stats *st, uint64_t row_len,
		       uint64_t rows)
{
	const struct mp_role_info *ri = &d->pack->m.roles[d->role];
	bool have = st->finite > 0;
	double sd = have ? sqrt(st->m2 / (double)st->finite) : 0;
	char shape[160];
	size_t used = 0;

	for (unsigned i = 0; i < ri->shape_len && used < sizeof shape; i++)
		used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%" PRIu64,
					 i ? ", " : "", ri->shape[i]);
	if (d->json) {
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
		return cli_print_json(o, JSON_PRESERVE_ORDER | JSON_COMPACT |
					     JSON_REAL_PRECISION(17)) ? CLI_EXIT_IO : CLI_EXIT_OK;
	}
	printf("layer %" PRIu64 " expert %" PRIu64 " %s: %s, logical shape [%s], %" PRIu64
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

static int parse_args(int argc, char **argv, struct dump *d, struct mp_open_opts *open,
		      bool *force)
{
	const char *cmd = argv[0];
	int c, modes = 0;

	while ((c = cli_getopt(cmd, argc, argv, "jfm:h", long_options)) != -1) {
		switch (c) {
		case OPT_F32:
		case OPT_TEXT:
		case OPT_STATS:
			d->mode = c == OPT_F32 ? MODE_F32 : c == OPT_TEXT ? MODE_TEXT : MODE_STATS;
			modes++;
			break;
		case 'j':
			d->json = true;
			break;
		case 'f':
			*force = true;
			break;
		case 'm':
			open->manifest_path = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return -1;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (modes > 1)
		return cli_usage_error(cmd, "--f32, --text and --stats exclude each other");
	if (d->json && d->mode != MODE_STATS)
		return cli_usage_error(cmd, "--json goes with --stats only");
	if (argc - optind < 4)
		return cli_usage_error(cmd, "missing %s",
				       (const char *[]){"PACK", "LAYER", "EXPERT",
							"ROLE"}[argc - optind]);
	if (argc - optind > 4)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 4]);
	if ((c = cli_role_order(cmd, argv + optind, false)) >= 0)
		return c;
	d->pack_path = argv[optind];
	d->role = mp_role_from_name(argv[optind + 3]);
	if (d->role == MP_ROLE_COUNT)
		return cli_usage_error(cmd, "ROLE: '%s' is not up, gate or down",
				       argv[optind + 3]);
	if (d->mode == MODE_F32 && !*force && isatty(STDOUT_FILENO))
		return cli_usage_error(cmd, "refusing to write binary data to a terminal "
				       "(redirect it, or use --force)");
	return CLI_EXIT_OK;
}

static int read_blocks(const struct dump *d, unsigned char *buf, size_t n, uint64_t pos)
{
	size_t done;
	int e = mp_pread_all(d->pack->fd, buf, n, pos, &done);

	if (e) {
		fprintf(stderr, "moepack: %s: cannot read pack at offset %" PRIu64 ": %s\n",
			d->pack_path, pos + done,
			e > 0 ? strerror(e)
			      : "unexpected end of file (the pack changed after validation?)");
		return CLI_EXIT_IO;
	}
	return CLI_EXIT_OK;
}

/* Decode the role step by step and hand each step to the mode's output. */
static int run(struct dump *d)
{
	const struct mp_role_info *ri = &d->pack->m.roles[d->role];
	const struct mp_quant_type *qt = mp_quant_by_id(ri->dtype_id);
	uint64_t offset, nbytes, row_len, rows, blocks, col = 0;
	unsigned char *raw = malloc((size_t)STEP_BLOCKS * MP_Q3K_BYTES);
	float *v = malloc(sizeof(float) * STEP_BLOCKS * MP_QK_K);
	unsigned char *out = malloc(sizeof(float) * STEP_BLOCKS * MP_QK_K);
	struct stats st = {0};
	int rc = CLI_EXIT_OK;

	mp_pack_role_range(d->pack, mp_pack_object(d->pack, mp_pack_layer_index(d->pack,
									     d->layer_id),
						      d->expert),
			   d->role, &offset, &nbytes);
	mp_role_rows(ri, &row_len, &rows);
	blocks = nbytes / qt->block_bytes;
	if (!raw || !v || !out || !mp_dequant_supported(qt)) {
		fprintf(stderr, "moepack %s: out of memory\n", d->cmd);
		rc = CLI_EXIT_IO;
		goto out;
	}
	for (uint64_t b = 0; b < blocks && rc == CLI_EXIT_OK;) {
		size_t n = blocks - b < STEP_BLOCKS ? (size_t)(blocks - b) : STEP_BLOCKS;
		size_t nv = n * MP_QK_K;

		if ((rc = read_blocks(d, raw, n * qt->block_bytes, offset + b * qt->block_bytes)))
			break;
		mp_dequant(qt, raw, v, n);
		switch (d->mode) {
		case MODE_STATS:
			for (size_t i = 0; i < n; i++) {
				uint16_t sc[2];
				unsigned ns;

				mp_block_scales(qt, raw + i * qt->block_bytes, sc, &ns);
				stats_add_block(&st, v + i * MP_QK_K, sc, ns);
			}
			break;
		case MODE_F32:
			mp_f32_encode(out, v, nv);
			if (fwrite(out, 4, nv, stdout) != nv) {
				d->write_errno = errno;
				rc = CLI_EXIT_IO;
			}
			break;
		case MODE_TEXT:
			/* a row can end inside a step: the row length is a
			 * multiple of 256, not of the step */
			for (size_t i = 0; i < nv; i++) {
				if (printf("%s%.9g", col ? " " : "", (double)v[i]) < 0) {
					d->write_errno = errno;
					rc = CLI_EXIT_IO;
					break;
				}
				if (++col == row_len) {
					putchar('\n');
					col = 0;
				}
			}
			break;
		}
		b += n;
	}
	if (rc == CLI_EXIT_OK && d->mode == MODE_STATS)
		rc = print_stats(d, &st, row_len, rows);
out:
	free(raw);
	free(v);
	free(out);
	return rc;
}

int cmd_dump(int argc, char **argv)
{
	struct dump d = {.cmd = argv[0]};
	struct mp_open_opts open = {0};
	struct mp_error err = {0};
	uint64_t layer_index;
	bool force = false;
	int rc = parse_args(argc, argv, &d, &open, &force);

	if (rc)
		return rc < 0 ? cli_finish_stdout(d.cmd) : rc;
	rc = cli_open_pack(d.pack_path, &open, true, &d.pack);
	if (rc)
		return rc;
	if (cli_layer_arg(d.pack, argv[optind + 1], &d.layer_id, &layer_index, &err) ||
	    cli_expert_arg(d.pack, argv[optind + 2], &d.expert, &err)) {
		rc = cli_report(d.pack_path, &err);
		mp_pack_close(d.pack);
		return rc;
	}
	rc = run(&d);
	mp_pack_close(d.pack);
	if (cli_finish_stdout_errno(d.cmd, d.write_errno) && !rc)
		rc = CLI_EXIT_IO;
	return rc;
}
