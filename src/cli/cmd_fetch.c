/*
 * cmd_fetch.c - `moepack fetch`: a sealed pack copied from mirrors, every
 * chunk checked against the trusted seal before it is written
 * (fetch/fetch.h).  Here: the options, S3 credentials from the
 * environment or ~/.aws/credentials, the outputs checked against file://
 * inputs, the progress line and the reports.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "base/outfile.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "fetch/fetch.h"
#include "fetch/s3cred.h"
#include "seal/sign.h"
#include "writer/outputs.h"

struct fetch_args {
	const char *out, *trust, *expect, *s3_endpoint, *ca_file;
	bool unverified, s3_virtual, json, quiet;
	uint64_t connections, low_speed, low_speed_time, max_rate, jobs;
};

enum { OPT_TRUST = CLI_LONG_ONLY, OPT_EXPECT, OPT_UNVERIFIED, OPT_CONNECTIONS, OPT_S3_ENDPOINT,
       OPT_S3_VHOST, OPT_LOW_SPEED, OPT_LOW_SPEED_TIME, OPT_MAX_RATE, OPT_JOBS, OPT_CA_FILE };

#define A struct fetch_args
const struct cli_option cli_fetch_options[] = {
	CLI_OPT_TEXT("out", 'o', "PACK", "the pack to write (default: the first source's\n"
		     "file name, in the current directory)", A, out),
	CLI_OPT_TEXT("trust", OPT_TRUST, "PUB[:PUB...]", "trust a seal and manifest signed by one "
		     "of these\nEd25519 public keys (PEM)", A, trust),
	CLI_OPT_TEXT("expect-seal-sha256", OPT_EXPECT, "HEX", "trust the seal whose digest is HEX",
		     A, expect),
	CLI_OPT_TRUE("unverified-origin", OPT_UNVERIFIED, "fetch with neither: bytes match the "
		     "seal, whose\norigin is unproven", A, unverified),
	CLI_OPT_U64("connections", OPT_CONNECTIONS, "N", "range requests at once (default " MP_FETCH_DEFAULT_CONNECTIONS_TEXT ")", A,
		    connections, 0, 1, 256),
	CLI_OPT_TEXT("ca-file", OPT_CA_FILE, "FILE", "https: trust the CAs of this PEM file "
		     "instead of\nthe system's (default: CURL_CA_BUNDLE, else\nSSL_CERT_FILE)",
		     A, ca_file),
	CLI_OPT_TEXT("s3-endpoint", OPT_S3_ENDPOINT, "URL", "s3:// sources: the endpoint "
		     "(default: AWS_ENDPOINT_URL,\nelse AWS's for AWS_REGION)", A, s3_endpoint),
	CLI_OPT_TRUE("s3-virtual-hosted", OPT_S3_VHOST, "s3:// sources: BUCKET.HOST/KEY, not "
		     "HOST/BUCKET/KEY", A, s3_virtual),
	CLI_OPT_U64("low-speed", OPT_LOW_SPEED, "BYTES", "a request slower than BYTES/s for\n"
		    "--low-speed-time is ended (default 1K)", A, low_speed, CLI_NUM_SUFFIX, 0,
		    UINT64_MAX),
	CLI_OPT_U64("low-speed-time", OPT_LOW_SPEED_TIME, "S", "seconds of --low-speed (default 30)",
		    A, low_speed_time, 0, 1, 86400),
	CLI_OPT_U64("max-rate", OPT_MAX_RATE, "BYTES", "at most BYTES/s over all connections",
		    A, max_rate, CLI_NUM_SUFFIX, 1, UINT64_MAX),
	CLI_OPT_U64("jobs", OPT_JOBS, "N", "hash on N threads (default: one per CPU)", A, jobs,
		    0, 1, 64),
	CLI_OPT_JSON(CLI_HELP_JSON, A, json),
	CLI_OPT_QUIET("print nothing but errors and notes", A, quiet),
	{NULL},
};
#undef A

struct run {
	struct fetch_args a;
	struct mp_fetch_opts o;
	struct mp_fetch_result res;
	struct mp_fetch_s3_creds creds;
	char creds_from[4200];
	const char *keys[MP_MAX_TRUSTED_KEYS];
	char *trust_copy, *default_out;
	bool tty_progress;
};

static void on_note(const char *line, void *arg)
{
	struct run *r = arg;

	if (r->tty_progress)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "moepack fetch: %s\n", line);
}

static void on_progress(const struct mp_fetch_progress *p, void *arg)
{
	struct run *r = arg;
	double rate = p->seconds > 0 ? (double)p->fetched_bytes / p->seconds : 0;
	double eta = rate > 0 ? (double)(p->total_bytes - p->done_bytes) / rate : 0;

	if (!r->tty_progress)
		return;
	fprintf(stderr, "\r\033[K%.1f/%.1f MiB  %.1f MiB/s  ETA %.0f s  mirrors %u  re-fetched %llu",
		(double)p->done_bytes / 1048576.0, (double)p->total_bytes / 1048576.0,
		rate / 1048576.0, eta, p->mirrors_active, (unsigned long long)p->refetched_chunks);
}

/* The CA file https trusts: --ca-file, else as curl(1) picks it
 * (mp_fetch_ca_file_default). */
static const char *ca_file(const struct fetch_args *a)
{
	return a->ca_file ? a->ca_file : mp_fetch_ca_file_default();
}

static int options(struct run *r, struct cli_operands *ops, const char *cmd)
{
	const struct fetch_args *a = &r->a;
	int nkeys = 0;

	if (a->trust) {
		if (!(r->trust_copy = strdup(a->trust)))
			return CLI_EXIT_IO;
		if ((nkeys = mp_trust_list_split(r->trust_copy, r->keys)) <= 0)
			return cli_usage_error(cmd, "--trust names %s", nkeys ? "too many keys"
								      : "no key");
	}
	if (!a->out && !(r->default_out = mp_fetch_source_name(ops->v[0])))
		return cli_usage_error(cmd, "the first source names no file: give --out");
	r->o = (struct mp_fetch_opts){
		.sources = (const char *const *)ops->v, .nsources = (size_t)ops->n,
		.out = a->out ? a->out : r->default_out, .trust_keys = r->keys,
		.ntrust = (size_t)nkeys, .expect_seal_sha256 = a->expect,
		.unverified_origin = a->unverified, .connections = (unsigned)a->connections,
		.low_speed = a->low_speed ? a->low_speed : 1024,
		.low_speed_time = a->low_speed_time ? (long)a->low_speed_time : 30,
		.max_rate = a->max_rate, .hash_threads = (unsigned)a->jobs,
		.s3 = mp_fetch_s3_config_from_env(a->s3_endpoint, a->s3_virtual),
		.s3_key_id = r->creds.key_id, .s3_secret = r->creds.secret,
		.s3_token = r->creds.token, .s3_key_from = r->creds_from,
		.ca_file = ca_file(a), .ca_path = getenv("SSL_CERT_DIR"),
		.note = on_note, .note_arg = r,
		.progress = on_progress, .progress_arg = r, .cancel = cli_cancel_on_signal()};
	return CLI_EXIT_OK;
}

/* No output may be a file:// source's pack or a file beside it. */
static enum mp_err check_outputs(const struct run *r, struct mp_error *err)
{
	static const char *const beside[] = {"", ".manifest.json", MP_SEAL_SUFFIX,
					     MP_STATEMENT_SUFFIX, MP_SIG_SUFFIX};
	static const char *const outs[] = {"", ".partial", ".partial.state", ".lock",
					   ".manifest.json", MP_SEAL_SUFFIX, MP_STATEMENT_SUFFIX,
					   MP_SIG_SUFFIX};
	struct mp_path_set set;
	enum mp_err rc = MP_OK;

	mp_path_set_init(&set);
	for (size_t i = 0; rc == MP_OK && i < r->o.nsources; i++) {
		const char *s = r->o.sources[i];

		if (strncmp(s, "file://", 7) != 0)
			continue;
		s += strncmp(s + 7, "localhost/", 10) == 0 ? 16 : 7;
		for (size_t k = 0; rc == MP_OK && k < sizeof beside / sizeof *beside; k++) {
			char *p = mp_path_with_suffix(s, beside[k]);

			if (p && access(p, F_OK) == 0)
				rc = mp_path_set_input(&set, p, "source", err);
			free(p);
		}
	}
	for (size_t k = 0; rc == MP_OK && k < sizeof outs / sizeof *outs; k++) {
		char *p = mp_path_with_suffix(r->o.out, outs[k]);

		rc = p ? mp_path_set_output(&set, p, "output", err)
		       : mp_fail(err, MP_E_NOMEM, "out of memory");
		free(p);
	}
	if (rc == MP_OK)
		rc = mp_path_set_check(&set, err);
	mp_path_set_free(&set);
	return rc;
}

static const char unproven[] = "origin unproven: the bytes match the seal, but no --trust "
			       "or --expect-seal-sha256 vouched for the seal";

static json_t *mirror_json(const struct mp_fetch_mirror_report *m)
{
	return json_pack("{s:o, s:b, s:b, s:o, s:I, s:I, s:I, s:I, s:I, s:o}", "source",
			 cli_json_text(m->source), "refused", m->refused, "dropped", m->dropped,
			 "why", m->why[0] ? cli_json_text(m->why) : json_null(), "bytes",
			 (json_int_t)m->bytes, "chunks_good", (json_int_t)m->chunks_good,
			 "chunks_bad", (json_int_t)m->chunks_bad, "failures",
			 (json_int_t)m->failures, "backoffs", (json_int_t)m->backoffs,
			 "http_version", m->http_version[0] ? json_string(m->http_version)
							    : json_null());
}

static int report_json(const struct run *r, enum mp_err rc, const struct mp_error *err)
{
	const struct mp_fetch_result *s = &r->res;
	json_t *o = cli_json_result(rc, "fetched", err->msg, r->o.out), *ms = json_array();

	for (size_t i = 0; i < s->nmirrors; i++)
		json_array_append_new(ms, mirror_json(&s->mirrors[i]));
	json_object_set_new(o, "error", rc ? json_string(mp_err_name(rc)) : json_null());
	json_object_set_new(o, "renamed", json_boolean(s->renamed));
	json_object_set_new(o, "origin_proven", json_boolean(s->origin_proven));
	json_object_set_new(o, "trusted_by", json_string(s->trusted_by));
	json_object_set_new(o, "note", s->origin_proven ? json_null() : json_string(unproven));
	json_object_set_new(o, "seal_sha256", s->seal_sha256[0] ? json_string(s->seal_sha256)
								: json_null());
	json_object_set_new(o, "size", json_integer((json_int_t)s->pack_size));
	json_object_set_new(o, "chunks", json_integer((json_int_t)s->chunk_count));
	json_object_set_new(o, "chunks_kept", json_integer((json_int_t)s->chunks_kept));
	json_object_set_new(o, "chunks_fetched", json_integer((json_int_t)s->chunks_fetched));
	json_object_set_new(o, "chunks_refetched", json_integer((json_int_t)s->chunks_refetched));
	json_object_set_new(o, "bytes_fetched", json_integer((json_int_t)s->bytes_fetched));
	json_object_set_new(o, "seconds", json_real(s->seconds));
	json_object_set_new(o, "mirrors", ms);
	cli_print_json(o, JSON_INDENT(2));
	return cli_exit_status(rc);
}

static int report_text(const struct run *r, enum mp_err rc, const struct mp_error *err)
{
	const struct mp_fetch_result *s = &r->res;
	char t[CLI_TEXT_MAX];

	if (r->tty_progress)
		fputs("\r\033[K", stderr);
	if (rc) {
		if (!s->origin_proven && s->seal_sha256[0] && r->a.unverified)
			fprintf(stderr, "moepack fetch: %s\n", unproven);
		return cli_report(r->o.out, err);
	}
	if (r->a.quiet)
		return CLI_EXIT_OK;
	cli_text(t, r->o.out);
	printf("%s: fetched %llu bytes: %llu chunks, %llu kept from an earlier run, %llu "
	       "re-fetched after bad bytes; %llu bytes received in %.1f s\n", t,
	       (unsigned long long)s->pack_size, (unsigned long long)s->chunk_count,
	       (unsigned long long)s->chunks_kept, (unsigned long long)s->chunks_refetched,
	       (unsigned long long)s->bytes_fetched, s->seconds);
	for (size_t i = 0; i < s->nmirrors; i++)
		if (s->mirrors[i].chunks_bad)
			printf("%s: mirror %s sent %llu bad chunks\n", t,
			       cli_text((char[CLI_TEXT_MAX]){0}, s->mirrors[i].source),
			       (unsigned long long)s->mirrors[i].chunks_bad);
	printf("%s: seal %s, trusted by %s\n", t, s->seal_sha256, s->trusted_by);
	if (!s->origin_proven)
		printf("%s: %s\n", t, unproven);
	printf("mount it with: moepackfs -o verify=seal %s MOUNTPOINT\n", t);
	return CLI_EXIT_OK;
}

int cli_fetch_run(int argc, char **argv)
{
	struct run *r = calloc(1, sizeof *r);
	struct cli_operands ops;
	struct mp_error err = {0};
	enum cli_parse p;
	enum mp_err rc;
	int status;

	if (!r)
		return CLI_EXIT_IO;
	p = cli_parse(&cli_fetch_command, argc, argv, &r->a, &ops);
	status = p != CLI_RUN ? cli_parse_status(p, argv[0]) : options(r, &ops, argv[0]);
	if (p == CLI_RUN && status == CLI_EXIT_OK) {
		r->tty_progress = !r->a.quiet && !r->a.json && isatty(STDERR_FILENO);
		mp_fetch_s3_creds_load(&r->creds, r->creds_from, sizeof r->creds_from);
		rc = check_outputs(r, &err);
		if (rc == MP_OK && (rc = mp_fetch_global_init(&err)) == MP_OK) {
			rc = mp_fetch_run(&r->o, &r->res, &err);
			mp_fetch_global_cleanup();
		}
		status = r->a.json ? report_json(r, rc, &err) : report_text(r, rc, &err);
		status = cli_finish(argv[0], status);
		cli_die_of_cancel(rc, r->o.cancel);
	}
	mp_fetch_result_free(&r->res);
	free(r->trust_copy);
	free(r->default_out);
	free(r);
	return status;
}
