/* cmd_seal.c - `moepack seal` and `moepack sign`: write PACK.seal, PACK.sig. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "pack/digest.h"
#include "pack/progress.h"
#include "seal/seal.h"
#include "seal/sign.h"

const char seal_unanchored_note[] =
	"unanchored: the seal proves the bytes are unchanged since sealing, not their origin";

static const char seal_usage[] =
	"Usage: moepack seal [OPTIONS] PACK\n"
	"Validate PACK, hash every chunk of it on all cores together with the\n"
	"SHA-256 of the whole file, and write PACK.seal (see moepack-pack(5)).\n"
	"The whole-file SHA-256 must equal the manifest's expert_pack.sha256.\n"
	"\n"
	"      --jobs=N             hash on N threads (default: one per CPU)\n"
	"      --unanchored         seal a pack whose manifest has no\n"
	"                           expert_pack.sha256 (the seal then proves the\n"
	"                           bytes unchanged since sealing, not their origin)\n"
	"      --chunk-size=SIZE    chunk size, a power of two from 64K to 1G\n"
	"                           (default: the smallest from 1M whose table fits)\n"
	"  -m, --manifest=FILE      the manifest (default: PACK.manifest.json)\n"
	"  -j, --json               print one JSON object on stdout\n"
	"  -q, --quiet              print nothing unless something fails\n"
	"  -h, --help               show this help and exit\n"
	"\n"
	"Exit status: 0 sealed, 1 invalid pack (or its SHA-256 differs from the\n"
	"manifest's), 2 usage error (including a manifest without expert_pack.sha256\n"
	"and no --unanchored), 3 a file cannot be read or written.\n";

enum { OPT_JOBS = 0x100, OPT_UNANCHORED, OPT_CHUNK_SIZE };

static const struct option seal_options[] = {
	{"jobs", required_argument, NULL, OPT_JOBS},
	{"unanchored", no_argument, NULL, OPT_UNANCHORED},
	{"chunk-size", required_argument, NULL, OPT_CHUNK_SIZE},
	{"manifest", required_argument, NULL, 'm'},
	{"json", no_argument, NULL, 'j'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* A path that must not name the pack or its manifest (we replace it). */
static enum mp_err not_an_input(const char *out, const struct mp_pack *pack,
				struct mp_error *err)
{
	struct stat so, sp, sm;
	if (lstat(out, &so) != 0)
		return MP_OK;
	if ((fstat(pack->fd, &sp) == 0 && so.st_dev == sp.st_dev && so.st_ino == sp.st_ino) ||
	    (stat(pack->manifest_path, &sm) == 0 && so.st_dev == sm.st_dev &&
	     so.st_ino == sm.st_ino))
		return mp_fail(err, MP_E_USAGE, "invalid usage: %s is the pack or its manifest", out);
	return MP_OK;
}

static void seal_json(const char *pack_path, const char *seal_path, const struct mp_seal *s,
		      const struct mp_error *err)
{
	json_t *o = json_object();
	char hex[MP_SHA256_HEX];
	bool ok = err->code == MP_OK;

	json_object_set_new(o, "ok", json_boolean(ok));
	json_object_set_new(o, "code", json_string(mp_err_name(err->code)));
	json_object_set_new(o, "message", cli_json_text(ok ? "sealed" : err->msg));
	json_object_set_new(o, "pack", cli_json_text(pack_path));
	json_object_set_new(o, "seal", seal_path ? cli_json_text(seal_path) : json_null());
	if (ok && s) {
		mp_sha256_hex(s->seal_digest, hex);
		json_object_set_new(o, "seal_sha256", json_string(hex));
		mp_sha256_hex(s->pack_sha256, hex);
		json_object_set_new(o, "pack_sha256", json_string(hex));
		json_object_set_new(o, "chunk_size", json_integer((json_int_t)s->chunk_size));
		json_object_set_new(o, "chunk_count", json_integer((json_int_t)s->chunk_count));
		json_object_set_new(o, "anchored", json_boolean(!mp_seal_unanchored(s)));
		if (mp_seal_unanchored(s))
			json_object_set_new(o, "note", json_string(seal_unanchored_note));
	}
	cli_print_json(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
}

int cmd_seal(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct mp_open_opts open = {0};
	bool json = false, quiet = false, unanchored = false;
	uint64_t jobs = 0, chunk_size = 0;
	struct mp_error err = {0};
	struct mp_pack *pack = NULL;
	struct mp_seal_layout l = {0};
	struct mp_seal s = {0};
	struct progress_bar bar;
	char *seal_path = NULL;
	int c, rc;

	while ((c = cli_getopt(cmd, argc, argv, "m:jqh", seal_options)) != -1) {
		switch (c) {
		case OPT_JOBS:
			if (cli_parse_u64(optarg, "--jobs", 0, 1, 64, &jobs, &err))
				return cli_usage_error(cmd, "%s", err.msg);
			break;
		case OPT_UNANCHORED:
			unanchored = true;
			break;
		case OPT_CHUNK_SIZE:
			if (cli_parse_u64(optarg, "--chunk-size", CLI_NUM_SUFFIX, MP_SEAL_MIN_CHUNK,
					  MP_SEAL_MAX_CHUNK, &chunk_size, &err))
				return cli_usage_error(cmd, "%s", err.msg);
			if (chunk_size & (chunk_size - 1))
				return cli_usage_error(cmd, "--chunk-size must be a power of two");
			break;
		case 'm':
			open.manifest_path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(seal_usage, stdout);
			return cli_finish_stdout(cmd);
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error(cmd, "missing PACK");
	if (argc - optind > 1)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);

	const char *pack_path = argv[optind];
	rc = mp_pack_open(&pack, pack_path, &open, &err);
	if (rc != MP_OK)
		goto done;
	if (!pack->m.sha256[0] && !unanchored) {
		rc = mp_fail(&err, MP_E_USAGE,
			     "invalid usage: the manifest has no expert_pack.sha256: seal with "
			     "--unanchored (the seal will prove the bytes unchanged since "
			     "sealing, not their origin)");
		goto done;
	}
	if (pack->m.sha256[0] && unanchored) {
		rc = mp_fail(&err, MP_E_USAGE,
			     "invalid usage: --unanchored, but the manifest has expert_pack.sha256");
		goto done;
	}
	if (!chunk_size) {
		uint64_t rb[MP_ROLE_COUNT];
		for (int r = 0; r < MP_ROLE_COUNT; r++)
			rb[r] = pack->m.roles[r].expert_bytes;
		chunk_size = mp_seal_pick_chunk_size(pack->file_size, pack->object_count,
						     pack->object_offset, rb);
		if (!chunk_size) {
			rc = mp_fail(&err, MP_E_SEAL_LIMIT,
				     "seal would exceed its table limit: no chunk size fits");
			goto done;
		}
	}
	rc = mp_seal_layout_of_pack(&l, pack, chunk_size, &err);
	if (rc != MP_OK)
		goto done;
	seal_path = mp_path_with_suffix(pack_path, MP_SEAL_SUFFIX);
	s.digests = malloc(l.chunk_count * MP_SHA256_LEN);
	if (!seal_path || !s.digests) {
		rc = mp_fail(&err, MP_E_NOMEM, "out of memory sealing %s", pack_path);
		goto done;
	}
	rc = not_an_input(seal_path, pack, &err);
	if (rc != MP_OK)
		goto done;
	s.flags = unanchored ? MP_SEAL_FLAG_UNANCHORED : 0;
	s.chunk_size = l.chunk_size;
	s.chunk_count = l.chunk_count;
	s.pack_size = pack->file_size;
	memcpy(s.index_sha256, pack->index_digest, MP_SHA256_LEN);
	progress_bar_init(&bar, stderr, "seal", !quiet && !json);
	rc = mp_seal_hash_file(pack->fd, pack_path, &l, (unsigned)jobs, progress_bar_update, &bar,
			       s.digests, s.pack_sha256, &err);
	progress_bar_finish(&bar);
	if (rc != MP_OK)
		goto done;
	if (!unanchored) {
		char hex[MP_SHA256_HEX];
		mp_sha256_hex(s.pack_sha256, hex);
		if (strcmp(hex, pack->m.sha256) != 0) {
			rc = mp_fail(&err, MP_E_FULL_DIGEST,
				     "pack SHA-256 does not match manifest: the file's is %s, "
				     "expert_pack.sha256 is %s; not sealed",
				     hex, pack->m.sha256);
			goto done;
		}
	}
	rc = mp_seal_write(&s, seal_path, &err);
done:
	if (json) {
		seal_json(pack_path, seal_path, rc == MP_OK ? &s : NULL, &err);
		rc = cli_exit_status(rc);
	} else if (rc != MP_OK) {
		rc = cli_report(pack_path, &err);
	} else if (!quiet) {
		char shown[CLI_TEXT_MAX], hex[MP_SHA256_HEX], sz[32];
		cli_print_warnings(pack);
		mp_sha256_hex(s.seal_digest, hex);
		printf("%s: sealed %" PRIu64 " chunks of %s, seal sha256 %s\n",
		       cli_text(shown, seal_path), s.chunk_count,
		       format_bytes(sz, sizeof sz, s.chunk_size), hex);
		if (unanchored)
			printf("%s: %s\n", shown, seal_unanchored_note);
	}
	free(s.digests);
	free(seal_path);
	mp_seal_layout_free(&l);
	mp_pack_close(pack);
	if (cli_finish_stdout(cmd) && !rc)
		rc = CLI_EXIT_IO;
	return rc;
}

/* ---- sign ---------------------------------------------------------------- */

static const char sign_usage[] =
	"Usage: moepack sign --key=KEY.pem [OPTIONS] PACK\n"
	"Sign a sealed PACK with an Ed25519 private key: write the statement\n"
	"PACK.statement (the pack's size and SHA-256, index, seal and manifest\n"
	"digests, and the key's fingerprint) and its signature PACK.sig.\n"
	"The seal must be valid for the pack; its chunks are not re-read here\n"
	"(run 'moepack verify --seal' for that).\n"
	"\n"
	"  -k, --key=FILE           the private key, as `openssl genpkey -algorithm\n"
	"                           ed25519` writes it (unencrypted PEM)\n"
	"  -m, --manifest=FILE      the manifest (default: PACK.manifest.json)\n"
	"  -j, --json               print one JSON object on stdout\n"
	"  -q, --quiet              print nothing unless something fails\n"
	"  -h, --help               show this help and exit\n"
	"\n"
	"Check a signature with stock OpenSSL:\n"
	"  openssl pkeyutl -verify -pubin -inkey PUB.pem -rawin \\\n"
	"      -in PACK.statement -sigfile PACK.sig\n"
	"\n"
	"Exit status: 0 signed, 1 invalid pack or seal, 2 usage error or unusable\n"
	"key, 3 a file cannot be read or written.\n";

static const struct option sign_options[] = {
	{"key", required_argument, NULL, 'k'},
	{"manifest", required_argument, NULL, 'm'},
	{"json", no_argument, NULL, 'j'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* Read PACK.seal and bind it to the open pack. */
enum mp_err cli_load_seal(const struct mp_pack *pack, struct mp_seal **seal,
			  struct mp_seal_layout *l, struct mp_error *err)
{
	char *path = mp_path_with_suffix(pack->path, MP_SEAL_SUFFIX);
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
	if (rc != MP_OK) {
		mp_seal_free(*seal);
		*seal = NULL;
		mp_seal_layout_free(l);
	}
	return rc;
}

int cmd_sign(int argc, char **argv)
{
	const char *cmd = argv[0], *key = NULL;
	struct mp_open_opts open = {0};
	bool json = false, quiet = false;
	struct mp_error err = {0};
	struct mp_pack *pack = NULL;
	struct mp_seal *seal = NULL;
	struct mp_seal_layout l = {0};
	unsigned char fp[MP_SHA256_LEN];
	char fphex[MP_SHA256_HEX] = "", sealhex[MP_SHA256_HEX] = "";
	int c, rc;

	while ((c = cli_getopt(cmd, argc, argv, "k:m:jqh", sign_options)) != -1) {
		switch (c) {
		case 'k':
			key = optarg;
			break;
		case 'm':
			open.manifest_path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(sign_usage, stdout);
			return cli_finish_stdout(cmd);
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error(cmd, "missing PACK");
	if (argc - optind > 1)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	if (!key)
		return cli_usage_error(cmd, "missing --key");

	const char *pack_path = argv[optind];
	rc = mp_pack_open(&pack, pack_path, &open, &err);
	if (rc == MP_OK)
		rc = cli_load_seal(pack, &seal, &l, &err);
	if (rc == MP_OK)
		rc = mp_key_fingerprint(key, true, fp, &err);
	if (rc == MP_OK)
		rc = mp_sign_pack(pack, seal, key, &err);
	if (rc == MP_OK) {
		mp_sha256_hex(fp, fphex);
		mp_sha256_hex(seal->seal_digest, sealhex);
	}
	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "ok", json_boolean(rc == MP_OK));
		json_object_set_new(o, "code", json_string(mp_err_name(rc)));
		json_object_set_new(o, "message", cli_json_text(rc == MP_OK ? "signed" : err.msg));
		json_object_set_new(o, "pack", cli_json_text(pack_path));
		json_object_set_new(o, "key_sha256", rc == MP_OK ? json_string(fphex) : json_null());
		json_object_set_new(o, "seal_sha256",
				    rc == MP_OK ? json_string(sealhex) : json_null());
		if (rc == MP_OK && mp_seal_unanchored(seal))
			json_object_set_new(o, "note", json_string(seal_unanchored_note));
		cli_print_json(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
		rc = cli_exit_status(rc);
	} else if (rc != MP_OK) {
		rc = cli_report(pack_path, &err);
	} else if (!quiet) {
		char shown[CLI_TEXT_MAX];
		cli_text(shown, pack_path);
		printf("%s: signed: %s%s and %s%s (key sha256 %s, seal sha256 %s)\n", shown, shown,
		       MP_STATEMENT_SUFFIX, shown, MP_SIG_SUFFIX, fphex, sealhex);
		if (mp_seal_unanchored(seal))
			printf("%s: %s\n", shown, seal_unanchored_note);
	}
	mp_seal_free(seal);
	mp_seal_layout_free(&l);
	mp_pack_close(pack);
	if (cli_finish_stdout(cmd) && !rc)
		rc = CLI_EXIT_IO;
	return rc;
}
