/* build.c - `moepack build` of SGLang's expert pack (SGLANG-EXPERTPACK-v1). */
#include "config.h"

#include "cli/expertpack/expertpack.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/outfile.h"
#include "pack/expertpack/expertpack.h"
#include "pack/progress.h"
#include "writer/builder.h"
#include "writer/expertpack/write.h"

/* This half's own options, made of struct cli_build_args. */
struct cli_build_ep {
	struct mp_epw_opts o;
	bool check_only, json, quiet;
	int argc;
	char **argv;   /* for builder.command */
};

/* "moepack" and the subcommand's argv (its name first) joined by spaces,
 * for builder.command. */
static char *command_line(int argc, char **argv)
{
	size_t len = sizeof "moepack";
	char *s;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if (!(s = malloc(len)))
		return NULL;
	strcpy(s, "moepack");
	for (int i = 0; i < argc; i++) {
		strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

static int report(const struct cli_build_ep *a, const char *file, const struct mp_error *err)
{
	json_t *o;

	if (!a->json)
		return cli_report(file, err);
	o = cli_json_result(err->code, "", err->msg, a->o.out);
	json_object_set_new(o, "file", cli_json_text(file));
	json_object_set_new(o, "format", json_string("expertpack-v1"));
	json_object_set_new(o, "valid", json_false());
	cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	return cli_exit_status(err->code);
}

static int print_result(const struct cli_build_ep *a, const struct mp_epw_plan *p,
			const struct mp_epw_result *r)
{
	char shown[CLI_TEXT_MAX], man[CLI_TEXT_MAX], src[CLI_TEXT_MAX];
	json_t *o;

	if (a->quiet && !a->json)
		return CLI_EXIT_OK;
	if (!a->json) {
		printf("%s: built from %s (SGLANG-EXPERTPACK-v1, %llu layers x %llu experts, "
		       "%llu entries, %llu bytes, %llu objects copied, %llu kept, %.1f s); manifest "
		       "%s; validated, every entry compared with the GGUF; sha256 %s\n",
		       cli_text(shown, r->pack_path), cli_text(src, a->o.gguf_path),
		       (unsigned long long)p->layers, (unsigned long long)p->experts,
		       (unsigned long long)r->entries, (unsigned long long)r->size,
		       (unsigned long long)r->objects_copied, (unsigned long long)r->objects_kept,
		       r->seconds, cli_text(man, r->manifest_path), r->pack_sha256);
		return CLI_EXIT_OK;
	}
	o = cli_json_result(MP_OK, "built", "", r->pack_path);
	json_object_set_new(o, "file", cli_json_text(r->pack_path));
	json_object_set_new(o, "manifest", cli_json_text(r->manifest_path));
	json_object_set_new(o, "format", json_string("expertpack-v1"));
	json_object_set_new(o, "valid", json_true());
	json_object_set_new(o, "built", json_true());
	json_object_set_new(o, "entries", json_integer((json_int_t)r->entries));
	json_object_set_new(o, "size", json_integer((json_int_t)r->size));
	json_object_set_new(o, "resumed_objects", json_integer((json_int_t)r->objects_kept));
	json_object_set_new(o, "objects_copied", json_integer((json_int_t)r->objects_copied));
	json_object_set_new(o, "bytes_copied", json_integer((json_int_t)r->bytes_copied));
	json_object_set_new(o, "seconds", json_real(r->seconds));
	json_object_set_new(o, "index_sha256", json_string(r->index_sha256));
	json_object_set_new(o, "inventory_sha256", json_string(r->inventory_sha256));
	json_object_set_new(o, "sha256", json_string(r->pack_sha256));
	return cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER) ? CLI_EXIT_IO : CLI_EXIT_OK;
}

/* --check-only: the pack at --out (or the default name) judged with every
 * check against the GGUF, nothing written. */
static int check_only(const struct cli_build_ep *a, const struct mp_epw_plan *p)
{
	struct mp_error err = {0};
	struct mp_ep *ep = NULL;
	struct mp_ep_opts eo = {.manifest_path = a->o.manifest, .expect_layers = p->layers,
				.expect_experts = p->experts, .expect_top_k = p->top_k,
				.full = true, .source_path = a->o.gguf_path,
				.samples = p->index_count};
	char *dir = NULL, *pack = NULL, shown[CLI_TEXT_MAX];
	const char *base;
	enum mp_err rc;

	if (!a->o.out) {
		mp_path_split(a->o.gguf_path, &dir, &base);
		pack = dir ? mp_path_join(dir, MP_EPW_DEFAULT_NAME) : NULL;
		free(dir);
	} else {
		pack = strdup(a->o.out);
	}
	if (!pack) {
		mp_fail(&err, MP_E_NOMEM, "out of memory");
		return report(a, a->o.gguf_path, &err);
	}
	rc = mp_ep_open(&ep, pack, &eo, &err);
	mp_ep_close(ep);
	if (rc) {
		int status = report(a, pack, &err);

		free(pack);
		return rc == MP_E_PACK_IO ? CLI_EXIT_INVALID : status;
	}
	if (!a->quiet && !a->json)
		printf("%s: valid (every entry compared with the GGUF)\n", cli_text(shown, pack));
	free(pack);
	return CLI_EXIT_OK;
}

static int build(const char *cmd, struct cli_build_ep *a, struct mp_epw_plan *p)
{
	struct progress_bar bar;
	struct mp_epw_result res = {0};
	struct mp_error err = {0};
	char *command = command_line(a->argc, a->argv);
	enum mp_err rc;
	int status;

	(void)cmd;
	a->o.command = command;
	a->o.cancel = cli_cancel_on_signal();
	progress_bar_init(&bar, stderr, "build", !a->quiet && !a->json);
	a->o.progress = progress_bar_update;
	a->o.progress_arg = &bar;
	rc = mp_epw_build(p, &a->o, &res, &err);
	progress_bar_finish(&bar);
	status = rc ? report(a, res.pack_path ? res.pack_path : a->o.gguf_path, &err)
		    : print_result(a, p, &res);
	mp_epw_result_free(&res);
	free(command);
	cli_die_of_cancel(rc, a->o.cancel);
	return status;
}

static int run(const char *cmd, struct cli_build_ep *a)
{
	struct mp_epw_plan p;
	struct mp_error err = {0};
	enum mp_err rc = mp_epw_plan_open(&p, a->o.gguf_path, a->o.config_path, &err);
	int status;

	if (rc)
		status = report(a, rc == MP_E_CONFIG_IO || rc == MP_E_CONFIG_MISMATCH
					   ? a->o.config_path : a->o.gguf_path, &err);
	else if (a->check_only)
		status = check_only(a, &p);
	else
		status = build(cmd, a, &p);
	mp_epw_plan_free(&p);
	return status;
}

int cli_ep_build(const char *cmd, const struct cli_build_args *b)
{
	struct cli_build_ep e = {
		.o = {.gguf_path = b->gguf, .config_path = b->config_path, .out = b->out,
		      .manifest = b->manifest, .model_ref = b->model_ref,
		      .resume = b->resume, .force = b->force, .margin = b->margin},
		.check_only = b->check_only, .json = b->json, .quiet = b->quiet,
		.argc = b->argc, .argv = b->argv,
	};

	if (b->tokenizer_dir || b->full_sha256 || b->samples_given || b->compare_all ||
	    b->any_geometry)
		return cli_usage_error(cmd, "--format expertpack-v1 always hashes and compares "
				       "every byte: no --tokenizer-dir, --full-sha256, --samples, "
				       "--compare-all or --any-geometry");
	return run(cmd, &e);
}

bool cli_ep_takes_gguf(const char *gguf)
{
	return mp_epw_gguf_is_mxfp4(gguf);
}
