/* cmd_build.c - `moepack build`: a pack and manifest from the GGUF checkpoint users
 * download, checked end to end. */
#include "config.h"

#include <signal.h>
#include <string.h>

#include "cli/cli.h"
#include "writer/ggufpack.h"
#include "pack/progress.h"
#include "writer/shards.h"

static const char usage_text[] =
	"Usage: moepack build --gguf SHARD --config CONFIG.json [OPTIONS]\n"
	"Build the expert pack of a Kimi-K3 GGUF checkpoint, byte for byte the one\n"
	"the reference builder writes, and its manifest.  SHARD is any shard of a\n"
	"split checkpoint (NAME-0000i-of-0000N.gguf) or a single GGUF file; the\n"
	"whole set is discovered and checked first.  The pack is then validated as\n"
	"at mount time and payload samples are compared with their GGUF slices.\n"
	"\n"
	"  -g, --gguf=SHARD         any shard of the checkpoint (required)\n"
	"  -c, --config=FILE        the model's HF config.json (required)\n"
	"  -o, --out=PACK           the pack (default: NAME.expert-major.pack\n"
	"                           beside the shards)\n"
	"  -m, --manifest=FILE      the manifest (default: PACK.manifest.json)\n"
	"  -t, --tokenizer-dir=DIR  record the tokenizer files of DIR\n"
	"      --full-sha256        record expert_pack.sha256, hashed while copying\n"
	"      --samples=N          compare N evenly spaced entries (default 6)\n"
	"      --compare-all        compare every payload byte\n"
	"      --any-geometry       any expert count and role sizes, not Kimi-K3's\n"
	"      --check-only         judge the existing pack against the shards\n"
	"      --resume             continue an interrupted build's PACK.partial\n"
	"      --margin=SIZE        free space to keep beyond the pack (default 2G)\n"
	"      --force              replace an existing file at PACK, the manifest or\n"
	"                           PACK.seal that is not a pack, manifest or seal\n"
	"  -j, --json               print the summary as one JSON object\n"
	"  -q, --quiet              print nothing on success\n"
	"  -h, --help               show this help and exit\n"
	"\n"
	"Exit status: 0 built (or valid), 1 the checkpoint, config or pack is\n"
	"invalid, 2 usage error, 3 a file cannot be read or written.\n";

enum {
	OPT_FULL_SHA256 = 0x100,
	OPT_SAMPLES,
	OPT_COMPARE_ALL,
	OPT_ANY_GEOMETRY,
	OPT_CHECK_ONLY,
	OPT_RESUME,
	OPT_MARGIN,
	OPT_FORCE,
};

static const struct option long_options[] = {
	{"gguf", required_argument, NULL, 'g'},
	{"config", required_argument, NULL, 'c'},
	{"out", required_argument, NULL, 'o'},
	{"manifest", required_argument, NULL, 'm'},
	{"tokenizer-dir", required_argument, NULL, 't'},
	{"full-sha256", no_argument, NULL, OPT_FULL_SHA256},
	{"samples", required_argument, NULL, OPT_SAMPLES},
	{"compare-all", no_argument, NULL, OPT_COMPARE_ALL},
	{"any-geometry", no_argument, NULL, OPT_ANY_GEOMETRY},
	{"check-only", no_argument, NULL, OPT_CHECK_ONLY},
	{"resume", no_argument, NULL, OPT_RESUME},
	{"margin", required_argument, NULL, OPT_MARGIN},
	{"force", no_argument, NULL, OPT_FORCE},
	{"json", no_argument, NULL, 'j'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

struct args {
	const char *gguf;
	bool json, quiet, samples_given;
	struct mp_gguf_build_opts o;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	const char *cmd = argv[0];
	struct mp_error err;
	int c;

	a->o.kimi = true;
	a->o.samples = MP_BUILD_DEFAULT_SAMPLES;
	a->o.margin = MP_BUILD_DEFAULT_MARGIN;
	while ((c = cli_getopt(cmd, argc, argv, "g:c:o:m:t:jqh", long_options)) != -1) {
		switch (c) {
		case 'g': a->gguf = optarg; break;
		case 'c': a->o.config_path = optarg; break;
		case 'o': a->o.out = optarg; break;
		case 'm': a->o.manifest = optarg; break;
		case 't': a->o.tokenizer_dir = optarg; break;
		case OPT_FULL_SHA256: a->o.full_sha256 = true; break;
		case OPT_COMPARE_ALL: a->o.compare_all = true; break;
		case OPT_ANY_GEOMETRY: a->o.kimi = false; break;
		case OPT_CHECK_ONLY: a->o.check_only = true; break;
		case OPT_RESUME: a->o.resume = true; break;
		case OPT_FORCE: a->o.force = true; break;
		case 'j': a->json = true; break;
		case 'q': a->quiet = true; break;
		case OPT_SAMPLES:
			if (cli_parse_u64(optarg, "--samples", 0, 0, UINT64_MAX, &a->o.samples,
					  &err))
				return cli_usage_error(cmd, "%s", err.msg);
			a->samples_given = true;
			break;
		case OPT_MARGIN:
			if (cli_parse_u64(optarg, "--margin", CLI_NUM_SUFFIX, 0, UINT64_MAX,
					  &a->o.margin, &err))
				return cli_usage_error(cmd, "%s", err.msg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return -1;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		char shown[CLI_TEXT_MAX];

		return cli_usage_error(cmd, "unexpected argument '%s'",
				       cli_text(shown, argv[optind]));
	}
	if (!a->gguf)
		return cli_usage_error(cmd, "missing --gguf SHARD");
	if (!a->o.config_path)
		return cli_usage_error(cmd, "missing --config CONFIG.json");
	if (a->samples_given && a->o.compare_all)
		return cli_usage_error(cmd, "--samples and --compare-all exclude each other");
	if (a->o.check_only && (a->o.resume || a->o.full_sha256))
		return cli_usage_error(cmd, "--check-only writes nothing: no --resume or "
				       "--full-sha256");
	return CLI_EXIT_OK;
}

/* Each problem on its own line, "moepack: SET: ..." as check-gguf says
 * it; the status of the worst. */
static int report_problems(const struct mp_shard_set *set, const char *gguf)
{
	int status = CLI_EXIT_OK;
	size_t kept = set->nproblems < MP_SHARDS_MAX_PROBLEMS ? set->nproblems
							      : MP_SHARDS_MAX_PROBLEMS;
	char name[CLI_TEXT_MAX], shown[CLI_TEXT_MAX];

	mp_shards_name(set, gguf, name, sizeof name);
	cli_text(shown, name);
	for (size_t i = 0; i < kept; i++) {
		int s = cli_exit_status(set->problems[i].code);

		fprintf(stderr, "moepack: %s: %s\n", shown, set->problems[i].msg);
		if (s > status)
			status = s;
	}
	if (set->nproblems > kept)
		fprintf(stderr, "moepack: %s: ... and %zu more problems\n", shown,
			set->nproblems - kept);
	return status;
}

/* A first signal stops the copy at an object boundary, durable for
 * --resume; SA_RESETHAND lets a second one kill at once. */
static void on_signal(int sig)
{
	mp_gguf_build_interrupt(sig);
}

static int print_summary(const struct args *a, const struct mp_shard_set *set,
			 const struct mp_gguf_build_result *r)
{
	char shown[CLI_TEXT_MAX], human[32];
	/* this run's bytes over this run's time: a resumed build copied less */
	double rate = r->seconds > 0 ? (double)r->bytes_copied / r->seconds : 0;

	if (a->json) {
		json_t *o = json_object();

		json_object_set_new(o, "pack", cli_json_text(r->pack_path));
		json_object_set_new(o, "manifest", a->o.check_only ? json_null()
								   : cli_json_text(r->manifest_path));
		json_object_set_new(o, "valid", json_true());
		json_object_set_new(o, "built", json_boolean(!r->reused && !a->o.check_only));
		json_object_set_new(o, "shards", json_integer((json_int_t)set->count));
		json_object_set_new(o, "tensors", json_integer((json_int_t)set->ntensors));
		json_object_set_new(o, "entries", json_integer((json_int_t)r->entries));
		json_object_set_new(o, "size", json_integer((json_int_t)r->size));
		json_object_set_new(o, "resumed_objects", json_integer((json_int_t)r->resumed_at));
		json_object_set_new(o, "bytes_copied", json_integer((json_int_t)r->bytes_copied));
		json_object_set_new(o, "samples_compared",
				    json_integer((json_int_t)r->samples_compared));
		json_object_set_new(o, "sampled", json_boolean(r->sampled));
		json_object_set_new(o, "seconds", json_real(r->seconds));
		json_object_set_new(o, "chunks_checked", json_integer((json_int_t)r->chunks_checked));
		json_object_set_new(o, "chunks_recopied",
				    json_integer((json_int_t)r->chunks_recopied));
		json_object_set_new(o, "restarted", r->notice[0] ? cli_json_text(r->notice)
								 : json_null());
		json_object_set_new(o, "seal_digest", r->seal_digest[0]
							      ? json_string(r->seal_digest)
							      : json_null());
		json_object_set_new(o, "seal_unanchored", json_boolean(r->seal_unanchored));
		json_object_set_new(o, "index_sha256", json_string(r->index_sha256));
		json_object_set_new(o, "inventory_sha256", json_string(r->inventory_sha256));
		json_object_set_new(o, "sha256", r->sha256[0] ? json_string(r->sha256)
							      : json_null());
		return cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER) ? CLI_EXIT_IO
									      : CLI_EXIT_OK;
	}
	if (a->quiet)
		return CLI_EXIT_OK;
	if (a->o.check_only) {
		if (r->sampled)
			printf("%s: valid by samples (%llu entries, %llu bytes, %llu sampled "
			       "entries compared; --compare-all compares every byte)\n",
			       cli_text(shown, r->pack_path), (unsigned long long)r->entries,
			       (unsigned long long)r->size,
			       (unsigned long long)r->samples_compared);
		else
			printf("%s: valid (%llu entries, %llu bytes, every entry compared)\n",
			       cli_text(shown, r->pack_path), (unsigned long long)r->entries,
			       (unsigned long long)r->size);
		return CLI_EXIT_OK;
	}
	printf("%s: %s from %zu shard%s (%llu entries, %llu bytes, %s", cli_text(shown, r->pack_path),
	       r->reused ? "already valid, kept" : r->resumed_at ? "resumed and built" : "built",
	       set->count, set->count == 1 ? "" : "s", (unsigned long long)r->entries,
	       (unsigned long long)r->size, format_bytes(human, sizeof human, r->size));
	if (!r->reused) {
		char copied[32];

		if (r->resumed_at)
			printf(", %s copied now", format_bytes(copied, sizeof copied,
							      r->bytes_copied));
		printf(", %.1f s, %s/s", r->seconds,
		       format_bytes(human, sizeof human, (uint64_t)rate));
		if (r->resumed_at)
			printf(", %llu chunks checked, %llu copied again",
			       (unsigned long long)r->chunks_checked,
			       (unsigned long long)r->chunks_recopied);
	}
	printf("); manifest %s; validated, %s%llu payload%s compared with the shards%s%s",
	       cli_text(shown, r->manifest_path), r->sampled ? "" : "all ",
	       (unsigned long long)r->samples_compared,
	       r->samples_compared == 1 ? "" : "s", r->sha256[0] ? "; sha256 " : "", r->sha256);
	if (r->seal_digest[0])
		printf("; seal %s%s", r->seal_digest,
		       r->seal_unanchored ? " (unanchored: without --full-sha256 it proves "
					    "the bytes unchanged since the build, not their origin)"
					  : "");
	putchar('\n');
	return CLI_EXIT_OK;
}

int cmd_build(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct args a = {0};
	struct mp_shard_set *set = NULL;
	struct mp_experts *ex = NULL;
	struct mp_model_config cfg;
	struct mp_gguf_build_result res = {0};
	struct progress_bar bar;
	struct mp_error err = {0};
	enum mp_err rc;
	int status = parse_args(argc, argv, &a);

	if (status)
		return status < 0 ? cli_finish_stdout(cmd) : status;
	rc = mp_shards_open(a.gguf, &set, &err);
	if (!set)
		return cli_report(a.gguf, &err);
	ex = calloc(1, sizeof *ex);
	if (!ex) {
		mp_shards_close(set);
		fprintf(stderr, "moepack %s: out of memory\n", cmd);
		return CLI_EXIT_IO;
	}
	if (!rc)
		rc = mp_shards_experts(set, a.o.kimi, ex);
	if (!rc) {
		rc = mp_model_config_check(a.o.config_path, set, a.o.kimi, ex, &cfg, &err);
		if (rc && !set->nproblems) {
			status = cli_report(a.o.config_path, &err);
			goto out;
		}
	}
	if (rc) {
		status = report_problems(set, a.gguf);
		goto out;
	}
	cli_catch_signals(on_signal);
	progress_bar_init(&bar, stderr, "build", !a.quiet && !a.json);
	a.o.progress = progress_bar_update;
	a.o.progress_arg = &bar;
	rc = mp_gguf_build(set, ex, &cfg, &a.o, &res, &err);
	progress_bar_finish(&bar);
	if (rc) {
		int sig = mp_gguf_build_interrupted();
		char name[CLI_TEXT_MAX];

		if (!res.pack_path)
			mp_shards_name(set, a.gguf, name, sizeof name);
		status = cli_report(res.pack_path ? res.pack_path : name, &err);
		/* like the reference: a pack that cannot be read is not valid */
		if (a.o.check_only && rc == MP_E_PACK_IO)
			status = CLI_EXIT_INVALID;
		if (rc == MP_E_INTERRUPTED && sig) {
			/* die of the signal, as the caller expects */
			mp_gguf_build_result_free(&res);
			free(ex);
			mp_shards_close(set);
			fflush(NULL);
			signal(sig, SIG_DFL);
			raise(sig);
		}
		goto out;
	}
	/* a resume that could not trust PACK.partial says why, in one line */
	if (res.notice[0] && !a.quiet && !a.json)
		fprintf(stderr, "moepack %s: %s\n", cmd, res.notice);
	status = print_summary(&a, set, &res);
	if (!status)
		status = cli_finish_stdout(cmd);
out:
	mp_gguf_build_result_free(&res);
	free(ex);
	mp_shards_close(set);
	return status;
}
