/* cmd_check_gguf.c - `moepack check-gguf`: GGUF files checked before a loader
 * spends hours finding their faults (each format's half: cli/kimi/checkgguf.c,
 * cli/expertpack/checkgguf.c). */
#include "config.h"

#include <stdio.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/formats.h"

enum { OPT_ANY_GEOMETRY = CLI_LONG_ONLY, OPT_SET, OPT_FORMAT };

#define A struct cli_check_gguf_args
const struct cli_option cli_check_gguf_options[] = {
	CLI_OPT_TRUE("set", OPT_SET, "check an unsplit FILE.gguf as a set of one", A, set),
	CLI_OPT_TRUE("any-geometry", OPT_ANY_GEOMETRY, "any expert count and sizes, not "
		     "Kimi-K3's", A, any_geometry),
	CLI_OPT_TEXT("format", OPT_FORMAT, "FORMAT", "kimi or expertpack-v1 (default: expertpack-v1\n"
		     "for a file whose routed experts are MXFP4, else kimi)", A, format),
	CLI_OPT_TEXT("config", 'c', "FILE", "expertpack-v1: the model's config.json (default:\n"
		     "layers and experts as the tensors say)", A, config),
	CLI_OPT_JSON("print one JSON object per file, one per line", A, json),
	{NULL},
};
#undef A

int cli_check_gguf_run(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct cli_check_gguf_args a = {0};
	struct cli_operands ops;
	enum cli_parse p = cli_parse(&cli_check_gguf_command, argc, argv, &a, &ops);
	int status;

	if (p != CLI_RUN)
		return cli_parse_status(p, cmd);
	if (a.format && !cli_format_named(cmd, a.format))
		return cli_parse_status(CLI_USAGE_ERROR, cmd);
	status = cli_format_check_ggufs(ops.n, ops.v, &a);
	if (status < 0) {
		fprintf(stderr, "moepack %s: out of memory\n", cmd);
		status = CLI_EXIT_IO;
	}
	return cli_worst(status, cli_finish_stdout(cmd));
}
