/* cmd_mkdemo.c - `moepack mkdemo`: write a valid demo pack for tests and benchmarks. */
#include "config.h"

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/formats.h"

enum {
	OPT_HIDDEN = CLI_LONG_ONLY,
	OPT_INTER,
	OPT_GAP,
	OPT_SPARSE,
	OPT_FULL_SHA256,
	OPT_GGUF,
	OPT_SEED,
	OPT_FORMAT,
	OPT_LAYERS,
	OPT_TOP_K,
};

/* 0 means "default" to mp_demo_resolve, so an explicit 0 is refused where
 * it would silently mean that. */
#define A struct cli_mkdemo_args
const struct cli_option cli_mkdemo_options[] = {
	CLI_OPT_TEXT("out", 'o', "PACK", "the pack to write (required)", A, out),
	CLI_OPT_MANIFEST(A, manifest),
	CLI_OPT_TEXT("format", OPT_FORMAT, "FORMAT", "kimi (the default) or expertpack-v1", A,
		     format),
	CLI_OPT_U64("layers", OPT_LAYERS, "N", "expertpack-v1: MoE layers (default 2; sparse 43)",
		    A, layers, 0, 1, UINT64_MAX),
	CLI_OPT_U64("top-k", OPT_TOP_K, "N", "expertpack-v1: experts per token (default 2;\n"
		    "sparse 6)", A, top_k, 0, 1, UINT64_MAX),
	CLI_OPT_TEXT("gguf", OPT_GGUF, "DIR", "write a small GGUF checkpoint into DIR instead",
		     A, gguf),
	CLI_OPT_U64("experts", 'e', "N", "experts per layer (default 4)", A, experts, 0, 1,
		    UINT64_MAX),
	CLI_OPT_U64("hidden", OPT_HIDDEN, "N", "hidden size, a multiple of 256 (default: the\n"
		    "smallest that keeps every role aligned)", A, hidden, 0, 1, UINT64_MAX),
	CLI_OPT_U64("inter", OPT_INTER, "N",
		    "expert width, a multiple of 256 (default: likewise)", A, inter, 0, 1,
		    UINT64_MAX),
	CLI_OPT_U64("alignment", 'a', "N", "payload alignment, a power of two (default 4096)",
		    A, alignment, CLI_NUM_SUFFIX, 1, UINT64_MAX),
	CLI_OPT_U64("gap", OPT_GAP, "N", "padding after each object, rounded up to the\n"
		    "alignment (default 0)", A, gap, CLI_NUM_SUFFIX, 0, UINT64_MAX),
	CLI_OPT_U64("seed", OPT_SEED, "N", "payload seed (default 0)", A, seed, 0, 0, UINT64_MAX),
	CLI_OPT_TRUE("sparse", OPT_SPARSE, "leave the payloads as a hole (fast, any size)", A,
		     sparse),
	CLI_OPT_TRUE("full-sha256", OPT_FULL_SHA256,
		     "record expert_pack.sha256 of the whole file", A, full_sha256),
	CLI_OPT_TRUE("force", 'f', "replace an existing PACK", A, force),
	CLI_OPT_QUIET("print nothing on success", A, quiet),
	{NULL},
};
#undef A

/* --gguf and --out each need what goes with them only. */
static enum cli_parse check_target(const char *cmd, const struct cli_mkdemo_args *a)
{
	if (a->gguf && !*a->gguf)
		cli_usage_error(cmd, "--gguf: empty directory name");
	else if (a->gguf && (a->out || a->manifest || a->sparse || a->full_sha256 ||
			     a->alignment || a->gap))
		cli_usage_error(cmd, "--gguf writes a checkpoint, not a pack: no --out, "
				"--manifest, --alignment, --gap, --sparse or --full-sha256");
	else if (!a->gguf && (!a->out || !*a->out))
		cli_usage_error(cmd, "missing --out PACK (or --gguf DIR)");
	else
		return CLI_RUN;
	return CLI_USAGE_ERROR;
}

int cli_mkdemo_run(int argc, char **argv)
{
	struct cli_mkdemo_args a = {.argc = argc, .argv = argv};
	struct cli_operands ops;
	enum cli_parse p = cli_parse(&cli_mkdemo_command, argc, argv, &a, &ops);
	const struct cli_format *f = &cli_format_kimi;

	if (p == CLI_RUN)
		p = check_target(argv[0], &a);
	if (p != CLI_RUN)
		return cli_parse_status(p, argv[0]);
	if (a.format && !(f = cli_format_named(argv[0], a.format)))
		return cli_parse_status(CLI_USAGE_ERROR, argv[0]);
	return f->mkdemo(argv[0], &a);
}
