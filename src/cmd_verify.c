/* cmd_verify.c - `moepack verify`: the reference loader's checks, as a tool. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"

static const char usage_text[] =
	"Usage: moepack verify [OPTIONS] PACK\n"
	"Check PACK and its manifest the way the reference loader does: manifest,\n"
	"header, every index entry, trailing bytes, index SHA-256 and, with --full,\n"
	"the SHA-256 of the whole file.\n"
	"\n"
	"  -f, --full               also check expert_pack.sha256 (reads every byte)\n"
	"  -j, --json               print one JSON object on stdout\n"
	"  -q, --quiet              print nothing unless the pack is invalid\n"
	"  -m, --manifest=FILE      the manifest (default: PACK.manifest.json)\n"
	"      --expect-layers=N    require model.num_hidden_layers to be N\n"
	"      --expect-experts=N   require model.num_experts to be N\n"
	"  -c, --config=FILE        require model.config_sha256 to be FILE's SHA-256\n"
	"  -h, --help               show this help and exit\n"
	"\n"
	"Exit status: 0 valid, 1 invalid, 2 usage error (including --full when the\n"
	"manifest has no expert_pack.sha256), 3 a file cannot be read.\n";

enum { OPT_EXPECT_LAYERS = 0x100, OPT_EXPECT_EXPERTS };

static const struct option long_options[] = {
	{"full", no_argument, NULL, 'f'},
	{"json", no_argument, NULL, 'j'},
	{"quiet", no_argument, NULL, 'q'},
	{"manifest", required_argument, NULL, 'm'},
	{"expect-layers", required_argument, NULL, OPT_EXPECT_LAYERS},
	{"expect-experts", required_argument, NULL, OPT_EXPECT_EXPERTS},
	{"config", required_argument, NULL, 'c'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

struct verify_args {
	bool json, quiet;
	const char *pack;
	struct mp_open_opts open;
};

static int parse_args(int argc, char **argv, struct verify_args *a)
{
	const char *cmd = argv[0];
	struct mp_error err;
	int c;

	while ((c = cli_getopt(cmd, argc, argv, "fjqm:c:h", long_options)) != -1) {
		switch (c) {
		case 'f':
			a->open.full = true;
			break;
		case 'j':
			a->json = true;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'm':
			a->open.manifest_path = optarg;
			break;
		case 'c':
			a->open.config_path = optarg;
			break;
		case OPT_EXPECT_LAYERS:
			if (cli_parse_u64(optarg, "--expect-layers", 0, 1, UINT64_MAX,
					  &a->open.expect_layers, &err))
				return cli_usage_error(cmd, "%s", err.msg);
			break;
		case OPT_EXPECT_EXPERTS:
			if (cli_parse_u64(optarg, "--expect-experts", 0, 1, UINT64_MAX,
					  &a->open.expect_experts, &err))
				return cli_usage_error(cmd, "%s", err.msg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return -1;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error(cmd, "missing PACK");
	if (argc - optind > 1)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	a->pack = argv[optind];
	return CLI_EXIT_OK;
}

static json_t *warnings_json(const struct mp_pack *pack)
{
	json_t *list = json_array();

	for (unsigned i = 0; pack && list && i < pack->nwarnings && i < MP_MAX_WARNINGS; i++)
		json_array_append_new(list, cli_json_text(pack->warnings[i]));
	return list;
}

static int print_json(const struct verify_args *a, const struct mp_pack *pack,
		      const struct mp_error *err)
{
	char *manifest = pack ? NULL : cli_manifest_path(a->pack, a->open.manifest_path);
	json_t *o = json_object();
	int rc;

	json_object_set_new(o, "ok", json_boolean(pack != NULL));
	json_object_set_new(o, "code", json_string(mp_err_name(err->code)));
	json_object_set_new(o, "message", cli_json_text(pack ? "valid" : err->msg));
	json_object_set_new(o, "pack", cli_json_text(a->pack));
	json_object_set_new(o, "manifest",
			    cli_json_text(pack ? pack->manifest_path : manifest));
	json_object_set_new(o, "index_sha256",
			    pack ? json_string(pack->m.index_sha256) : json_null());
	json_object_set_new(o, "full_sha256_checked",
			    json_boolean(pack && pack->full_checked));
	json_object_set_new(o, "warnings", warnings_json(pack));
	free(manifest);
	rc = cli_print_json(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	return rc ? CLI_EXIT_IO : CLI_EXIT_OK;
}

static void print_summary(const struct mp_pack *pack)
{
	char shown[CLI_TEXT_MAX];
	const char *full;

	if (pack->full_checked)
		full = "full sha256 checked";
	else if (pack->m.sha256[0])
		full = "full sha256 not checked";
	else
		full = "no full sha256 in manifest";
	printf("%s: valid (%zu layers x %llu experts, index sha256 %.16s..., %s)\n",
	       cli_text(shown, pack->path), pack->m.layer_count, (unsigned long long)pack->m.num_experts,
	       pack->m.index_sha256, full);
}

int cmd_verify(int argc, char **argv)
{
	struct verify_args a = {0};
	struct progress_bar bar;
	struct mp_error err = {0};
	struct mp_pack *pack = NULL;
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return rc < 0 ? cli_finish_stdout(argv[0]) : rc;

	progress_bar_init(&bar, stderr, "sha256", !a.quiet);
	a.open.progress = progress_bar_update;
	a.open.progress_arg = &bar;
	rc = mp_pack_open(&pack, a.pack, &a.open, &err);
	progress_bar_finish(&bar);

	if (a.json) {
		int out = print_json(&a, pack, &err);

		rc = rc ? cli_exit_status(rc) : out;
	} else if (rc) {
		rc = cli_report(a.pack, &err);
	} else {
		if (!a.quiet) {
			cli_print_warnings(pack);
			print_summary(pack);
		}
	}
	mp_pack_close(pack);
	if (cli_finish_stdout(argv[0]) && !rc)
		rc = CLI_EXIT_IO;
	return rc;
}
