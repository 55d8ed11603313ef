/* cmd_check_gguf.c - `moepack check-gguf`: GGUF files checked before a loader
 * spends hours finding their faults (each format's half: cli/kimi/checkgguf.c,
 * cli/expertpack/checkgguf.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/expertpack/checkgguf.h"
#include "cli/formats.h"
#include "cli/kimi/checkgguf.h"

struct check_args {
	bool set, json, kimi;
	const char *format; /* NULL: expertpack-v1 for MXFP4 routed experts */
	const char *config; /* expertpack-v1: the model's config.json */
};

enum { OPT_ANY_GEOMETRY = CLI_LONG_ONLY, OPT_SET, OPT_FORMAT };

const struct cli_option cli_check_gguf_options[] = {
	CLI_OPT_TRUE("set", OPT_SET, "check an unsplit FILE.gguf as a set of one", struct check_args,
		     set),
	CLI_OPT_FALSE("any-geometry", OPT_ANY_GEOMETRY, "any expert count and sizes, not "
		      "Kimi-K3's", struct check_args, kimi),
	CLI_OPT_TEXT("format", OPT_FORMAT, "FORMAT", "kimi or expertpack-v1 (default: expertpack-v1\n"
		     "for a file whose routed experts are MXFP4, else kimi)", struct check_args,
		     format),
	CLI_OPT_TEXT("config", 'c', "FILE", "expertpack-v1: the model's config.json (default:\n"
		     "layers and experts as the tensors say)", struct check_args, config),
	CLI_OPT_JSON("print one JSON object per file, one per line", struct check_args, json),
	{NULL},
};

/* One operand: its status, or -1 when out of memory. */
static int check_operand(const struct check_args *a, struct cli_gguf_sets *s, const char *path)
{
	bool ep = false;

	if (a->format)
		cli_format_parse(a->format, &ep);
	else
		ep = cli_check_gguf_ep_wants(path);
	if (ep)
		return cli_check_gguf_ep(path, a->config, a->json);
	return cli_check_gguf_kimi(s, path, a->set, a->kimi, a->json);
}

int cli_check_gguf_run(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct check_args a = {.kimi = true};
	struct cli_operands ops;
	struct cli_gguf_sets seen = {0};
	enum cli_parse p = cli_parse(&cli_check_gguf_command, argc, argv, &a, &ops);
	int status = CLI_EXIT_OK;

	if (p != CLI_RUN)
		return cli_parse_status(p, cmd);
	if (a.format && cli_format_parse(a.format, &(bool){false})) {
		cli_usage_error(cmd, "--format: %s is not kimi or expertpack-v1", a.format);
		return cli_parse_status(CLI_USAGE_ERROR, cmd);
	}
	seen.keys = calloc((size_t)ops.n, sizeof *seen.keys);
	if (!seen.keys) {
		fprintf(stderr, "moepack %s: out of memory\n", cmd);
		return CLI_EXIT_IO;
	}
	for (int i = 0; i < ops.n; i++) {
		int one = check_operand(&a, &seen, ops.v[i]);

		if (one < 0) {
			status = CLI_EXIT_IO;
			fprintf(stderr, "moepack %s: out of memory\n", cmd);
			break;
		}
		if (one > status)
			status = one;
	}
	for (size_t k = 0; k < seen.n; k++)
		cli_gguf_set_key_free(&seen.keys[k]);
	free(seen.keys);
	return cli_worst(status, cli_finish_stdout(cmd));
}
