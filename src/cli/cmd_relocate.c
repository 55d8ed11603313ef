/*
 * cmd_relocate.c - `moepack relocate`: point the manifest of a pack that
 * was copied or moved at where the pack is now.
 *
 * Only the bytes of the pack path's JSON string change (the format's
 * path_key: expert_pack.path, or SGLang's pack_path)
 * (pack/manifestpath.h): every other byte of the manifest stays, so a v2
 * signature (seal/sign.h) still verifies.  The new text is validated with
 * the pack, as `moepack verify` does, before it is written, atomically,
 * over the manifest (never through a link); then the pack is validated
 * again with the manifest on disk.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/outfile.h"
#include "base/text.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "pack/manifestpath.h"
#include "pack/mjson.h"
#include "seal/seal.h"
#include "seal/sign.h"
#include "writer/outputs.h"

struct relocate_args {
	const char *manifest;
	bool json, quiet;
};

#define A struct relocate_args
const struct cli_option cli_relocate_options[] = {
	CLI_OPT_MANIFEST(A, manifest),
	CLI_OPT_JSON(CLI_HELP_JSON, A, json),
	CLI_OPT_QUIET("print nothing unless something fails", A, quiet),
	{NULL},
};
#undef A

/* One run: what it read, made and found. */
struct relocation {
	const char *pack_path;
	char *manifest;          /* the manifest's path, as used */
	char *pack_real;         /* the pack's absolute path: the new value */
	struct stat mst;         /* the manifest as it was read */
	char *raw;               /* its bytes */
	size_t len;
	const char *key;         /* where the format keeps the pack's path */
	char *old_path;          /* its value, for messages */
	struct mp_text_span span;
	char *text;              /* the rewritten bytes */
	size_t text_len;
	bool changed;
	unsigned statement;      /* PACK.statement's version, 0: none */
	struct mp_pack *pack;    /* validated with the manifest on disk */
	struct mp_error err;
};

/* The manifest is a regular file of its own (never a link, which a rename
 * would replace), and no file the pack comes with. */
static enum mp_err check_outputs(struct relocation *r)
{
	static const char *const beside[] = {MP_SEAL_SUFFIX, MP_STATEMENT_SUFFIX, MP_SIG_SUFFIX};
	struct mp_path_set set;
	enum mp_err rc;

	if (lstat(r->manifest, &r->mst) == 0 && S_ISLNK(r->mst.st_mode))
		return mp_fail(&r->err, MP_E_USAGE, "invalid usage: the manifest %s is a symbolic "
			       "link, which relocate would replace: name the file it points to "
			       "with --manifest", r->manifest);
	mp_path_set_init(&set);
	rc = mp_path_set_input(&set, r->pack_path, "pack", &r->err);
	for (size_t i = 0; rc == MP_OK && i < sizeof beside / sizeof beside[0]; i++) {
		char *p = mp_path_with_suffix(r->pack_path, beside[i]);

		if (!p)
			rc = mp_fail(&r->err, MP_E_NOMEM, "out of memory");
		else if (access(p, F_OK) == 0)
			rc = mp_path_set_input(&set, p, "file beside the pack", &r->err);
		free(p);
	}
	if (rc == MP_OK)
		rc = mp_path_set_output(&set, r->manifest, "manifest", &r->err);
	if (rc == MP_OK)
		rc = mp_path_set_check(&set, &r->err);
	mp_path_set_free(&set);
	return rc;
}

/* The manifest's bytes, where its path is in them, and that path. */
static enum mp_err read_manifest(struct relocation *r)
{
	json_t *root;
	bool surrogates;
	enum mp_err rc = mp_manifest_read(r->manifest, &r->raw, &r->len, &r->err);

	if (rc == MP_OK)
		rc = mp_manifest_parse_ex(r->raw, r->len, r->manifest, &root, &surrogates, &r->err);
	if (rc != MP_OK)
		return rc;
	rc = mp_manifest_key_span(r->raw, r->len, r->manifest, r->key, &r->span, &r->err);
	if (rc == MP_OK) {
		const char *old = NULL;

		rc = mp_json_get_string(root, r->key, &old, &r->err);
		if (rc == MP_OK && !(r->old_path = strdup(old)))
			rc = mp_fail(&r->err, MP_E_NOMEM, "out of memory");
	}
	json_decref(root);
	return rc;
}

/* The new text, checked with the pack as verify checks it: nothing is
 * written that a loader would not take. */
static enum mp_err rewrite(struct relocation *r)
{
	struct mp_open_opts o = {.manifest_path = r->manifest};
	struct mp_pack *check;
	enum mp_err rc = mp_manifest_splice_path(r->raw, r->len, &r->span, r->pack_real, &r->text,
						 &r->text_len, &r->err);

	if (rc != MP_OK)
		return rc;
	r->changed = r->text_len != r->len || memcmp(r->text, r->raw, r->len) != 0;
	o.manifest_text = r->text;
	o.manifest_text_len = r->text_len;
	rc = mp_pack_open(&check, r->pack_path, &o, &r->err);
	if (rc != MP_OK) {
		char first[MP_MSG_MAX], shown[CLI_TEXT_MAX];

		/* first is a message, escaped once already; the text parsed
		 * before, so a JSON failure now is the path's */
		snprintf(first, sizeof first, "%s", r->err.msg);
		mp_fail_escaped(&r->err, rc, "%s; %sthe manifest %s is unchanged", first,
				rc == MP_E_MANIFEST_JSON ? "the pack's path cannot be written "
							   "into it: " : "",
				cli_text(shown, r->manifest));
	}
	mp_pack_close(check);
	return rc;
}

/* The manifest is still the file that was read: nobody wrote it since. */
static bool unchanged_since_read(const struct relocation *r)
{
	struct stat now;

	return lstat(r->manifest, &now) == 0 && now.st_dev == r->mst.st_dev &&
	       now.st_ino == r->mst.st_ino && now.st_size == r->mst.st_size &&
	       now.st_mtim.tv_sec == r->mst.st_mtim.tv_sec &&
	       now.st_mtim.tv_nsec == r->mst.st_mtim.tv_nsec &&
	       now.st_ctim.tv_sec == r->mst.st_ctim.tv_sec &&
	       now.st_ctim.tv_nsec == r->mst.st_ctim.tv_nsec;
}

/* The new text over the manifest: a temporary beside it with the
 * manifest's permissions, synced, renamed (base/outfile.h). */
static enum mp_err write_manifest(struct relocation *r)
{
	struct mp_output_tmp t;
	enum mp_err rc;

	if (!unchanged_since_read(r))
		return mp_fail(&r->err, MP_E_MANIFEST_IO, "cannot read manifest %s: it changed "
			       "while being relocated; run relocate again", r->manifest);
	rc = mp_output_tmp_open(&t, r->manifest, MP_TMP_PRIVATE, MP_E_PACK_IO, &r->err);
	if (rc == MP_OK && fchmod(t.fd, r->mst.st_mode & 07777) != 0)
		rc = mp_fail(&r->err, MP_E_PACK_IO, "cannot write %s: %s", r->manifest,
			     strerror(errno));
	if (rc == MP_OK)
		rc = mp_output_tmp_write(&t, r->text, r->text_len, &r->err);
	if (rc == MP_OK)
		rc = mp_output_tmp_rename(&t, &r->err);
	mp_output_tmp_abandon(&t);
	return rc;
}

/* PACK.statement's version (its first line), 0 when there is none. */
static unsigned statement_version(const char *pack_path)
{
	static const char head[] = "moepack-statement v";
	char *path = mp_path_with_suffix(pack_path, MP_STATEMENT_SUFFIX), line[32] = "";
	FILE *f = path ? fopen(path, "re") : NULL;
	unsigned v = 0;

	if (f && fgets(line, sizeof line, f) && strncmp(line, head, sizeof head - 1) == 0 &&
	    (line[sizeof head - 1] == '1' || line[sizeof head - 1] == '2') &&
	    line[sizeof head] == '\n')
		v = (unsigned)(line[sizeof head - 1] - '0');
	if (f)
		fclose(f);
	free(path);
	return v;
}

static enum mp_err relocate(struct relocation *r)
{
	struct mp_open_opts o = {.manifest_path = r->manifest};
	enum mp_err rc;

	if (!(r->pack_real = realpath(r->pack_path, NULL)))
		return mp_fail(&r->err, MP_E_PACK_IO, "cannot read pack %s: %s", r->pack_path,
			       strerror(errno));
	r->key = mp_pack_format_of(r->pack_path, &o)->path_key;
	rc = check_outputs(r);
	if (rc == MP_OK)
		rc = read_manifest(r);
	if (rc == MP_OK)
		rc = rewrite(r);
	if (rc == MP_OK && r->changed)
		rc = write_manifest(r);
	/* and as a loader will open it now */
	if (rc == MP_OK)
		rc = mp_pack_open(&r->pack, r->pack_path, &o, &r->err);
	r->statement = statement_version(r->pack_path);
	return rc;
}

static const char v1_note[] = "a v1 statement signs the manifest's bytes, path included: "
			      "'moepack verify --trust' refuses it now; sign the pack again";

static void relocate_json(const struct relocation *r, enum mp_err rc)
{
	json_t *o = cli_json_result(rc, r->changed ? "relocated" : "unchanged", r->err.msg,
				    r->pack_path);
	bool ok = rc == MP_OK;

	json_object_set_new(o, "manifest", cli_json_text(r->manifest));
	json_object_set_new(o, "path", ok ? cli_json_text(r->pack_real) : json_null());
	json_object_set_new(o, "old_path", r->old_path ? cli_json_text(r->old_path) : json_null());
	json_object_set_new(o, "changed", json_boolean(ok && r->changed));
	json_object_set_new(o, "statement_version",
			    r->statement ? json_integer(r->statement) : json_null());
	json_object_set_new(o, "signature_kept", !ok || !r->statement ? json_null()
					 : json_boolean(r->statement == 2 || !r->changed));
	json_object_set_new(o, "warnings", cli_warnings_json(r->pack));
	cli_print_json(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
}

static int relocate_report(const struct relocation *r, enum mp_err rc, const struct relocate_args *a)
{
	char shown[CLI_TEXT_MAX], path[CLI_TEXT_MAX], old[CLI_TEXT_MAX], man[CLI_TEXT_MAX];

	if (a->json) {
		relocate_json(r, rc);
		return cli_exit_status(rc);
	}
	if (rc != MP_OK)
		return cli_report(r->pack_path, &r->err);
	cli_text(shown, r->pack_path);
	if (r->changed && r->statement == 1)
		fprintf(stderr, "moepack relocate: warning: %s%s: %s\n", shown, MP_STATEMENT_SUFFIX,
			v1_note);
	if (a->quiet)
		return CLI_EXIT_OK;
	cli_print_warnings(r->pack);
	cli_text(path, r->pack_real);
	cli_text(man, r->manifest);
	if (r->changed)
		printf("%s: %s is now %s (was %s); %s rewritten, the pack is valid\n",
		       shown, r->key, path, cli_text(old, r->old_path), man);
	else
		printf("%s: %s is %s already; %s unchanged, the pack is valid\n",
		       shown, r->key, path, man);
	return CLI_EXIT_OK;
}

int cli_relocate_run(int argc, char **argv)
{
	struct relocate_args a = {0};
	struct relocation r = {0};
	struct cli_operands ops;
	enum cli_parse p = cli_parse(&cli_relocate_command, argc, argv, &a, &ops);
	int rc;

	if (p != CLI_RUN)
		return cli_parse_status(p, argv[0]);
	r.pack_path = ops.v[0];
	r.manifest = cli_manifest_path(r.pack_path, a.manifest);
	if (!r.manifest) {
		fprintf(stderr, "moepack %s: out of memory\n", argv[0]);
		return CLI_EXIT_IO;
	}
	cli_remove_temporaries_on_signal();
	rc = relocate_report(&r, relocate(&r), &a);
	mp_pack_close(r.pack);
	free(r.manifest);
	free(r.pack_real);
	free(r.raw);
	free(r.old_path);
	free(r.text);
	return cli_finish(argv[0], rc);
}
