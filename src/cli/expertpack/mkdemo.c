/* mkdemo.c - `moepack mkdemo --format expertpack-v1`: a DeepSeek-V4-Flash demo
 * GGUF and config, the SGLANG-EXPERTPACK-v1 pack `build` makes of them, or a
 * sparse pack of full geometry. */
#include "config.h"

#include "cli/expertpack/expertpack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/outfile.h"
#include "cli/cli.h"
#include "pack/progress.h"
#include "writer/expertpack/demo.h"
#include "writer/expertpack/write.h"

struct cli_mkdemo_ep {
	struct mp_epw_demo_opts d;
	const char *out, *manifest, *gguf_dir;
	bool quiet;
	int argc;
	char **argv;
};

static int failed(const char *cmd, const struct mp_error *err)
{
	static const char prefix[] = "invalid usage: ";

	if (err->code == MP_E_USAGE && strncmp(err->msg, prefix, sizeof prefix - 1) == 0)
		return cli_usage_error(cmd, "%s", err->msg + sizeof prefix - 1);
	fprintf(stderr, "moepack %s: %s\n", cmd, err->msg);
	return cli_exit_status(err->code);
}

static void print_geometry(const struct mp_epw_demo_opts *d)
{
	printf("geometry   %llu MoE layers x %llu experts, top-k %llu, hidden %llu, inter %llu "
	       "(MXFP4)\n", (unsigned long long)d->layers, (unsigned long long)d->experts,
	       (unsigned long long)d->top_k, (unsigned long long)d->hidden,
	       (unsigned long long)d->inter);
}

/* --gguf DIR: the demo GGUF and config.json, and what to try with them. */
static int make_gguf(const char *cmd, struct cli_mkdemo_ep *a)
{
	struct mp_error err = {0};
	char *gguf = mp_path_join(a->gguf_dir, MP_EPW_DEMO_GGUF);
	char *config = mp_path_join(a->gguf_dir, "config.json");
	char s1[CLI_TEXT_MAX], s2[CLI_TEXT_MAX];
	enum mp_err rc = MP_OK;

	if (!gguf || !config)
		rc = mp_fail(&err, MP_E_NOMEM, "out of memory");
	else if (mkdir(a->gguf_dir, 0777) != 0 && errno != EEXIST)
		rc = mp_fail(&err, MP_E_GGUF_IO, "cannot create directory %s: %s", a->gguf_dir,
			     strerror(errno));
	if (!rc)
		rc = mp_epw_demo_source(&a->d, gguf, config, &err);
	if (!rc && !a->quiet) {
		printf("gguf       %s\nconfig     %s\n", cli_text(s1, gguf), cli_text(s2, config));
		print_geometry(&a->d);
		printf("try        moepack check-gguf %s\n", s1);
		printf("           moepack build --gguf %s --config %s\n", s1, s2);
	}
	free(gguf);
	free(config);
	return rc ? failed(cmd, &err) : cli_finish_stdout(cmd);
}

static void print_pack(const struct cli_mkdemo_ep *a, const struct mp_epw_opts *o,
		       const struct mp_epw_result *r)
{
	char s1[CLI_TEXT_MAX], s2[CLI_TEXT_MAX], human[32];

	printf("pack       %s (%llu bytes, %s%s)\n", cli_text(s1, r->pack_path),
	       (unsigned long long)r->size, format_bytes(human, sizeof human, r->size),
	       a->d.sparse ? ", sparse" : "");
	printf("manifest   %s\n", cli_text(s1, r->manifest_path));
	printf("source     %s%s\n", cli_text(s1, o->gguf_path),
	       a->d.sparse ? " (not written: the pack describes it)" : "");
	printf("config     %s\n", cli_text(s1, o->config_path));
	print_geometry(&a->d);
	if (!a->d.sparse)
		printf("try        moepack verify --full --source %s %s\n",
		       cli_text(s2, o->gguf_path), cli_text(s1, r->pack_path));
}

/* The demo GGUF and config beside the pack, then the build of the pack. */
static enum mp_err make_full(struct cli_mkdemo_ep *a, struct mp_epw_opts *o,
			     struct mp_epw_result *r, struct mp_error *err)
{
	struct progress_bar bar;
	struct mp_epw_plan p = {0};
	enum mp_err rc = mp_epw_demo_source(&a->d, o->gguf_path, o->config_path, err);

	if (!rc)
		rc = mp_epw_plan_open(&p, o->gguf_path, o->config_path, err);
	if (!rc) {
		progress_bar_init(&bar, stderr, "mkdemo", !a->quiet);
		o->progress = progress_bar_update;
		o->progress_arg = &bar;
		rc = mp_epw_build(&p, o, r, err);
		progress_bar_finish(&bar);
	}
	mp_epw_plan_free(&p);
	return rc;
}

static int run(const char *cmd, struct cli_mkdemo_ep *a)
{
	struct mp_error err = {0};
	struct mp_epw_result r = {0};
	/* resume: a PACK.partial a signal left is checked and reused */
	struct mp_epw_opts o = {.out = a->out, .manifest = a->manifest, .force = a->d.force,
				.resume = true,
				.command = "moepack mkdemo --format expertpack-v1"};
	enum mp_err rc = mp_epw_demo_resolve(&a->d, &err);
	char *gguf = NULL, *config = NULL;

	if (rc)
		return failed(cmd, &err);
	if (a->gguf_dir)
		return make_gguf(cmd, a);
	if (!a->d.force && lstat(a->out, &(struct stat){0}) == 0)
		return cli_usage_error(cmd, "%s exists: give --force to replace it (with its "
				       "manifest, source and config)", a->out);
	o.gguf_path = gguf = mp_path_with_suffix(a->out, ".source.gguf");
	o.config_path = config = mp_path_with_suffix(a->out, ".config.json");
	if (!gguf || !config)
		rc = mp_fail(&err, MP_E_NOMEM, "out of memory");
	else
		rc = a->d.sparse ? mp_epw_demo_sparse(&a->d, &o, &r, &err)
				 : make_full(a, &o, &r, &err);
	if (!rc && !a->quiet)
		print_pack(a, &o, &r);
	mp_epw_result_free(&r);
	free(gguf);
	free(config);
	return rc ? failed(cmd, &err) : cli_finish_stdout(cmd);
}

int cli_ep_mkdemo(const char *cmd, const struct cli_mkdemo_args *a)
{
	struct cli_mkdemo_ep e = {
		.d = {.layers = a->layers, .experts = a->experts, .top_k = a->top_k,
		      .hidden = a->hidden, .inter = a->inter, .seed = a->seed,
		      .sparse = a->sparse, .force = a->force},
		.out = a->out, .manifest = a->manifest, .gguf_dir = a->gguf,
		.quiet = a->quiet, .argc = a->argc, .argv = a->argv,
	};

	if (a->alignment || a->gap || a->full_sha256) {
		cli_usage_error(cmd, "--format expertpack-v1 has alignment 4096, no gap and always "
				"records pack_sha256 (but --sparse): no --alignment, --gap or "
				"--full-sha256");
		return cli_parse_status(CLI_USAGE_ERROR, cmd);
	}
	if (!a->gguf)
		cli_remove_temporaries_on_signal();
	return run(cmd, &e);
}
