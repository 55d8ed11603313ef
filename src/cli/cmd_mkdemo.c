/* cmd_mkdemo.c - `moepack mkdemo`: write a valid demo pack for tests and benchmarks. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "writer/kimi/demo.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/buildep.h"
#include "cli/mkdemoep.h"
#include "writer/kimi/ggufdemo.h"
#include "pack/progress.h"
#include "base/quant.h"

struct mkdemo_args {
	struct mp_demo_opts o;
	bool quiet, force;
	const char *gguf;
	const char *format;          /* NULL: kimi */
	uint64_t layers, top_k;      /* expertpack-v1 only */
};

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
#define A struct mkdemo_args
const struct cli_option cli_mkdemo_options[] = {
	CLI_OPT_TEXT("out", 'o', "PACK", "the pack to write (required)", A, o.out),
	CLI_OPT_MANIFEST(A, o.manifest),
	CLI_OPT_TEXT("format", OPT_FORMAT, "FORMAT", "kimi (the default) or expertpack-v1", A,
		     format),
	CLI_OPT_U64("layers", OPT_LAYERS, "N", "expertpack-v1: MoE layers (default 2; sparse 43)",
		    A, layers, 0, 1, UINT64_MAX),
	CLI_OPT_U64("top-k", OPT_TOP_K, "N", "expertpack-v1: experts per token (default 2;\n"
		    "sparse 6)", A, top_k, 0, 1, UINT64_MAX),
	CLI_OPT_TEXT("gguf", OPT_GGUF, "DIR", "write a small GGUF checkpoint into DIR instead",
		     A, gguf),
	CLI_OPT_U64("experts", 'e', "N", "experts per layer (default 4)", A, o.experts, 0, 1,
		    UINT64_MAX),
	CLI_OPT_U64("hidden", OPT_HIDDEN, "N", "hidden size, a multiple of 256 (default: the\n"
		    "smallest that keeps every role aligned)", A, o.hidden, 0, 1, UINT64_MAX),
	CLI_OPT_U64("inter", OPT_INTER, "N",
		    "expert width, a multiple of 256 (default: likewise)", A, o.inter, 0, 1,
		    UINT64_MAX),
	CLI_OPT_U64("alignment", 'a', "N", "payload alignment, a power of two (default 4096)",
		    A, o.alignment, CLI_NUM_SUFFIX, 1, UINT64_MAX),
	CLI_OPT_U64("gap", OPT_GAP, "N", "padding after each object, rounded up to the\n"
		    "alignment (default 0)", A, o.gap, CLI_NUM_SUFFIX, 0, UINT64_MAX),
	CLI_OPT_U64("seed", OPT_SEED, "N", "payload seed (default 0)", A, o.seed, 0, 0, UINT64_MAX),
	CLI_OPT_TRUE("sparse", OPT_SPARSE, "leave the payloads as a hole (fast, any size)", A,
		     o.sparse),
	CLI_OPT_TRUE("full-sha256", OPT_FULL_SHA256,
		     "record expert_pack.sha256 of the whole file", A, o.full_sha256),
	CLI_OPT_TRUE("force", 'f', "replace an existing PACK", A, force),
	CLI_OPT_QUIET("print nothing on success", A, quiet),
	{NULL},
};
#undef A

/* --gguf and --out each need what goes with them only. */
static enum cli_parse check_target(const char *cmd, const struct mkdemo_args *a)
{
	const struct mp_demo_opts *o = &a->o;

	if (a->gguf && !*a->gguf)
		cli_usage_error(cmd, "--gguf: empty directory name");
	else if (a->gguf && (o->out || o->manifest || o->sparse || o->full_sha256 ||
			     o->alignment || o->gap))
		cli_usage_error(cmd, "--gguf writes a checkpoint, not a pack: no --out, "
				"--manifest, --alignment, --gap, --sparse or --full-sha256");
	else if (!a->gguf && (!o->out || !*o->out))
		cli_usage_error(cmd, "missing --out PACK (or --gguf DIR)");
	else
		return CLI_RUN;
	return CLI_USAGE_ERROR;
}

static void print_result(const struct mp_demo_opts *o)
{
	char human[32], shown[CLI_TEXT_MAX];
	char *manifest = cli_manifest_path(o->out, o->manifest);
	struct stat st;
	const struct mp_quant_type *q2 = mp_quant_by_id(mp_role_dtype[MP_ROLE_UP]);
	const struct mp_quant_type *q3 = mp_quant_by_id(mp_role_dtype[MP_ROLE_DOWN]);
	uint64_t weights = o->hidden * o->inter;

	if (stat(o->out, &st) != 0)
		st.st_size = 0;
	printf("pack       %s (%llu bytes, %s%s)\n", cli_text(shown, o->out),
	       (unsigned long long)st.st_size,
	       format_bytes(human, sizeof human, (uint64_t)st.st_size),
	       o->sparse ? ", sparse" : "");
	printf("manifest   %s\n", cli_text(shown, manifest ? manifest : ""));
	free(manifest);
	printf("config     %s.config.json\n", cli_text(shown, o->out));
	printf("geometry   %d MoE layers x %llu expert%s, hidden %llu, inter %llu\n",
	       MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1, (unsigned long long)o->experts,
	       o->experts == 1 ? "" : "s",
	       (unsigned long long)o->hidden, (unsigned long long)o->inter);
	printf("roles      up, gate %s %llu bytes; down %s %llu bytes\n", q2->name,
	       (unsigned long long)mp_quant_bytes(q2, weights), q3->name,
	       (unsigned long long)mp_quant_bytes(q3, weights));
	printf("layout     alignment %llu, gap %llu, seed %llu%s\n",
	       (unsigned long long)o->alignment, (unsigned long long)o->gap,
	       (unsigned long long)o->seed, o->full_sha256 ? ", full sha256 recorded" : "");
}

/* The library words usage errors after the catalogue ("invalid usage:
 * ..."); on the command line the "moepack mkdemo:" prefix already says so. */
static int build_usage_error(const char *cmd, const struct mp_error *err)
{
	static const char prefix[] = "invalid usage: ";
	const char *msg = err->msg;

	if (strncmp(msg, prefix, sizeof prefix - 1) == 0)
		msg += sizeof prefix - 1;
	return cli_usage_error(cmd, "%s", msg);
}

/* Build errors name the file at fault themselves. */
static int build_error(const char *cmd, const struct mp_error *err)
{
	fprintf(stderr, "moepack %s: %s\n", cmd, err->msg);
	return cli_exit_status(err->code);
}

/* --gguf DIR: the demo checkpoint, and what to try with it. */
static int make_gguf(const char *cmd, const char *dir, const struct mp_demo_opts *b,
		     bool force, bool quiet)
{
	struct mp_gguf_demo_opts o = {.dir = dir, .experts = b->experts, .hidden = b->hidden,
				      .inter = b->inter, .seed = b->seed, .force = force};
	struct mp_gguf_demo_result res;
	struct mp_error err = {0};
	char human[32], shown[CLI_TEXT_MAX], shown2[CLI_TEXT_MAX];
	enum mp_err code = mp_gguf_demo_resolve(&o, &err);

	if (!code)
		code = mp_gguf_demo_write(&o, &res, &err);
	if (code == MP_E_USAGE)
		return build_usage_error(cmd, &err);
	if (code)
		return build_error(cmd, &err);
	if (!quiet) {
		printf("shards     %s .. -%05d-of-%05d.gguf (%d files, %llu tensors, %llu bytes, "
		       "%s)\n", cli_text(shown, res.shard[0]), MP_GGUF_DEMO_SHARDS,
		       MP_GGUF_DEMO_SHARDS, MP_GGUF_DEMO_SHARDS,
		       (unsigned long long)res.tensors, (unsigned long long)res.bytes,
		       format_bytes(human, sizeof human, res.bytes));
		printf("config     %s\n", cli_text(shown, res.config));
		printf("geometry   %d MoE layers x %llu expert%s, hidden %llu, inter %llu (not "
		       "Kimi-K3's: give --any-geometry)\n",
		       MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1, (unsigned long long)o.experts,
		       o.experts == 1 ? "" : "s", (unsigned long long)o.hidden,
		       (unsigned long long)o.inter);
		printf("try        moepack check-gguf --any-geometry %s/*.gguf\n",
		       cli_text(shown2, dir));
		printf("           moepack build --any-geometry --gguf %s --config %s\n",
		       cli_text(shown2, res.shard[0]), cli_text(shown, res.config));
	}
	mp_gguf_demo_result_free(&res);
	return cli_finish_stdout(cmd);
}

/* A pack (and its manifest and config) someone kept is replaced only with
 * --force. */
static enum cli_parse check_replace(const char *cmd, const struct mkdemo_args *a)
{
	struct stat st;

	if (a->force || lstat(a->o.out, &st) != 0 ||
	    !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
		return CLI_RUN;
	cli_usage_error(cmd, "%s exists: give --force to replace it (with its manifest and "
			"config)", a->o.out);
	return CLI_USAGE_ERROR;
}

static int make_pack(const char *cmd, struct mkdemo_args *a)
{
	struct progress_bar bar;
	struct mp_error err = {0};
	/* Resolve first, so that a bad geometry is a usage error with the
	 * "Try --help" line and the defaults can be reported. */
	enum mp_err code = mp_demo_resolve(&a->o, &err);

	if (code == MP_E_USAGE)
		return build_usage_error(cmd, &err);
	if (code)
		return build_error(cmd, &err);
	if (check_replace(cmd, a) != CLI_RUN)
		return CLI_EXIT_USAGE;
	cli_remove_temporaries_on_signal();
	progress_bar_init(&bar, stderr, "mkdemo", !a->quiet);
	a->o.progress = progress_bar_update;
	a->o.progress_arg = &bar;
	code = mp_demo_write(&a->o, &err);
	progress_bar_finish(&bar);
	if (code == MP_E_USAGE)
		return build_usage_error(cmd, &err);
	if (code)
		return build_error(cmd, &err);
	if (!a->quiet)
		print_result(&a->o);
	return cli_finish_stdout(cmd);
}

/* --format expertpack-v1: Kimi's layout options do not apply. */
static int run_expertpack(const char *cmd, const struct mkdemo_args *a, int argc, char **argv)
{
	struct cli_mkdemo_ep e = {
		.d = {.layers = a->layers, .experts = a->o.experts, .top_k = a->top_k,
		      .hidden = a->o.hidden, .inter = a->o.inter, .seed = a->o.seed,
		      .sparse = a->o.sparse, .force = a->force},
		.out = a->o.out, .manifest = a->o.manifest, .gguf_dir = a->gguf,
		.quiet = a->quiet, .argc = argc, .argv = argv,
	};

	if (a->o.alignment || a->o.gap || a->o.full_sha256) {
		cli_usage_error(cmd, "--format expertpack-v1 has alignment 4096, no gap and always "
				"records pack_sha256 (but --sparse): no --alignment, --gap or "
				"--full-sha256");
		return cli_parse_status(CLI_USAGE_ERROR, cmd);
	}
	if (!a->gguf)
		cli_remove_temporaries_on_signal();
	return cli_mkdemo_ep_run(cmd, &e);
}

/* -1: expertpack-v1; 0: kimi; else the usage error's status. */
static int pick_format(const char *cmd, const struct mkdemo_args *a)
{
	bool ep = false;

	if (a->format && cli_format_parse(a->format, &ep)) {
		cli_usage_error(cmd, "--format: %s is not kimi or expertpack-v1", a->format);
		return cli_parse_status(CLI_USAGE_ERROR, cmd);
	}
	if (!ep && (a->layers || a->top_k)) {
		cli_usage_error(cmd, "--layers and --top-k are for --format expertpack-v1");
		return cli_parse_status(CLI_USAGE_ERROR, cmd);
	}
	return ep ? -1 : 0;
}

int cli_mkdemo_run(int argc, char **argv)
{
	struct mkdemo_args a = {0};
	struct cli_operands ops;
	enum cli_parse p = cli_parse(&cli_mkdemo_command, argc, argv, &a, &ops);
	int status;

	if (p == CLI_RUN)
		p = check_target(argv[0], &a);
	if (p != CLI_RUN)
		return cli_parse_status(p, argv[0]);
	if ((status = pick_format(argv[0], &a)) < 0)
		return run_expertpack(argv[0], &a, argc, argv);
	if (status)
		return status;
	if (a.gguf)
		return make_gguf(argv[0], a.gguf, &a.o, a.force, a.quiet);
	return make_pack(argv[0], &a);
}
