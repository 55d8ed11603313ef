/* cmd_build.c - `moepack build`: a pack and manifest from the GGUF checkpoint users
 * download, checked end to end. */
#include "config.h"

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/formats.h"
#include "writer/builder.h"

enum {
	OPT_FULL_SHA256 = CLI_LONG_ONLY,
	OPT_SAMPLES,
	OPT_COMPARE_ALL,
	OPT_ANY_GEOMETRY,
	OPT_CHECK_ONLY,
	OPT_RESUME,
	OPT_MARGIN,
	OPT_FORMAT,
	OPT_MODEL_REF,
};

#define A struct cli_build_args
const struct cli_option cli_build_options[] = {
	CLI_OPT_TEXT("gguf", 'g', "SHARD", "any shard of the checkpoint (required)", A, gguf),
	CLI_OPT_TEXT("format", OPT_FORMAT, "FORMAT", "kimi or expertpack-v1 (default: expertpack-v1\n"
		     "when the GGUF's routed experts are MXFP4, else kimi)", A, format),
	CLI_OPT_TEXT("model-ref", OPT_MODEL_REF, "REF", "expertpack-v1: the manifest's model.ref\n"
		     "(default deepseek-v4-flash)", A, model_ref),
	CLI_OPT_TEXT("config", 'c', "FILE", "the model's HF config.json (required)", A,
		     config_path),
	CLI_OPT_TEXT("out", 'o', "PACK", "the pack (default: NAME.expert-major.pack\n"
		     "beside the shards; expertpack-v1: DeepSeek-V4-Flash.expert-pack\n"
		     "beside the GGUF)", A, out),
	CLI_OPT_MANIFEST(A, manifest),
	CLI_OPT_TEXT("tokenizer-dir", 't', "DIR", "record the tokenizer files of DIR", A,
		     tokenizer_dir),
	CLI_OPT_TRUE("full-sha256", OPT_FULL_SHA256,
		     "record expert_pack.sha256, hashed while copying", A, full_sha256),
	CLI_OPT_CALL("samples", OPT_SAMPLES, "N",
		     "compare N evenly spaced entries (default 6)"),
	CLI_OPT_TRUE("compare-all", OPT_COMPARE_ALL, "compare every payload byte", A,
		     compare_all),
	CLI_OPT_TRUE("any-geometry", OPT_ANY_GEOMETRY,
		     "any expert count and role sizes, not Kimi-K3's", A, any_geometry),
	CLI_OPT_TRUE("check-only", OPT_CHECK_ONLY,
		     "judge the existing pack against the shards", A, check_only),
	CLI_OPT_TRUE("resume", OPT_RESUME, "continue an interrupted build's PACK.partial", A,
		     resume),
	CLI_OPT_U64("margin", OPT_MARGIN, "SIZE",
		    "free space to keep beyond the pack (default 2G)", A, margin,
		    CLI_NUM_SUFFIX, 0, UINT64_MAX),
	CLI_OPT_TRUE("force", 'f', "replace an existing file at PACK, the manifest or\n"
		     "PACK.seal that is not a pack, manifest or seal", A, force),
	CLI_OPT_JSON("print the summary as one JSON object", A, json),
	CLI_OPT_QUIET("print nothing on success", A, quiet),
	{NULL},
};
#undef A

/* --samples N: also remembered as given, for --compare-all. */
enum cli_parse cli_build_on_option(void *args, int key, const char *arg,
				   const char *cmd)
{
	struct cli_build_args *a = args;
	struct mp_error err;

	(void)key;
	if (cli_parse_u64(arg, "--samples", 0, 0, UINT64_MAX, &a->samples, &err)) {
		cli_usage_error(cmd, "%s", err.msg);
		return CLI_USAGE_ERROR;
	}
	a->samples_given = true;
	return CLI_RUN;
}

/* What is required, and what excludes what. */
static enum cli_parse check_args(const char *cmd, const struct cli_build_args *a)
{
	if (!a->gguf)
		cli_usage_error(cmd, "missing --gguf SHARD");
	else if (!a->config_path)
		cli_usage_error(cmd, "missing --config CONFIG.json");
	else if (a->samples_given && a->compare_all)
		cli_usage_error(cmd, "--samples and --compare-all exclude each other");
	else if (a->check_only && (a->resume || a->full_sha256))
		cli_usage_error(cmd, "--check-only writes nothing: no --resume or --full-sha256");
	else
		return CLI_RUN;
	return CLI_USAGE_ERROR;
}

static enum cli_parse parse_args(int argc, char **argv, struct cli_build_args *a)
{
	struct cli_operands ops;
	enum cli_parse p;

	a->margin = MP_BUILD_DEFAULT_MARGIN;
	p = cli_parse(&cli_build_command, argc, argv, a, &ops);
	return p == CLI_RUN ? check_args(argv[0], a) : p;
}

int cli_build_run(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct cli_build_args a = {.argc = argc, .argv = argv};
	enum cli_parse p = parse_args(argc, argv, &a);
	const struct cli_format *f;

	if (p != CLI_RUN)
		return cli_parse_status(p, cmd);
	f = a.format ? cli_format_named(cmd, a.format) : cli_format_of_gguf(a.gguf);
	if (!f)
		return cli_parse_status(CLI_USAGE_ERROR, cmd);
	return cli_finish(cmd, f->build(cmd, &a));
}
