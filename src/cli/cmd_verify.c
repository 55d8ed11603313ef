/* cmd_verify.c - `moepack verify`: the reference loader's checks, as a tool. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <inttypes.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "pack/digest.h"
#include "pack/progress.h"
#include "payload/scan.h"
#include "payload/scanreport.h"
#include "seal/entryseal.h"
#include "seal/seal.h"
#include "seal/sign.h"

/* Lines naming bad chunks at most; the rest are counted. */
#define MAX_BAD_LINES 100

enum {
	OPT_EXPECT_LAYERS = CLI_LONG_ONLY, OPT_EXPECT_EXPERTS, OPT_JOBS, OPT_TRUST, OPT_FULL,
	OPT_EXPECT_TOP_K, OPT_EXPECT_SOURCE, OPT_EXPECT_IDENTITY, OPT_EXPECT_CONFIG, OPT_SOURCE,
	OPT_ENTRIES,
};

struct verify_args {
	bool json, quiet, payload, seal, entries;
	uint64_t jobs;
	const char *trust[MP_MAX_TRUSTED_KEYS];
	size_t ntrust;
	char *trust_list; /* --trust's text, split in place */
	const char *pack;
	struct mp_open_opts open;
};

#define A struct verify_args
const struct cli_option cli_verify_options[] = {
	CLI_OPT_TRUE("full", OPT_FULL, "also check the whole file's SHA-256 the manifest\n"
		     "records (reads every byte; SGLANG-EXPERTPACK-v1:\n"
		     "and every role's checksum)", A, open.full),
	CLI_OPT_TRUE("payload", 'p', "scan every block's fp16 scales and every role:\n"
		     "report non-finite scales, all-zero roles and\n"
		     "experts whose scales are all zero (with --full,\n"
		     "in the same single read of the pack)", A, payload),
	CLI_OPT_JSON(CLI_HELP_JSON, A, json),
	CLI_OPT_QUIET("print nothing unless the pack is invalid", A, quiet),
	CLI_OPT_MANIFEST(A, open.manifest_path),
	CLI_OPT_U64("expect-layers", OPT_EXPECT_LAYERS, "N",
		    "require the model's layer count to be N", A, open.expect_layers, 0, 1,
		    UINT64_MAX),
	CLI_OPT_U64("expect-experts", OPT_EXPECT_EXPERTS, "N",
		    "require N experts per layer", A, open.expect_experts, 0, 1,
		    UINT64_MAX),
	CLI_OPT_TEXT("config", 'c', "FILE", "require the recorded config SHA-256 to be FILE's",
		     A, open.config_path),
	CLI_OPT_U64("expect-top-k", OPT_EXPECT_TOP_K, "N",
		    "SGLANG-EXPERTPACK-v1: require top-k N", A, open.expect_top_k, 0, 1,
		    UINT64_MAX),
	CLI_OPT_TEXT("expect-source-sha256", OPT_EXPECT_SOURCE, "HEX",
		     "SGLANG-EXPERTPACK-v1: require this source digest",
		     A, open.expect_source_sha256),
	CLI_OPT_TEXT("expect-model-identity-sha256", OPT_EXPECT_IDENTITY, "HEX",
		     "SGLANG-EXPERTPACK-v1: require this model identity",
		     A, open.expect_model_identity_sha256),
	CLI_OPT_TEXT("expect-config-sha256", OPT_EXPECT_CONFIG, "HEX",
		     "SGLANG-EXPERTPACK-v1: require this config digest",
		     A, open.expect_config_sha256),
	CLI_OPT_TEXT("source", OPT_SOURCE, "GGUF",
		     "SGLANG-EXPERTPACK-v1: check the pack against its\n"
		     "source GGUF (sizes, digests, 96 sampled slices;\n"
		     "with --full every tensor and the whole file)", A, open.source_path),
	CLI_OPT_TRUE("entries", OPT_ENTRIES, "check every role against the SHA-256 its index\n"
		     "entry records, on all cores; name each bad one\n"
		     "(formats whose index records them)", A, entries),
	CLI_OPT_TRUE("seal", 's', "check every chunk against PACK.seal, on all\n"
		     "cores; name the layer, expert and role of each\n"
		     "bad chunk", A, seal),
	CLI_OPT_U64("jobs", OPT_JOBS, "N", "--seal: hash on N threads (default: one per CPU)",
		    A, jobs, 0, 1, 64),
	CLI_OPT_CALL("trust", OPT_TRUST, "PUB[:PUB...]",
		     "require PACK.sig: a signature by one of these\n"
		     "Ed25519 public keys over this pack, its seal\n"
		     "and its manifest (',' separates them too)"),
	{NULL},
};
#undef A

/* --trust PUB[:PUB...] (or with commas): the last one given counts. */
enum cli_parse cli_verify_on_option(void *args, int key, const char *arg,
				    const char *cmd)
{
	struct verify_args *a = args;
	int n;

	(void)key;
	free(a->trust_list);
	a->ntrust = 0;
	if (!(a->trust_list = strdup(arg))) {
		cli_usage_error(cmd, "out of memory");
		return CLI_USAGE_ERROR;
	}
	n = mp_trust_list_split(a->trust_list, a->trust);
	if (n < 0) {
		cli_usage_error(cmd, "--trust takes at most %u keys", MP_MAX_TRUSTED_KEYS);
		return CLI_USAGE_ERROR;
	}
	if (n == 0) {
		cli_usage_error(cmd, "--trust needs a key file");
		return CLI_USAGE_ERROR;
	}
	a->ntrust = (size_t)n;
	return CLI_RUN;
}

static enum cli_parse parse_args(int argc, char **argv, struct verify_args *a)
{
	struct cli_operands ops;
	enum cli_parse p = cli_parse(&cli_verify_command, argc, argv, a, &ops);

	if (p != CLI_RUN)
		return p;
	if (a->jobs && !a->seal && !a->entries) {
		cli_usage_error(argv[0], "--jobs needs --seal or --entries");
		return CLI_USAGE_ERROR;
	}
	a->pack = ops.v[0];
	return CLI_RUN;
}

/* What --seal and --trust (or --entries) found, for printing. */
struct sealcheck {
	bool ran, checked, trusted;
	bool entries;               /* the index's digests, not a seal file */
	struct mp_seal *seal;
	struct mp_seal_layout l;
	const struct mp_pack *pack;
	const char *pack_path;
	bool json;
	uint64_t bad;               /* chunks that differ */
	json_t *bad_list;           /* --json: the first MAX_BAD_LINES */
};

static void on_bad_chunk(uint64_t chunk, void *arg)
{
	struct sealcheck *sc = arg;
	char desc[160], shown[CLI_TEXT_MAX];
	struct mp_seal_chunk ch;

	sc->bad++;
	if (sc->bad > MAX_BAD_LINES)
		return;
	mp_seal_chunk_get(&sc->l, chunk, &ch);
	mp_seal_chunk_describe(sc->pack, &sc->l, chunk, desc, sizeof desc);
	if (sc->json && sc->entries) {
		json_t *o = json_object();
		json_object_set_new(o, "offset", json_integer((json_int_t)ch.offset));
		json_object_set_new(o, "length", json_integer((json_int_t)ch.len));
		json_object_set_new(o, "where", json_string(desc));
		json_array_append_new(sc->bad_list, o);
		return;
	}
	if (sc->json) {
		json_t *o = json_object();
		json_object_set_new(o, "chunk", json_integer((json_int_t)chunk));
		json_object_set_new(o, "offset", json_integer((json_int_t)ch.offset));
		json_object_set_new(o, "length", json_integer((json_int_t)ch.len));
		json_object_set_new(o, "where", json_string(desc));
		json_array_append_new(sc->bad_list, o);
		return;
	}
	if (sc->entries)
		printf("%s: %s: bytes %" PRIu64 "..%" PRIu64 " %s\n",
		       cli_text(shown, sc->pack_path), desc, ch.offset, ch.offset + ch.len - 1,
		       ch.part == MP_SEAL_ROLE ? "do not match the SHA-256 of its index entry"
					       : "changed while the pack was checked");
	else
		printf("%s: bad chunk %" PRIu64 " (bytes %" PRIu64 "..%" PRIu64 "): %s\n",
		       cli_text(shown, sc->pack_path), chunk, ch.offset, ch.offset + ch.len - 1,
		       desc);
}

/* --entries: every role against its index entry's SHA-256, on all cores. */
static enum mp_err run_entries(const struct verify_args *a, struct mp_pack *pack,
			       struct sealcheck *ec, struct progress_bar *bar,
			       struct mp_error *err)
{
	enum mp_err rc;

	ec->ran = ec->entries = true;
	rc = mp_entry_seal_make(&ec->seal, &ec->l, pack, err);
	if (rc != MP_OK)
		return rc;
	if (a->json && !(ec->bad_list = json_array()))
		return mp_fail(err, MP_E_NOMEM, "out of memory checking %s", pack->file.path);
	rc = mp_seal_check_part(pack->file.fd, pack->file.path, ec->seal, &ec->l, (unsigned)a->jobs, true,
				progress_bar_update, bar, on_bad_chunk, ec, err);
	progress_bar_finish(bar);
	ec->checked = rc == MP_OK || rc == MP_E_SEAL_CHUNK;
	if (rc == MP_E_SEAL_CHUNK) {
		char shown[CLI_TEXT_MAX];

		if (!a->json && ec->bad > MAX_BAD_LINES)
			printf("%s: ... and %" PRIu64 " more bad roles\n",
			       cli_text(shown, ec->pack_path), ec->bad - MAX_BAD_LINES);
		rc = mp_fail(err, MP_E_SEAL_CHUNK, "pack bytes differ from the SHA-256 their "
			     "index entries record: %" PRIu64 " of %" PRIu64 " roles",
			     ec->bad, pack->index_count);
	}
	return rc;
}

static void entries_summary(const struct sealcheck *ec)
{
	char shown[CLI_TEXT_MAX];

	if (ec->checked && !ec->bad)
		printf("%s: entries ok: %" PRIu64 " roles match the SHA-256 of their index "
		       "entries\n", cli_text(shown, ec->pack_path), ec->pack->index_count);
}

static void entries_json_fields(json_t *o, const struct verify_args *a,
				const struct sealcheck *ec)
{
	if (!a->entries)
		return;
	json_object_set_new(o, "entries_checked", json_boolean(ec->checked));
	json_object_set_new(o, "bad_entry_count", json_integer((json_int_t)ec->bad));
	json_object_set_new(o, "bad_entries",
			    ec->bad_list ? json_incref(ec->bad_list) : json_array());
}

/* --seal and --trust on a pack that passed its other checks. */
static enum mp_err run_seal(const struct verify_args *a, struct mp_pack *pack,
			    struct sealcheck *sc, struct progress_bar *bar, struct mp_error *err)
{
	enum mp_err rc;

	sc->ran = true;
	rc = cli_load_seal(pack, &sc->seal, &sc->l, err);
	if (rc != MP_OK)
		return rc;
	if (a->ntrust) {
		rc = mp_trust_check(pack, sc->seal, a->trust, a->ntrust, err);
		if (rc != MP_OK)
			return rc;
		sc->trusted = true;
	}
	if (!a->seal)
		return MP_OK;
	if (a->json && !(sc->bad_list = json_array()))
		return mp_fail(err, MP_E_NOMEM, "out of memory checking %s", pack->file.path);
	rc = mp_seal_check_file(pack->file.fd, pack->file.path, sc->seal, &sc->l, (unsigned)a->jobs,
				progress_bar_update, bar, on_bad_chunk, sc, err);
	progress_bar_finish(bar);
	if (rc == MP_OK || rc == MP_E_SEAL_CHUNK)
		sc->checked = true;
	if (rc == MP_E_SEAL_CHUNK && !a->json && sc->bad > MAX_BAD_LINES) {
		char shown[CLI_TEXT_MAX];
		printf("%s: ... and %" PRIu64 " more bad chunks\n", cli_text(shown, sc->pack_path),
		       sc->bad - MAX_BAD_LINES);
	}
	return rc;
}

/*
 * Whether this run proved the seal anchored (made from the bytes whose
 * digest the manifest records): the whole file's digest checked (--full),
 * or a trusted signature that binds the seal to it.  What the seal says
 * of itself proves nothing: anyone who can write it can say so.
 */
static bool anchor_proven(const struct sealcheck *sc)
{
	return !mp_seal_unanchored(sc->seal) && (sc->trusted || sc->pack->full_checked);
}

static const char seal_unproven_note[] =
	"the seal says it is anchored to expert_pack.sha256; this run did not prove it "
	"(--full or --trust does)";

static void seal_summary(const struct sealcheck *sc)
{
	char shown[CLI_TEXT_MAX], hex[MP_SHA256_HEX];

	if (!sc->seal)
		return;
	cli_text(shown, sc->pack_path);
	mp_sha256_hex(sc->seal->seal_digest, hex);
	if (sc->checked)
		printf("%s: seal ok: %" PRIu64 " chunks checked, seal sha256 %s\n", shown,
		       sc->seal->chunk_count, hex);
	else
		printf("%s: seal matches the pack (chunks not read), seal sha256 %s\n", shown, hex);
	if (mp_seal_unanchored(sc->seal))
		printf("%s: %s\n", shown, seal_unanchored_note);
	else if (!anchor_proven(sc))
		printf("%s: %s\n", shown, seal_unproven_note);
	if (sc->trusted)
		printf("%s: signature ok: signed by a trusted key\n", shown);
}

static void seal_json_fields(json_t *o, const struct verify_args *a, const struct sealcheck *sc)
{
	char hex[MP_SHA256_HEX];

	if (!a->seal && !a->ntrust)
		return;
	if (sc->seal) {
		mp_sha256_hex(sc->seal->seal_digest, hex);
		json_object_set_new(o, "seal_sha256", json_string(hex));
		json_object_set_new(o, "seal_anchored", json_boolean(anchor_proven(sc)));
		json_object_set_new(o, "seal_anchored_claim",
				    json_boolean(!mp_seal_unanchored(sc->seal)));
		if (mp_seal_unanchored(sc->seal))
			json_object_set_new(o, "seal_note", json_string(seal_unanchored_note));
		else if (!anchor_proven(sc))
			json_object_set_new(o, "seal_note", json_string(seal_unproven_note));
		json_object_set_new(o, "seal_chunks",
				    json_integer((json_int_t)sc->seal->chunk_count));
	} else {
		json_object_set_new(o, "seal_sha256", json_null());
	}
	if (a->seal) {
		json_object_set_new(o, "seal_checked", json_boolean(sc->checked));
		json_object_set_new(o, "bad_chunk_count", json_integer((json_int_t)sc->bad));
		json_object_set_new(o, "bad_chunks",
				    sc->bad_list ? json_incref(sc->bad_list) : json_array());
	}
	if (a->ntrust)
		json_object_set_new(o, "signature_trusted", json_boolean(sc->trusted));
}

/* What the payload scan found, for printing. */
struct payload {
	bool done;                     /* the scan ran to the end */
	struct mp_scan_summary sum;
	struct mp_scan_problem *list;  /* --json: kept for the end */
	size_t n, cap;
	bool nomem;
	const char *pack_path;         /* text: each line starts with it */
	struct mp_scan_runs runs;      /* text: runs of experts with the same findings */
};

static void print_problem_line(const char *line, void *arg)
{
	const struct payload *pl = arg;
	char shown[CLI_TEXT_MAX];

	printf("%s: %s\n", cli_text(shown, pl->pack_path), line);
}

static void on_problem(const struct mp_scan_problem *p, void *arg)
{
	struct payload *pl = arg;

	if (!pl->list && pl->cap == 0) {
		mp_scan_runs_add(&pl->runs, p);
		return;
	}
	if (pl->n == pl->cap) {
		size_t cap = pl->cap * 2;
		struct mp_scan_problem *l = realloc(pl->list, cap * sizeof *l);

		if (!l) {
			pl->nomem = true;
			return;
		}
		pl->list = l;
		pl->cap = cap;
	}
	pl->list[pl->n++] = *p;
}

static bool payload_bad(const struct payload *pl)
{
	return mp_scan_problem_total(&pl->sum) != 0;
}

static json_t *problem_json(const struct mp_scan_problem *p)
{
	json_t *o = json_object();

	json_object_set_new(o, "kind", json_string(p->kind == MP_SCAN_NONFINITE_SCALE
							   ? "nonfinite_scale"
						   : p->kind == MP_SCAN_ZERO_ROLE ? "zero_role"
										  : "zero_scales"));
	json_object_set_new(o, "layer", json_integer(p->layer));
	json_object_set_new(o, "expert", json_integer((json_int_t)p->expert));
	json_object_set_new(o, "role", p->role < MP_ROLE_COUNT
					       ? json_string(mp_role_name(p->role))
					       : json_null());
	if (p->kind == MP_SCAN_NONFINITE_SCALE) {
		char hex[8];

		mp_scan_problem_raw_scale(hex, sizeof hex, p);
		json_object_set_new(o, "count", json_integer((json_int_t)p->count));
		json_object_set_new(o, "first_block", json_integer((json_int_t)p->first_block));
		json_object_set_new(o, "first_scale", json_string(p->first_scale));
		json_object_set_new(o, "first_value", json_string(hex));
	}
	if (p->kind == MP_SCAN_ZERO_ROLE)
		json_object_set_new(o, "hole", json_boolean(p->hole));
	return o;
}

static json_t *summary_json(const struct payload *pl)
{
	const struct mp_scan_summary *s = &pl->sum;
	json_t *o = json_object();

	json_object_set_new(o, "roles", json_integer((json_int_t)s->roles));
	json_object_set_new(o, "experts", json_integer((json_int_t)s->experts));
	json_object_set_new(o, "blocks", json_integer((json_int_t)s->blocks));
	json_object_set_new(o, "nonfinite_scales", json_integer((json_int_t)s->nonfinite_scales));
	json_object_set_new(o, "nonfinite_roles", json_integer((json_int_t)s->nonfinite_roles));
	json_object_set_new(o, "zero_roles", json_integer((json_int_t)s->zero_roles));
	json_object_set_new(o, "hole_roles", json_integer((json_int_t)s->hole_roles));
	json_object_set_new(o, "zero_scale_experts",
			    json_integer((json_int_t)s->zero_scale_experts));
	json_object_set_new(o, "zero_scale_roles", json_integer((json_int_t)s->zero_scale_roles));
	json_object_set_new(o, "unwritten", json_boolean(s->roles && s->zero_roles == s->roles));
	return o;
}

/* The object without the problem list. */
static json_t *verify_json(const struct verify_args *a, const struct mp_pack *pack,
			   const struct mp_error *err, const struct payload *pl,
			   const struct sealcheck *sc, const struct sealcheck *ec)
{
	char *manifest = pack ? NULL : cli_manifest_path(a->pack, a->open.manifest_path);
	bool ok = pack != NULL && err->code == MP_OK;
	json_t *o = cli_json_result(err->code, "valid", err->msg, a->pack);

	json_object_set_new(o, "manifest",
			    cli_json_text(pack ? pack->file.manifest_path : manifest));
	/* only a pack that passed is vouched for: a digest next to "ok":
	 * false (payload, full digest, ...) would read as a valid identity */
	json_object_set_new(o, "index_sha256",
			    ok ? json_string(pack->m.index_sha256) : json_null());
	json_object_set_new(o, "full_sha256_checked",
			    json_boolean(pack && pack->full_checked));
	json_object_set_new(o, "warnings", cli_warnings_json(pack));
	if (a->payload)
		json_object_set_new(o, "payload", pl->done ? summary_json(pl) : json_null());
	seal_json_fields(o, a, sc);
	entries_json_fields(o, a, ec);
	free(manifest);
	return o;
}

/* text is the object's JSON: drop its closing brace, add the problems, close
 * again.  Returns jansson's status. */
static int print_with_problems(char *text, const struct payload *pl)
{
	int rc = 0;

	text[strlen(text) - 1] = '\0';
	printf("%s,\"problems\":[", text);
	for (size_t i = 0; i < pl->n && rc == 0; i++) {
		json_t *p = problem_json(&pl->list[i]);

		if (i)
			putchar(',');
		rc = json_dumpf(p, stdout, JSON_PRESERVE_ORDER | JSON_COMPACT);
		json_decref(p);
	}
	printf("]}\n");
	return rc;
}

/*
 * The problem list can be long (every role of a sparse Kimi K3 pack), so
 * it is written one problem at a time after the rest of the object rather
 * than built as one JSON tree.
 */
static int print_json(const struct verify_args *a, const struct mp_pack *pack,
		      const struct mp_error *err, const struct payload *pl,
		      const struct sealcheck *sc, const struct sealcheck *ec)
{
	json_t *o = verify_json(a, pack, err, pl, sc, ec);
	char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	int rc = 0;

	json_decref(o);
	if (!text)
		return CLI_EXIT_IO;
	if (!a->payload)
		printf("%s\n", text);
	else
		rc = print_with_problems(text, pl);
	free(text);
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
	/* both layer counts: --expect-layers compares num_hidden_layers (93),
	 * the pack holds the MoE layers (92) */
	printf("%s: valid (%s %llu, %zu MoE layers x %llu expert%s, "
	       "index sha256 %.16s..., %s)\n",
	       cli_text(shown, pack->file.path), pack->format->layers_key,
	       (unsigned long long)pack->m.model_layers,
	       pack->m.layer_count, (unsigned long long)pack->m.num_experts,
	       pack->m.num_experts == 1 ? "" : "s", pack->m.index_sha256, full);
}

static void print_payload_summary(const char *path, const struct payload *pl)
{
	const struct mp_scan_summary *s = &pl->sum;
	char zero_scale_roles[64] = "", shown[CLI_TEXT_MAX];

	/* only a type that judges a role by its scales alone (MXFP4) counts them */
	if (s->zero_scale_roles)
		snprintf(zero_scale_roles, sizeof zero_scale_roles, ", %llu roles with "
			 "all-zero scales", (unsigned long long)s->zero_scale_roles);
	printf("%s: payload scan: %llu roles of %llu experts, %llu blocks: "
	       "%llu non-finite scales in %llu roles, %llu all-zero roles "
	       "(%llu holes), %llu experts with all-zero scales%s%s\n",
	       cli_text(shown, path), (unsigned long long)s->roles,
	       (unsigned long long)s->experts,
	       (unsigned long long)s->blocks, (unsigned long long)s->nonfinite_scales,
	       (unsigned long long)s->nonfinite_roles, (unsigned long long)s->zero_roles,
	       (unsigned long long)s->hole_roles, (unsigned long long)s->zero_scale_experts,
	       zero_scale_roles, s->roles && s->zero_roles == s->roles
		       ? "; no payload was ever written (a sparse or unfilled pack)"
		       : "");
}

/*
 * --payload: the scan, and with --full the whole-file digest from the same
 * read.  The validator ran without --full, so the digest is compared here,
 * with its codes and wording.
 */
static enum mp_err run_payload(const struct verify_args *a, struct mp_pack *pack,
			       struct payload *pl, struct progress_bar *bar,
			       struct mp_error *err)
{
	struct mp_scan_opts so = {.hash = a->open.full, .progress = progress_bar_update,
				  .progress_arg = bar};
	unsigned char digest[MP_SHA256_LEN] = {0};
	enum mp_err rc;

	if (a->open.full && !pack->m.sha256[0])
		return mp_pack_check_digest(pack, digest, err);
	if (a->json) {
		pl->cap = 256;
		pl->list = malloc(pl->cap * sizeof *pl->list);
		if (!pl->list)
			return mp_fail(err, MP_E_NOMEM, "out of memory scanning %s", pack->file.path);
	}
	mp_scan_runs_init(&pl->runs, pack, print_problem_line, pl);
	rc = mp_scan_pack(pack, &so, on_problem, pl, &pl->sum, digest, err);
	progress_bar_finish(bar);
	mp_scan_runs_finish(&pl->runs);
	if (rc)
		return rc;
	if (pl->nomem)
		return mp_fail(err, MP_E_NOMEM, "out of memory listing payload problems of %s",
			       pack->file.path);
	pl->done = true;
	if (a->open.full) {
		if ((rc = mp_pack_check_digest(pack, digest, err)))
			return rc;
		pack->full_checked = true;
	}
	if (payload_bad(pl)) {
		char counts[MP_MSG_MAX];

		mp_scan_counts_describe(counts, sizeof counts, &pl->sum);
		return mp_fail(err, MP_E_PAYLOAD, "payload scan found problems: %s", counts);
	}
	return MP_OK;
}

/* Everything one run found, for the report. */
struct verify_run {
	struct mp_pack *pack;
	struct mp_error err;
	struct payload pl;
	struct sealcheck sc;
	struct sealcheck ec;  /* --entries */
};

/* Open and validate the pack, then --payload, then --seal and --trust:
 * each only when what came before passed. */
static enum mp_err check_all(struct verify_args *a, struct verify_run *r)
{
	struct progress_bar bar;
	bool full = a->open.full;
	enum mp_err rc;

	/* with --payload the digest rides on the scan's read */
	if (a->payload)
		a->open.full = false;
	progress_bar_init(&bar, stderr, "sha256", !a->quiet);
	a->open.progress = progress_bar_update;
	a->open.progress_arg = &bar;
	rc = mp_pack_open(&r->pack, a->pack, &a->open, &r->err);
	progress_bar_finish(&bar);
	a->open.full = full;
	if (rc == MP_OK && a->payload) {
		r->pl.pack_path = a->pack;
		progress_bar_init(&bar, stderr, full ? "sha256+scan" : "scan", !a->quiet);
		rc = run_payload(a, r->pack, &r->pl, &bar, &r->err);
		progress_bar_finish(&bar);
	}
	if (rc == MP_OK && (a->seal || a->ntrust)) {
		r->sc.pack = r->pack;
		r->sc.pack_path = a->pack;
		r->sc.json = a->json;
		progress_bar_init(&bar, stderr, "seal", !a->quiet && !a->json);
		rc = run_seal(a, r->pack, &r->sc, &bar, &r->err);
		progress_bar_finish(&bar);
	}
	/* the scan's read gave the whole-file digest; --full's check of every
	 * role against its index entry is still to do */
	if (rc == MP_OK && a->payload && full && mp_entry_seal_possible(r->pack))
		a->entries = true;
	if (rc == MP_OK && a->entries) {
		r->ec.pack = r->pack;
		r->ec.pack_path = a->pack;
		r->ec.json = a->json;
		progress_bar_init(&bar, stderr, "entries", !a->quiet && !a->json);
		rc = run_entries(a, r->pack, &r->ec, &bar, &r->err);
		progress_bar_finish(&bar);
	}
	return rc;
}

static int report(const struct verify_args *a, const struct verify_run *r, enum mp_err rc)
{
	if (a->json) {
		int out = print_json(a, r->pack, &r->err, &r->pl, &r->sc, &r->ec);

		return rc ? cli_exit_status(rc) : out;
	}
	if (rc) {
		if (r->pl.done)
			print_payload_summary(a->pack, &r->pl);
		return cli_report(a->pack, &r->err);
	}
	if (!a->quiet) {
		cli_print_warnings(r->pack);
		if (r->pl.done)
			print_payload_summary(a->pack, &r->pl);
		seal_summary(&r->sc);
		entries_summary(&r->ec);
		print_summary(r->pack);
	}
	return CLI_EXIT_OK;
}

int cli_verify_run(int argc, char **argv)
{
	struct verify_args a = {0};
	struct verify_run r = {0};
	enum cli_parse p = parse_args(argc, argv, &a);
	int rc;

	if (p != CLI_RUN) {
		free(a.trust_list);
		return cli_parse_status(p, argv[0]);
	}
	rc = report(&a, &r, check_all(&a, &r));
	free(r.pl.list);
	json_decref(r.sc.bad_list);
	mp_seal_free(r.sc.seal);
	mp_seal_layout_free(&r.sc.l);
	json_decref(r.ec.bad_list);
	mp_seal_free(r.ec.seal);
	mp_seal_layout_free(&r.ec.l);
	free(a.trust_list);
	mp_pack_close(r.pack);
	return cli_finish(argv[0], rc);
}
