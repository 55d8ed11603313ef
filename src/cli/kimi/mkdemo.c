/* mkdemo.c - `moepack mkdemo` of a Kimi pack (GGMLMOEPACKv1): a valid demo
 * pack, or with --gguf a small Kimi-K3-shaped GGUF checkpoint. */
#include "config.h"

#include "cli/kimi/kimi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/quant.h"
#include "cli/cli.h"
#include "pack/kimi/format.h"
#include "pack/progress.h"
#include "writer/kimi/demo.h"
#include "writer/kimi/ggufdemo.h"

/* This half's options: the user's, as the demo writer takes them. */
struct args {
	struct mp_demo_opts o;
	bool quiet, force;
};

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
static enum cli_parse check_replace(const char *cmd, const struct args *a)
{
	struct stat st;

	if (a->force || lstat(a->o.out, &st) != 0 ||
	    !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
		return CLI_RUN;
	cli_usage_error(cmd, "%s exists: give --force to replace it (with its manifest and "
			"config)", a->o.out);
	return CLI_USAGE_ERROR;
}

static int make_pack(const char *cmd, struct args *a)
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

int cli_kimi_mkdemo(const char *cmd, const struct cli_mkdemo_args *m)
{
	struct args a = {
		.o = {.out = m->out, .manifest = m->manifest, .experts = m->experts,
		      .hidden = m->hidden, .inter = m->inter, .alignment = m->alignment,
		      .gap = m->gap, .seed = m->seed, .sparse = m->sparse,
		      .full_sha256 = m->full_sha256},
		.quiet = m->quiet, .force = m->force,
	};

	if (m->layers || m->top_k) {
		cli_usage_error(cmd, "--layers and --top-k are for --format expertpack-v1");
		return CLI_EXIT_USAGE;
	}
	if (m->gguf)
		return make_gguf(cmd, m->gguf, &a.o, a.force, a.quiet);
	return make_pack(cmd, &a);
}
