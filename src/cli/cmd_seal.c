/* cmd_seal.c - `moepack seal` and `moepack sign`: write PACK.seal, PACK.sig. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/outfile.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "pack/digest.h"
#include "pack/progress.h"
#include "seal/seal.h"
#include "seal/sealsample.h"
#include "seal/sign.h"

const char seal_unanchored_note[] =
	"unanchored: the seal proves the bytes are unchanged since sealing, not their origin";

struct seal_args {
	struct mp_open_opts open;
	bool json, quiet, unanchored;
	uint64_t jobs, chunk_size;
};

enum { OPT_JOBS = CLI_LONG_ONLY, OPT_UNANCHORED, OPT_CHUNK_SIZE };

#define A struct seal_args
const struct cli_option cli_seal_options[] = {
	CLI_OPT_U64("jobs", OPT_JOBS, "N", "hash on N threads (default: one per CPU)", A, jobs,
		    0, 1, 64),
	CLI_OPT_TRUE("unanchored", OPT_UNANCHORED, "seal a pack whose manifest has no\n"
		     "expert_pack.sha256 (the seal then proves the\n"
		     "bytes unchanged since sealing, not their origin)", A, unanchored),
	CLI_OPT_U64("chunk-size", OPT_CHUNK_SIZE, "SIZE",
		    "chunk size, a power of two from 64K to 1G\n"
		    "(default: the smallest from 1M whose table fits)", A, chunk_size,
		    CLI_NUM_SUFFIX | CLI_NUM_POW2, MP_SEAL_MIN_CHUNK, MP_SEAL_MAX_CHUNK),
	CLI_OPT_MANIFEST(A, open.manifest_path),
	CLI_OPT_JSON(CLI_HELP_JSON, A, json),
	CLI_OPT_QUIET("print nothing unless something fails", A, quiet),
	{NULL},
};
#undef A

/* A path that must not name the pack or its manifest (we replace it). */
static enum mp_err not_an_input(const char *out, const struct mp_pack *pack,
				struct mp_error *err)
{
	struct stat so, sp, sm;
	if (lstat(out, &so) != 0)
		return MP_OK;
	if ((fstat(pack->file.fd, &sp) == 0 && so.st_dev == sp.st_dev && so.st_ino == sp.st_ino) ||
	    (stat(pack->file.manifest_path, &sm) == 0 && so.st_dev == sm.st_dev &&
	     so.st_ino == sm.st_ino))
		return mp_fail(err, MP_E_USAGE, "invalid usage: %s is the pack or its manifest", out);
	return MP_OK;
}

static void seal_json(const char *pack_path, const char *seal_path, const struct mp_seal *s,
		      const struct mp_error *err)
{
	json_t *o = cli_json_result(err->code, "sealed", err->msg, pack_path);
	char hex[MP_SHA256_HEX];
	bool ok = err->code == MP_OK;

	json_object_set_new(o, "seal", seal_path ? cli_json_text(seal_path) : json_null());
	if (ok && s) {
		mp_sha256_hex(s->seal_digest, hex);
		json_object_set_new(o, "seal_sha256", json_string(hex));
		mp_sha256_hex(s->pack_sha256, hex);
		json_object_set_new(o, "pack_sha256", mp_seal_has_pack_sha256(s)
							      ? json_string(hex) : json_null());
		json_object_set_new(o, "chunk_size", json_integer((json_int_t)s->chunk_size));
		json_object_set_new(o, "chunk_count", json_integer((json_int_t)s->chunk_count));
		json_object_set_new(o, "anchored", json_boolean(!mp_seal_unanchored(s)));
		if (mp_seal_unanchored(s))
			json_object_set_new(o, "note", json_string(seal_unanchored_note));
	}
	cli_print_json(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
}

/* One run of seal: what it opened and made. */
struct sealing {
	const struct seal_args *a;
	const char *pack_path;
	struct mp_pack *pack;
	struct mp_seal_layout l;
	struct mp_seal s;
	char *seal_path;
	struct mp_error err;
};

/* An anchored seal needs the manifest's whole-file digest (expert_pack.sha256,
 * SGLang's pack_sha256: absent or null is none), and --unanchored is for a
 * manifest without one. */
static enum mp_err check_anchor(struct sealing *g)
{
	const char *key = g->pack->format->sha256_key;

	if (!g->pack->m.sha256[0] && !g->a->unanchored)
		return mp_fail(&g->err, MP_E_USAGE,
			       "invalid usage: the manifest has no %s: seal with "
			       "--unanchored (the seal will prove the bytes unchanged since "
			       "sealing, not their origin)", key);
	if (g->pack->m.sha256[0] && g->a->unanchored)
		return mp_fail(&g->err, MP_E_USAGE,
			       "invalid usage: --unanchored, but the manifest has %s", key);
	return MP_OK;
}

/* --chunk-size, or the smallest whose table fits. */
static enum mp_err chunk_size(struct sealing *g, uint64_t *size)
{
	uint64_t rb[MP_ROLE_COUNT];

	*size = g->a->chunk_size;
	if (*size)
		return MP_OK;
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		rb[r] = g->pack->m.roles[g->pack->m.order[r]].expert_bytes;
	*size = mp_seal_pick_chunk_size(g->pack->file.size, g->pack->object_count,
					g->pack->object_offset, rb);
	if (!*size)
		return mp_fail(&g->err, MP_E_SEAL_LIMIT,
			       "seal would exceed its table limit: no chunk size fits");
	return MP_OK;
}

/* The layout, the seal's path and room for its digests. */
static enum mp_err prepare(struct sealing *g)
{
	uint64_t size;
	enum mp_err rc = chunk_size(g, &size);

	if (rc == MP_OK)
		rc = mp_seal_layout_of_pack(&g->l, g->pack, size, &g->err);
	if (rc != MP_OK)
		return rc;
	g->seal_path = mp_path_with_suffix(g->pack_path, MP_SEAL_SUFFIX);
	g->s.digests = malloc(g->l.chunk_count * MP_SHA256_LEN);
	if (!g->seal_path || !g->s.digests)
		return mp_fail(&g->err, MP_E_NOMEM, "out of memory sealing %s", g->pack_path);
	rc = not_an_input(g->seal_path, g->pack, &g->err);
	if (rc != MP_OK)
		return rc;
	g->s.flags = g->a->unanchored ? MP_SEAL_FLAG_UNANCHORED : 0;
	g->s.chunk_size = g->l.chunk_size;
	g->s.chunk_count = g->l.chunk_count;
	g->s.pack_size = g->pack->file.size;
	memcpy(g->s.index_sha256, g->pack->index_digest, MP_SHA256_LEN);
	return MP_OK;
}

/* Every chunk and the whole file, which must be the manifest's when
 * anchored. */
static enum mp_err hash_pack(struct sealing *g)
{
	struct progress_bar bar;
	char hex[MP_SHA256_HEX];
	enum mp_err rc;

	progress_bar_init(&bar, stderr, "seal", !g->a->quiet && !g->a->json);
	/* an unanchored seal records no whole-file digest, as build's */
	rc = mp_seal_hash_file(g->pack->file.fd, g->pack_path, &g->l, (unsigned)g->a->jobs,
			       progress_bar_update, &bar, g->s.digests,
			       g->a->unanchored ? NULL : g->s.pack_sha256, &g->err);
	progress_bar_finish(&bar);
	if (rc != MP_OK || g->a->unanchored)
		return rc;
	mp_sha256_hex(g->s.pack_sha256, hex);
	if (strcmp(hex, g->pack->m.sha256) != 0)
		return mp_fail(&g->err, MP_E_FULL_DIGEST,
			       "pack SHA-256 does not match manifest: the file's is %s, "
			       "%s is %s; not sealed", hex, g->pack->format->sha256_key,
			       g->pack->m.sha256);
	return MP_OK;
}

static enum mp_err seal_pack(struct sealing *g)
{
	enum mp_err rc = mp_pack_open(&g->pack, g->pack_path, &g->a->open, &g->err);

	if (rc == MP_OK)
		rc = check_anchor(g);
	if (rc == MP_OK)
		rc = prepare(g);
	if (rc == MP_OK)
		rc = hash_pack(g);
	if (rc == MP_OK)
		rc = mp_seal_write(&g->s, g->seal_path, &g->err);
	return rc;
}

static int seal_report(const struct sealing *g, enum mp_err rc)
{
	char shown[CLI_TEXT_MAX], hex[MP_SHA256_HEX], sz[32];

	if (g->a->json) {
		seal_json(g->pack_path, g->seal_path, rc == MP_OK ? &g->s : NULL, &g->err);
		return cli_exit_status(rc);
	}
	if (rc != MP_OK)
		return cli_report(g->pack_path, &g->err);
	if (g->a->quiet)
		return CLI_EXIT_OK;
	cli_print_warnings(g->pack);
	mp_sha256_hex(g->s.seal_digest, hex);
	printf("%s: sealed %" PRIu64 " chunks of %s, seal sha256 %s\n",
	       cli_text(shown, g->seal_path), g->s.chunk_count,
	       format_bytes(sz, sizeof sz, g->s.chunk_size), hex);
	if (g->a->unanchored)
		printf("%s: %s\n", shown, seal_unanchored_note);
	return CLI_EXIT_OK;
}

int cli_seal_run(int argc, char **argv)
{
	struct seal_args a = {0};
	struct sealing g = {.a = &a};
	struct cli_operands ops;
	enum cli_parse p = cli_parse(&cli_seal_command, argc, argv, &a, &ops);
	int rc;

	if (p != CLI_RUN)
		return cli_parse_status(p, argv[0]);
	g.pack_path = ops.v[0];
	cli_remove_temporaries_on_signal();
	rc = seal_report(&g, seal_pack(&g));
	free(g.s.digests);
	free(g.seal_path);
	mp_seal_layout_free(&g.l);
	mp_pack_close(g.pack);
	return cli_finish(argv[0], rc);
}

/* ---- sign ---------------------------------------------------------------- */

struct sign_args {
	const char *key;
	struct mp_open_opts open;
	bool json, quiet;
};

#define A struct sign_args
const struct cli_option cli_sign_options[] = {
	CLI_OPT_TEXT("key", 'k', "FILE", "the private key, as `openssl genpkey -algorithm\n"
		     "ed25519` writes it (unencrypted PEM)", A, key),
	CLI_OPT_MANIFEST(A, open.manifest_path),
	CLI_OPT_JSON(CLI_HELP_JSON, A, json),
	CLI_OPT_QUIET("print nothing unless something fails", A, quiet),
	{NULL},
};
#undef A

/* Read PACK.seal and bind it to the open pack. */
enum mp_err cli_load_seal(const struct mp_pack *pack, struct mp_seal **seal,
			  struct mp_seal_layout *l, struct mp_error *err)
{
	char *path = mp_path_with_suffix(pack->file.path, MP_SEAL_SUFFIX);
	enum mp_err rc;

	*seal = NULL;
	memset(l, 0, sizeof *l);
	if (!path)
		return mp_fail(err, MP_E_NOMEM, "out of memory reading the seal");
	rc = mp_seal_read(seal, path, err);
	free(path);
	if (rc == MP_OK)
		rc = mp_seal_layout_of_pack(l, pack, (*seal)->chunk_size, err);
	if (rc == MP_E_SEAL_LIMIT || rc == MP_E_USAGE)
		rc = mp_fail(err, MP_E_SEAL_MISMATCH,
			     "seal is not this pack's: its chunk size %" PRIu64
			     " does not fit the pack", (*seal)->chunk_size);
	if (rc == MP_OK)
		rc = mp_seal_bind(*seal, pack, l, err);
	if (rc == MP_OK)
		rc = mp_seal_sample(*seal, l, pack, pack->file.fd, err);
	if (rc != MP_OK) {
		mp_seal_free(*seal);
		*seal = NULL;
		mp_seal_layout_free(l);
	}
	return rc;
}

/* One run of sign: what it opened and found. */
struct signing {
	const struct sign_args *a;
	const char *pack_path;
	struct mp_pack *pack;
	struct mp_seal *seal;
	struct mp_seal_layout l;
	char fphex[MP_SHA256_HEX], sealhex[MP_SHA256_HEX];
	struct mp_error err;
};

/*
 * A signature vouches for what it names, so nothing is signed that this
 * run did not check byte for byte: every chunk against the seal, and the
 * whole file's SHA-256 (computed in the same read) against the one the
 * seal records, which an anchored seal shares with the manifest (an
 * unanchored one records none: its chunks are every byte).
 */
static enum mp_err prove_seal(struct signing *g)
{
	unsigned char (*digests)[MP_SHA256_LEN] = malloc(g->l.chunk_count * MP_SHA256_LEN);
	unsigned char whole[MP_SHA256_LEN];
	bool has_whole = mp_seal_has_pack_sha256(g->seal);
	struct progress_bar bar;
	enum mp_err rc;

	if (!digests)
		return mp_fail(&g->err, MP_E_NOMEM, "out of memory checking %s", g->pack_path);
	progress_bar_init(&bar, stderr, "check", !g->a->quiet && !g->a->json);
	rc = mp_seal_hash_file(g->pack->file.fd, g->pack_path, &g->l, 0, progress_bar_update, &bar,
			       digests, has_whole ? whole : NULL, &g->err);
	progress_bar_finish(&bar);
	for (uint64_t c = 0; rc == MP_OK && c < g->l.chunk_count; c++)
		if (!mp_seal_digest_ok(g->seal, c, digests[c])) {
			char what[256];

			mp_seal_chunk_describe(g->pack, &g->l, c, what, sizeof what);
			rc = mp_fail(&g->err, MP_E_SEAL_CHUNK, "pack bytes differ from their "
				     "sealed digest: chunk %" PRIu64 " (%s); not signed", c, what);
		}
	if (rc == MP_OK && has_whole && memcmp(whole, g->seal->pack_sha256, MP_SHA256_LEN) != 0)
		rc = mp_fail(&g->err, MP_E_SEAL_MISMATCH, "seal is not this pack's: its "
			     "pack_sha256 is not the file's SHA-256; not signed");
	free(digests);
	return rc;
}

static enum mp_err sign_pack(struct signing *g)
{
	unsigned char fp[MP_SHA256_LEN];
	enum mp_err rc = mp_pack_open(&g->pack, g->pack_path, &g->a->open, &g->err);

	if (rc == MP_OK)
		rc = cli_load_seal(g->pack, &g->seal, &g->l, &g->err);
	if (rc == MP_OK)
		rc = prove_seal(g);
	if (rc == MP_OK)
		rc = mp_key_fingerprint(g->a->key, true, fp, &g->err);
	if (rc == MP_OK)
		rc = mp_sign_pack(g->pack, g->seal, g->a->key, &g->err);
	if (rc == MP_OK) {
		mp_sha256_hex(fp, g->fphex);
		mp_sha256_hex(g->seal->seal_digest, g->sealhex);
	}
	return rc;
}

static void sign_json(const struct signing *g, enum mp_err rc)
{
	json_t *o = cli_json_result(rc, "signed", g->err.msg, g->pack_path);

	json_object_set_new(o, "key_sha256", rc == MP_OK ? json_string(g->fphex) : json_null());
	json_object_set_new(o, "seal_sha256", rc == MP_OK ? json_string(g->sealhex) : json_null());
	if (rc == MP_OK && mp_seal_unanchored(g->seal))
		json_object_set_new(o, "note", json_string(seal_unanchored_note));
	cli_print_json(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
}

static int sign_report(const struct signing *g, enum mp_err rc)
{
	char shown[CLI_TEXT_MAX];

	if (g->a->json) {
		sign_json(g, rc);
		return cli_exit_status(rc);
	}
	if (rc != MP_OK)
		return cli_report(g->pack_path, &g->err);
	if (g->a->quiet)
		return CLI_EXIT_OK;
	cli_text(shown, g->pack_path);
	printf("%s: signed: %s%s and %s%s (key sha256 %s, seal sha256 %s)\n", shown, shown,
	       MP_STATEMENT_SUFFIX, shown, MP_SIG_SUFFIX, g->fphex, g->sealhex);
	if (mp_seal_unanchored(g->seal))
		printf("%s: %s\n", shown, seal_unanchored_note);
	return CLI_EXIT_OK;
}

int cli_sign_run(int argc, char **argv)
{
	struct sign_args a = {0};
	struct signing g = {.a = &a};
	struct cli_operands ops;
	enum cli_parse p = cli_parse(&cli_sign_command, argc, argv, &a, &ops);
	int rc;

	if (p == CLI_RUN && !a.key) {
		cli_usage_error(argv[0], "missing --key");
		p = CLI_USAGE_ERROR;
	}
	if (p != CLI_RUN)
		return cli_parse_status(p, argv[0]);
	g.pack_path = ops.v[0];
	cli_remove_temporaries_on_signal();
	rc = sign_report(&g, sign_pack(&g));
	mp_seal_free(g.seal);
	mp_seal_layout_free(&g.l);
	mp_pack_close(g.pack);
	return cli_finish(argv[0], rc);
}
