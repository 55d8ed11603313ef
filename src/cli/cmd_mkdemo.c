/* cmd_mkdemo.c - `moepack mkdemo`: write a valid demo pack for tests and benchmarks. */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "writer/demo.h"
#include "cli/cli.h"
#include "writer/ggufwrite.h"
#include "pack/progress.h"
#include "base/quant.h"

static const char usage_text[] =
	"Usage: moepack mkdemo --out PACK [OPTIONS]\n"
	"       moepack mkdemo --gguf DIR [--experts N] [--hidden N] [--inter N] ...\n"
	"Write a valid pack (layers 1..92, up/gate Q2_K, down Q3_K, well-formed\n"
	"blocks), its manifest and a model config PACK.config.json.  Files are\n"
	"written beside their targets and renamed into place at the end; an\n"
	"existing PACK is replaced only with --force.\n"
	"\n"
	"  -o, --out=PACK           the pack to write (required)\n"
	"  -m, --manifest=FILE      the manifest (default: PACK.manifest.json)\n"
	"      --gguf=DIR           write a small GGUF checkpoint into DIR instead\n"
	"  -e, --experts=N          experts per layer (default 4)\n"
	"      --hidden=N           hidden size, a multiple of 256 (default: the\n"
	"                           smallest that keeps every role aligned)\n"
	"      --inter=N            expert width, a multiple of 256 (default: likewise)\n"
	"  -a, --alignment=N        payload alignment, a power of two (default 4096)\n"
	"      --gap=N              padding after each object, rounded up to the\n"
	"                           alignment (default 0)\n"
	"  -s, --seed=N             payload seed (default 0)\n"
	"      --sparse             leave the payloads as a hole (fast, any size)\n"
	"      --full-sha256        record expert_pack.sha256 of the whole file\n"
	"  -f, --force              replace an existing PACK\n"
	"  -q, --quiet              print nothing on success\n"
	"  -h, --help               show this help and exit\n"
	"\n"
	"--alignment and --gap take K, M, G or T suffixes (powers of 1024).\n"
	"Kimi K3 geometry: --experts 896 --hidden 3584 --inter 3072 --sparse\n"
	"(up and gate [3584, 3072], down [3072, 3584]; the row length comes first).\n"
	"\n"
	"With --gguf DIR, write instead a small Kimi-K3-shaped GGUF checkpoint to\n"
	"try build on: DIR/" MP_GGUF_DEMO_PREFIX "-0000i-of-00003.gguf (i = 1..3) and\n"
	"DIR/config.json, 92 MoE layers of --experts (default 2) experts, --hidden\n"
	"(default 512) x --inter (default 1024), seeded by --seed; DIR is created\n"
	"if missing, existing files are replaced only with --force.  It is not\n"
	"Kimi-K3's geometry: check-gguf and build want --any-geometry.\n"
	"\n"
	"Exit status: 0 written, 2 usage error, 3 a file cannot be written.\n";

enum {
	OPT_HIDDEN = 0x100,
	OPT_INTER,
	OPT_GAP,
	OPT_SPARSE,
	OPT_FULL_SHA256,
	OPT_GGUF,
};

static const struct option long_options[] = {
	{"out", required_argument, NULL, 'o'},
	{"manifest", required_argument, NULL, 'm'},
	{"experts", required_argument, NULL, 'e'},
	{"hidden", required_argument, NULL, OPT_HIDDEN},
	{"inter", required_argument, NULL, OPT_INTER},
	{"alignment", required_argument, NULL, 'a'},
	{"gap", required_argument, NULL, OPT_GAP},
	{"seed", required_argument, NULL, 's'},
	{"sparse", no_argument, NULL, OPT_SPARSE},
	{"full-sha256", no_argument, NULL, OPT_FULL_SHA256},
	{"force", no_argument, NULL, 'f'},
	{"gguf", required_argument, NULL, OPT_GGUF},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* How each numeric option is read; 0 means "default" to mp_demo_resolve,
 * so an explicit 0 is refused where it would silently mean that. */
struct number_option {
	int key;
	const char *name;
	unsigned flags;
	uint64_t min;
	size_t field;
};

static const struct number_option number_options[] = {
	{'e', "--experts", 0, 1, offsetof(struct mp_demo_opts, experts)},
	{OPT_HIDDEN, "--hidden", 0, 1, offsetof(struct mp_demo_opts, hidden)},
	{OPT_INTER, "--inter", 0, 1, offsetof(struct mp_demo_opts, inter)},
	{'a', "--alignment", CLI_NUM_SUFFIX, 1, offsetof(struct mp_demo_opts, alignment)},
	{OPT_GAP, "--gap", CLI_NUM_SUFFIX, 0, offsetof(struct mp_demo_opts, gap)},
	{'s', "--seed", 0, 0, offsetof(struct mp_demo_opts, seed)},
};

static const struct number_option *find_number_option(int key)
{
	for (size_t i = 0; i < sizeof number_options / sizeof number_options[0]; i++)
		if (number_options[i].key == key)
			return &number_options[i];
	return NULL;
}

/* Returns 0 to go on, -1 after --help, or an exit status. */
static int parse_args(int argc, char **argv, struct mp_demo_opts *o, bool *quiet,
		      bool *force, const char **gguf)
{
	bool pack_only = false; /* an option that means nothing with --gguf */
	const char *cmd = argv[0];
	const struct number_option *num;
	struct mp_error err;
	int c;

	while ((c = cli_getopt(cmd, argc, argv, "o:m:e:a:s:fqh", long_options)) != -1) {
		num = find_number_option(c);
		if (num) {
			uint64_t *field = (uint64_t *)((char *)o + num->field);

			if (cli_parse_u64(optarg, num->name, num->flags, num->min, UINT64_MAX,
					  field, &err))
				return cli_usage_error(cmd, "%s", err.msg);
			continue;
		}
		switch (c) {
		case 'o':
			o->out = optarg;
			break;
		case 'm':
			o->manifest = optarg;
			pack_only = true;
			break;
		case OPT_SPARSE:
			o->sparse = true;
			pack_only = true;
			break;
		case OPT_FULL_SHA256:
			o->full_sha256 = true;
			pack_only = true;
			break;
		case OPT_GGUF:
			*gguf = optarg;
			break;
		case 'f':
			*force = true;
			break;
		case 'q':
			*quiet = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return -1;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s' (the pack is given "
				       "with --out)", argv[optind]);
	if (*gguf) {
		if (!**gguf)
			return cli_usage_error(cmd, "--gguf: empty directory name");
		if (o->out || pack_only || o->alignment || o->gap)
			return cli_usage_error(cmd, "--gguf writes a checkpoint, not a pack: no "
					       "--out, --manifest, --alignment, --gap, --sparse or "
					       "--full-sha256");
		return CLI_EXIT_OK;
	}
	if (!o->out || !*o->out)
		return cli_usage_error(cmd, "missing --out PACK (or --gguf DIR)");
	return CLI_EXIT_OK;
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

/*
 * An interrupted run must leave no temporary files (a K3-sized sparse pack
 * is 918 GiB apparent): remove them, then die of the same signal so that
 * the caller sees how we ended.  SA_RESETHAND restores the default action,
 * and the re-raised signal is delivered when the handler returns.
 */
static void on_fatal_signal(int sig)
{
	mp_demo_remove_temporaries();
	raise(sig);
}

int cmd_mkdemo(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct mp_demo_opts o = {0};
	struct progress_bar bar;
	struct mp_error err = {0};
	bool quiet = false, force = false;
	const char *gguf = NULL;
	enum mp_err code;
	struct stat st;
	int rc = parse_args(argc, argv, &o, &quiet, &force, &gguf);

	if (rc)
		return rc < 0 ? cli_finish_stdout(cmd) : rc;
	if (gguf)
		return make_gguf(cmd, gguf, &o, force, quiet);
	/* Resolve first, so that a bad geometry is a usage error with the
	 * "Try --help" line and the defaults can be reported. */
	code = mp_demo_resolve(&o, &err);
	if (code == MP_E_USAGE)
		return build_usage_error(cmd, &err);
	if (code)
		return build_error(cmd, &err);

	/* a demo run twice must not silently replace a pack someone kept */
	if (!force && lstat(o.out, &st) == 0 &&
	    (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
		return cli_usage_error(cmd, "%s exists: give --force to replace it (with its "
				       "manifest and config)", o.out);
	cli_catch_signals(on_fatal_signal);
	progress_bar_init(&bar, stderr, "mkdemo", !quiet);
	o.progress = progress_bar_update;
	o.progress_arg = &bar;
	code = mp_demo_write(&o, &err);
	progress_bar_finish(&bar);
	if (code == MP_E_USAGE)
		return build_usage_error(cmd, &err);
	if (code)
		return build_error(cmd, &err);
	if (!quiet)
		print_result(&o);
	return cli_finish_stdout(cmd);
}
