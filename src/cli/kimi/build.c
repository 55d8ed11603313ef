/* build.c - `moepack build` of the Kimi pack (GGMLMOEPACKv1) from a GGUF
 * shard set: the inputs checked, the build, its report. */
#include "config.h"

#include "cli/kimi/kimi.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/kimi/shards.h"
#include "pack/progress.h"
#include "writer/kimi/build.h"
#include "writer/kimi/shards.h"

/* This half's options: the user's, as the Kimi builder takes them. */
struct args {
	const char *gguf;
	bool json, quiet;
	struct mp_gguf_build_opts o;
};

/* The set's kept problems as [{code, message}], for --json. */
static json_t *problems_json(const struct mp_shard_set *set)
{
	json_t *list = json_array();
	size_t kept = set ? cli_problems_kept(set) : 0;

	for (size_t i = 0; i < kept; i++) {
		json_t *p = json_object();

		json_object_set_new(p, "code", json_string(mp_err_name(set->problems[i].code)));
		json_object_set_new(p, "message", cli_json_text(set->problems[i].msg));
		json_array_append_new(list, p);
	}
	return list;
}

/*
 * A failed run: "moepack: FILE: message" on stderr, or with --json one
 * object on stdout instead, as verify and check-gguf do:
 * {"ok": false, "code", "message", "file" (the one at fault), "pack"
 * (when known), "manifest": null, "valid": false, "problem_count",
 * "problems"}.  Returns status.
 */
static int report_failure(const struct args *a, const char *file, const char *pack,
			  const struct mp_error *err, int status)
{
	json_t *o;

	if (!a->json)
		return cli_report(file, err);
	o = cli_json_result(err->code, "", err->msg, pack);
	json_object_set_new(o, "file", cli_json_text(file));
	json_object_set_new(o, "manifest", json_null());
	json_object_set_new(o, "valid", json_false());
	json_object_set_new(o, "problem_count", json_integer(0));
	json_object_set_new(o, "problems", json_array());
	cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	return status;
}

/* Each problem on its own line, "moepack: SET: ..." as check-gguf says
 * it (with --json in one object, the first one's code and message at its
 * head); the status of the worst. */
static int report_problems(const struct args *a, const struct mp_shard_set *set)
{
	char name[CLI_TEXT_MAX], shown[CLI_TEXT_MAX];
	int status;
	json_t *o;

	mp_shards_name(set, a->gguf, name, sizeof name);
	status = cli_shard_problems(set, cli_text(shown, name), !a->json);
	if (!a->json || !set->nproblems)
		return status;
	o = cli_json_result(set->problems[0].code, "", set->problems[0].msg, a->o.out);
	json_object_set_new(o, "file", cli_json_text(name));
	json_object_set_new(o, "manifest", json_null());
	json_object_set_new(o, "valid", json_false());
	json_object_set_new(o, "problem_count", json_integer((json_int_t)set->nproblems));
	json_object_set_new(o, "problems", problems_json(set));
	cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	return status;
}

static int print_summary_json(const struct args *a, const struct mp_shard_set *set,
			      const struct mp_gguf_build_result *r)
{
	json_t *o = cli_json_result(MP_OK, a->o.check_only ? "valid" : "built", "",
				    r->pack_path);

	json_object_set_new(o, "file", cli_json_text(r->pack_path));
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
	json_object_set_new(o, "samples_compared", json_integer((json_int_t)r->samples_compared));
	json_object_set_new(o, "sampled", json_boolean(r->sampled));
	json_object_set_new(o, "seconds", json_real(r->seconds));
	json_object_set_new(o, "chunks_checked", json_integer((json_int_t)r->chunks_checked));
	json_object_set_new(o, "chunks_recopied", json_integer((json_int_t)r->chunks_recopied));
	json_object_set_new(o, "restarted", r->notice[0] ? cli_json_text(r->notice) : json_null());
	json_object_set_new(o, "seal_digest", r->seal_digest[0] ? json_string(r->seal_digest)
								: json_null());
	json_object_set_new(o, "seal_unanchored", json_boolean(r->seal_unanchored));
	json_object_set_new(o, "index_sha256", json_string(r->index_sha256));
	json_object_set_new(o, "inventory_sha256", json_string(r->inventory_sha256));
	json_object_set_new(o, "sha256", r->sha256[0] ? json_string(r->sha256) : json_null());
	json_object_set_new(o, "problem_count", json_integer(0));
	json_object_set_new(o, "problems", json_array());
	return cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER) ? CLI_EXIT_IO : CLI_EXIT_OK;
}

static void print_checked(const struct mp_gguf_build_result *r)
{
	char shown[CLI_TEXT_MAX];

	if (r->sampled)
		printf("%s: valid by samples (%llu entries, %llu bytes, %llu sampled "
		       "entries compared; --compare-all compares every byte)\n",
		       cli_text(shown, r->pack_path), (unsigned long long)r->entries,
		       (unsigned long long)r->size, (unsigned long long)r->samples_compared);
	else
		printf("%s: valid (%llu entries, %llu bytes, every entry compared)\n",
		       cli_text(shown, r->pack_path), (unsigned long long)r->entries,
		       (unsigned long long)r->size);
}

/* What this run copied: a resumed build copied less. */
static void print_copied(const struct mp_gguf_build_result *r)
{
	char human[32];
	/* this run's bytes over this run's time */
	double rate = r->seconds > 0 ? (double)r->bytes_copied / r->seconds : 0;

	if (r->resumed_at)
		printf(", %s copied now", format_bytes(human, sizeof human, r->bytes_copied));
	printf(", %.1f s, %s/s", r->seconds, format_bytes(human, sizeof human, (uint64_t)rate));
	if (r->resumed_at)
		printf(", %llu chunks checked, %llu copied again",
		       (unsigned long long)r->chunks_checked,
		       (unsigned long long)r->chunks_recopied);
}

static void print_built(const struct mp_shard_set *set, const struct mp_gguf_build_result *r)
{
	char shown[CLI_TEXT_MAX], human[32];

	printf("%s: %s from %zu shard%s (%llu entries, %llu bytes, %s", cli_text(shown, r->pack_path),
	       r->reused ? "already valid, kept" : r->resumed_at ? "resumed and built" : "built",
	       set->count, set->count == 1 ? "" : "s", (unsigned long long)r->entries,
	       (unsigned long long)r->size, format_bytes(human, sizeof human, r->size));
	if (!r->reused)
		print_copied(r);
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
}

static int print_summary(const struct args *a, const struct mp_shard_set *set,
			 const struct mp_gguf_build_result *r)
{
	if (a->json)
		return print_summary_json(a, set, r);
	if (a->quiet)
		return CLI_EXIT_OK;
	if (a->o.check_only)
		print_checked(r);
	else
		print_built(set, r);
	return CLI_EXIT_OK;
}

/* The build's inputs: the shard set, its expert tensors and the config,
 * all checked; else the exit status (problems reported). */
struct inputs {
	struct mp_shard_set *set;
	struct mp_experts *ex;
	struct mp_model_config cfg;
};

static int open_inputs(const struct args *a, struct inputs *in)
{
	struct mp_error err = {0};
	enum mp_err rc = mp_shards_open(a->gguf, &in->set, &err);

	if (!in->set)
		return report_failure(a, a->gguf, a->o.out, &err, cli_exit_status(rc));
	in->ex = calloc(1, sizeof *in->ex);
	if (!in->ex) {
		mp_fail(&err, MP_E_NOMEM, "out of memory");
		return report_failure(a, a->gguf, a->o.out, &err, CLI_EXIT_IO);
	}
	if (!rc)
		rc = mp_shards_experts(in->set, a->o.kimi, in->ex);
	if (!rc) {
		rc = mp_model_config_check(a->o.config_path, in->set, a->o.kimi, in->ex,
					   &in->cfg, &err);
		if (rc && !in->set->nproblems)
			return report_failure(a, a->o.config_path, a->o.out, &err,
					      cli_exit_status(rc));
	}
	return rc ? report_problems(a, in->set) : CLI_EXIT_OK;
}

static void close_inputs(struct inputs *in)
{
	free(in->ex);
	mp_shards_close(in->set);
}

/* A failed build: its report, or death by the signal that stopped it, as
 * the caller expects. */
static int build_failed(const struct args *a, struct inputs *in, enum mp_err rc,
			struct mp_gguf_build_result *res, const struct mp_error *err)
{
	int status = cli_exit_status(rc);
	char name[CLI_TEXT_MAX];

	if (!res->pack_path)
		mp_shards_name(in->set, a->gguf, name, sizeof name);
	/* like the reference: a pack that cannot be read is not valid */
	if (a->o.check_only && rc == MP_E_PACK_IO)
		status = CLI_EXIT_INVALID;
	report_failure(a, res->pack_path ? res->pack_path : name,
		       res->pack_path ? res->pack_path : a->o.out, err, status);
	cli_die_of_cancel(rc, a->o.cancel);
	return status;
}

static int build(const char *cmd, struct args *a, struct inputs *in,
		 struct mp_gguf_build_result *res)
{
	struct progress_bar bar;
	struct mp_error err = {0};
	enum mp_err rc;

	/* a first signal stops the copy at an object boundary, durable for
	 * --resume, or any check at its next read */
	a->o.cancel = cli_cancel_on_signal();
	progress_bar_init(&bar, stderr, "build", !a->quiet && !a->json);
	a->o.progress = progress_bar_update;
	a->o.progress_arg = &bar;
	rc = mp_gguf_build(in->set, in->ex, &in->cfg, &a->o, res, &err);
	progress_bar_finish(&bar);
	if (rc)
		return build_failed(a, in, rc, res, &err);
	/* a resume that could not trust PACK.partial says why, in one line */
	if (res->notice[0] && !a->quiet && !a->json)
		fprintf(stderr, "moepack %s: %s\n", cmd, res->notice);
	/* stdout is flushed and checked once, by cli_build_run() */
	return print_summary(a, in->set, res);
}

int cli_kimi_build(const char *cmd, const struct cli_build_args *b)
{
	struct args a = {
		.gguf = b->gguf, .json = b->json, .quiet = b->quiet,
		.o = {.config_path = b->config_path, .out = b->out, .manifest = b->manifest,
		      .tokenizer_dir = b->tokenizer_dir, .kimi = !b->any_geometry,
		      .full_sha256 = b->full_sha256, .compare_all = b->compare_all,
		      .samples = b->samples_given ? b->samples : MP_BUILD_DEFAULT_SAMPLES,
		      .check_only = b->check_only, .resume = b->resume, .force = b->force,
		      .margin = b->margin},
	};
	struct inputs in = {0};
	struct mp_gguf_build_result res = {0};
	int status;

	if (b->model_ref) {
		cli_usage_error(cmd, "--model-ref is for --format expertpack-v1");
		return CLI_EXIT_USAGE;
	}
	if (!(status = open_inputs(&a, &in)))
		status = build(cmd, &a, &in, &res);
	mp_gguf_build_result_free(&res);
	close_inputs(&in);
	return status;
}
