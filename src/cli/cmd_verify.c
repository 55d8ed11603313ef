/* cmd_verify.c - `moepack verify`: the reference loader's checks, as a tool. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <inttypes.h>

#include "cli/cli.h"
#include "pack/digest.h"
#include "pack/progress.h"
#include "payload/scan.h"
#include "seal/seal.h"
#include "seal/sign.h"

/* Lines naming bad chunks at most; the rest are counted. */
#define MAX_BAD_LINES 100

static const char usage_text[] =
	"Usage: moepack verify [OPTIONS] PACK\n"
	"Check PACK and its manifest the way the reference loader does: manifest,\n"
	"header, every index entry, trailing bytes, index SHA-256 and, with --full,\n"
	"the SHA-256 of the whole file; with --payload, also the payload itself.\n"
	"\n"
	"  -f, --full               also check expert_pack.sha256 (reads every byte)\n"
	"  -p, --payload            scan every block's fp16 scales and every role:\n"
	"                           report non-finite scales, all-zero roles and\n"
	"                           experts whose scales are all zero (with --full,\n"
	"                           in the same single read of the pack)\n"
	"  -j, --json               print one JSON object on stdout\n"
	"  -q, --quiet              print nothing unless the pack is invalid\n"
	"  -m, --manifest=FILE      the manifest (default: PACK.manifest.json)\n"
	"      --expect-layers=N    require model.num_hidden_layers to be N\n"
	"      --expect-experts=N   require model.num_experts to be N\n"
	"  -c, --config=FILE        require model.config_sha256 to be FILE's SHA-256\n"
	"  -s, --seal               check every chunk against PACK.seal, on all\n"
	"                           cores; name the layer, expert and role of each\n"
	"                           bad chunk\n"
	"      --jobs=N             --seal: hash on N threads (default: one per CPU)\n"
	"      --trust=PUB[,PUB...] require PACK.sig: a signature by one of these\n"
	"                           Ed25519 public keys over this pack, its seal\n"
	"                           and its manifest\n"
	"  -h, --help               show this help and exit\n"
	"\n"
	"Exit status: 0 valid, 1 invalid (or the payload scan found a problem, a\n"
	"chunk differs from its seal, the seal is not the pack's, the signature is\n"
	"missing or does not verify),\n"
	"2 usage error (including --full when the manifest has no\n"
	"expert_pack.sha256), 3 a file cannot be read.\n";

enum { OPT_EXPECT_LAYERS = 0x100, OPT_EXPECT_EXPERTS, OPT_JOBS, OPT_TRUST };

static const struct option long_options[] = {
	{"full", no_argument, NULL, 'f'},
	{"payload", no_argument, NULL, 'p'},
	{"json", no_argument, NULL, 'j'},
	{"quiet", no_argument, NULL, 'q'},
	{"manifest", required_argument, NULL, 'm'},
	{"expect-layers", required_argument, NULL, OPT_EXPECT_LAYERS},
	{"expect-experts", required_argument, NULL, OPT_EXPECT_EXPERTS},
	{"config", required_argument, NULL, 'c'},
	{"seal", no_argument, NULL, 's'},
	{"jobs", required_argument, NULL, OPT_JOBS},
	{"trust", required_argument, NULL, OPT_TRUST},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

struct verify_args {
	bool json, quiet, payload, seal;
	uint64_t jobs;
	const char *trust[MP_MAX_TRUSTED_KEYS];
	size_t ntrust;
	char *trust_list; /* --trust's text, split in place */
	const char *pack;
	struct mp_open_opts open;
};

static int parse_args(int argc, char **argv, struct verify_args *a)
{
	const char *cmd = argv[0];
	struct mp_error err;
	int c;

	while ((c = cli_getopt(cmd, argc, argv, "fpjqm:c:sh", long_options)) != -1) {
		switch (c) {
		case 's':
			a->seal = true;
			break;
		case OPT_JOBS:
			if (cli_parse_u64(optarg, "--jobs", 0, 1, 64, &a->jobs, &err))
				return cli_usage_error(cmd, "%s", err.msg);
			break;
		case OPT_TRUST: {
			char *p;
			free(a->trust_list);
			a->ntrust = 0;
			if (!(a->trust_list = strdup(optarg)))
				return cli_usage_error(cmd, "out of memory");
			for (p = strtok(a->trust_list, ","); p; p = strtok(NULL, ",")) {
				if (a->ntrust == MP_MAX_TRUSTED_KEYS)
					return cli_usage_error(cmd, "--trust takes at most %u keys",
							       MP_MAX_TRUSTED_KEYS);
				a->trust[a->ntrust++] = p;
			}
			if (a->ntrust == 0)
				return cli_usage_error(cmd, "--trust needs a key file");
			break;
		}
		case 'f':
			a->open.full = true;
			break;
		case 'p':
			a->payload = true;
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
	if (a->jobs && !a->seal)
		return cli_usage_error(cmd, "--jobs needs --seal");
	a->pack = argv[optind];
	return CLI_EXIT_OK;
}

/* What --seal and --trust found, for printing. */
struct sealcheck {
	bool ran, checked, trusted;
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
	if (sc->json) {
		json_t *o = json_object();
		json_object_set_new(o, "chunk", json_integer((json_int_t)chunk));
		json_object_set_new(o, "offset", json_integer((json_int_t)ch.offset));
		json_object_set_new(o, "length", json_integer((json_int_t)ch.len));
		json_object_set_new(o, "where", json_string(desc));
		json_array_append_new(sc->bad_list, o);
		return;
	}
	printf("%s: bad chunk %" PRIu64 " (bytes %" PRIu64 "..%" PRIu64 "): %s\n",
	       cli_text(shown, sc->pack_path), chunk, ch.offset, ch.offset + ch.len - 1, desc);
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
		return mp_fail(err, MP_E_NOMEM, "out of memory checking %s", pack->path);
	rc = mp_seal_check_file(pack->fd, pack->path, sc->seal, &sc->l, (unsigned)a->jobs,
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
		json_object_set_new(o, "seal_anchored", json_boolean(!mp_seal_unanchored(sc->seal)));
		if (mp_seal_unanchored(sc->seal))
			json_object_set_new(o, "seal_note", json_string(seal_unanchored_note));
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
};

static const char *fp16_kind(uint16_t h)
{
	if ((h & 0x3ff) == 0)
		return h & 0x8000 ? "-Inf" : "+Inf";
	return "NaN";
}

static void print_problem(const struct mp_scan_problem *p, const char *pack)
{
	printf("%s: layer %u expert %llu", pack, (unsigned)p->layer,
	       (unsigned long long)p->expert);
	switch (p->kind) {
	case MP_SCAN_NONFINITE_SCALE:
		printf(" %s: non-finite scale: %llu in the role, first at block %llu "
		       "(%s = %s, 0x%04x)\n",
		       mp_role_name(p->role), (unsigned long long)p->count,
		       (unsigned long long)p->first_block, p->first_scale,
		       fp16_kind(p->first_value), p->first_value);
		break;
	case MP_SCAN_ZERO_ROLE:
		printf(" %s: all-zero role%s\n", mp_role_name(p->role),
		       p->hole ? " (a hole in the file: never written)" : "");
		break;
	case MP_SCAN_ZERO_SCALES:
		printf(": all-zero scales (every block of up, gate and down)\n");
		break;
	}
}

static void on_problem(const struct mp_scan_problem *p, void *arg)
{
	struct payload *pl = arg;

	if (!pl->list && pl->cap == 0) {
		print_problem(p, pl->pack_path);
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
	return pl->sum.nonfinite_roles || pl->sum.zero_roles || pl->sum.zero_scale_experts;
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

		snprintf(hex, sizeof hex, "0x%04x", p->first_value);
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
	json_object_set_new(o, "unwritten", json_boolean(s->roles && s->zero_roles == s->roles));
	return o;
}

static json_t *warnings_json(const struct mp_pack *pack)
{
	json_t *list = json_array();

	for (unsigned i = 0; pack && list && i < pack->nwarnings && i < MP_MAX_WARNINGS; i++)
		json_array_append_new(list, cli_json_text(pack->warnings[i]));
	return list;
}

/*
 * The problem list can be long (every role of a sparse Kimi K3 pack), so
 * it is written one problem at a time after the rest of the object rather
 * than built as one JSON tree.
 */
static int print_json(const struct verify_args *a, const struct mp_pack *pack,
		      const struct mp_error *err, const struct payload *pl,
		      const struct sealcheck *sc)
{
	char *manifest = pack ? NULL : cli_manifest_path(a->pack, a->open.manifest_path);
	bool ok = pack != NULL && err->code == MP_OK;
	json_t *o = json_object();
	char *text;
	int rc = 0;

	json_object_set_new(o, "ok", json_boolean(ok));
	json_object_set_new(o, "code", json_string(mp_err_name(err->code)));
	json_object_set_new(o, "message", cli_json_text(ok ? "valid" : err->msg));
	json_object_set_new(o, "pack", cli_json_text(a->pack));
	json_object_set_new(o, "manifest",
			    cli_json_text(pack ? pack->manifest_path : manifest));
	/* only a pack that passed is vouched for: a digest next to "ok":
	 * false (payload, full digest, ...) would read as a valid identity */
	json_object_set_new(o, "index_sha256",
			    ok ? json_string(pack->m.index_sha256) : json_null());
	json_object_set_new(o, "full_sha256_checked",
			    json_boolean(pack && pack->full_checked));
	json_object_set_new(o, "warnings", warnings_json(pack));
	if (a->payload)
		json_object_set_new(o, "payload", pl->done ? summary_json(pl) : json_null());
	seal_json_fields(o, a, sc);
	free(manifest);
	text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	json_decref(o);
	if (!text)
		return CLI_EXIT_IO;
	if (!a->payload) {
		printf("%s\n", text);
	} else {
		/* drop the closing brace, add the problems, close again */
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
	}
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
	printf("%s: valid (num_hidden_layers %llu, %zu MoE layers x %llu expert%s, "
	       "index sha256 %.16s..., %s)\n",
	       cli_text(shown, pack->path), (unsigned long long)pack->m.num_hidden_layers,
	       pack->m.layer_count, (unsigned long long)pack->m.num_experts,
	       pack->m.num_experts == 1 ? "" : "s", pack->m.index_sha256, full);
}

static void print_payload_summary(const char *path, const struct payload *pl)
{
	const struct mp_scan_summary *s = &pl->sum;

	printf("%s: payload scan: %llu roles of %llu experts, %llu blocks: "
	       "%llu non-finite scales in %llu roles, %llu all-zero roles "
	       "(%llu holes), %llu experts with all-zero scales%s\n",
	       path, (unsigned long long)s->roles, (unsigned long long)s->experts,
	       (unsigned long long)s->blocks, (unsigned long long)s->nonfinite_scales,
	       (unsigned long long)s->nonfinite_roles, (unsigned long long)s->zero_roles,
	       (unsigned long long)s->hole_roles, (unsigned long long)s->zero_scale_experts,
	       s->roles && s->zero_roles == s->roles
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
			return mp_fail(err, MP_E_NOMEM, "out of memory scanning %s", pack->path);
	}
	rc = mp_scan_pack(pack, &so, on_problem, pl, &pl->sum, digest, err);
	progress_bar_finish(bar);
	if (rc)
		return rc;
	if (pl->nomem)
		return mp_fail(err, MP_E_NOMEM, "out of memory listing payload problems of %s",
			       pack->path);
	pl->done = true;
	if (a->open.full) {
		if ((rc = mp_pack_check_digest(pack, digest, err)))
			return rc;
		pack->full_checked = true;
	}
	if (payload_bad(pl))
		return mp_fail(err, MP_E_PAYLOAD,
			       "payload scan found problems: %llu non-finite scales in %llu "
			       "roles, %llu all-zero roles, %llu experts with all-zero scales",
			       (unsigned long long)pl->sum.nonfinite_scales,
			       (unsigned long long)pl->sum.nonfinite_roles,
			       (unsigned long long)pl->sum.zero_roles,
			       (unsigned long long)pl->sum.zero_scale_experts);
	return MP_OK;
}

int cmd_verify(int argc, char **argv)
{
	struct verify_args a = {0};
	struct progress_bar bar;
	struct mp_error err = {0};
	struct mp_pack *pack = NULL;
	struct payload pl = {0};
	struct sealcheck sc = {0};
	bool full;
	int rc = parse_args(argc, argv, &a);

	if (rc) {
		free(a.trust_list);
		return rc < 0 ? cli_finish_stdout(argv[0]) : rc;
	}

	/* with --payload the digest rides on the scan's read */
	full = a.open.full;
	if (a.payload)
		a.open.full = false;
	progress_bar_init(&bar, stderr, "sha256", !a.quiet);
	a.open.progress = progress_bar_update;
	a.open.progress_arg = &bar;
	rc = mp_pack_open(&pack, a.pack, &a.open, &err);
	progress_bar_finish(&bar);
	a.open.full = full;
	if (rc == MP_OK && a.payload) {
		pl.pack_path = a.pack;
		progress_bar_init(&bar, stderr, full ? "sha256+scan" : "scan", !a.quiet);
		rc = run_payload(&a, pack, &pl, &bar, &err);
		progress_bar_finish(&bar);
	}
	if (rc == MP_OK && (a.seal || a.ntrust)) {
		sc.pack = pack;
		sc.pack_path = a.pack;
		sc.json = a.json;
		progress_bar_init(&bar, stderr, "seal", !a.quiet && !a.json);
		rc = run_seal(&a, pack, &sc, &bar, &err);
		progress_bar_finish(&bar);
	}

	if (a.json) {
		int out = print_json(&a, pack, &err, &pl, &sc);

		rc = rc ? cli_exit_status(rc) : out;
	} else if (rc) {
		if (pl.done)
			print_payload_summary(a.pack, &pl);
		rc = cli_report(a.pack, &err);
	} else {
		if (!a.quiet) {
			cli_print_warnings(pack);
			if (pl.done)
				print_payload_summary(a.pack, &pl);
			seal_summary(&sc);
			print_summary(pack);
		}
	}
	free(pl.list);
	json_decref(sc.bad_list);
	mp_seal_free(sc.seal);
	mp_seal_layout_free(&sc.l);
	free(a.trust_list);
	mp_pack_close(pack);
	if (cli_finish_stdout(argv[0]) && !rc)
		rc = CLI_EXIT_IO;
	return rc;
}
