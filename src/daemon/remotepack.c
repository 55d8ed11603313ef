/*
 * remotepack.c - `moepackfs SOURCE MOUNTPOINT -o cache=DIR`: the options
 * turned into fetch/remote.h's, the seal handed to the check of every read
 * and the hook that makes a chunk local before it is read.  Everything
 * that talks to a mirror is below, in fetch/; this file only translates.
 *
 * The partial pack is this daemon's to write while it is mounted, so the
 * mount takes no read lease on it and does not treat its changing times
 * as a pack changed under it (fsstate.h, pack_filled_here): every byte
 * served is checked against the seal after it came from storage anyway.
 */
#include "config.h"

#include "daemon/remotepack.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/outfile.h"
#include "base/text.h"
#include "fetch/s3cred.h"

bool daemon_source_is_url(const char *pack)
{
	static const char *const schemes[] = {"http://", "https://", "s3://", "file://"};

	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
		if (pack && strncmp(pack, schemes[i], strlen(schemes[i])) == 0)
			return true;
	return false;
}

/* One line, exit status 2: a rejection of the options, named. */
static int refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int refuse(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

/* The options only a local pack takes, given with a URL. */
static const char *local_only(const struct options *o)
{
	if (o->manifest)
		return "manifest";
	if (o->seal_path)
		return "seal";
	if (o->entries || o->verify_not_seal)
		return "verify";
	if (o->source)
		return "source";
	return NULL;
}

static int check_cache_dir(const char *dir)
{
	char shown[1024];
	struct stat st;

	mp_text_escape(shown, sizeof shown, dir, strlen(dir), 0);
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return refuse("-o cache=%s: not a directory", shown);
	if (access(dir, W_OK | X_OK) != 0)
		return refuse("-o cache=%s: cannot write there", shown);
	return 0;
}

int daemon_check_remote_options(struct daemon *d)
{
	const struct options *o = &d->opt;
	const char *bad;

	if (!daemon_source_is_url(o->pack))
		return o->remote_given ? refuse("-o cache, mirror, expect_seal_sha256, "
						"remote_timeout, fill, fill_rate, s3_endpoint "
						"and s3_virtual_hosted need a SOURCE that is a "
						"URL (http://, https://, s3://, file://)") : 0;
	if (!o->cache)
		return refuse("a SOURCE that is a URL needs -o cache=DIR (where the pack is "
			      "filled while it is served)");
	if ((bad = local_only(o)))
		return refuse("-o %s is for a local pack: a pack from mirrors is checked "
			      "against its trusted seal (-o trust= or -o expect_seal_sha256=)",
			      bad);
	if (!o->trust && !o->expect_seal)
		return refuse("no root of trust for a pack from mirrors: give -o trust=PUB[:PUB...] "
			      "(a key that signed the seal and manifest) or -o "
			      "expect_seal_sha256=HEX (the seal's digest)");
	return check_cache_dir(o->cache);
}

/* fetch's notes: stderr until the mount's log exists, then the log */
static void note(const char *line, void *arg)
{
	struct daemon *d = arg;

	if (d->fs_ok)
		mp_fs_log(&d->fs, "%s", line);
	else
		fprintf(stderr, PROG ": %s\n", line);
}

/* A reader's wait ends when the session does (an unmount). */
static bool session_gone(void *arg)
{
	struct daemon *d = arg;

	return d->se && fuse_session_exited(d->se);
}

/* The options of fetch/remote.h from ours; strings borrowed from d. */
static void remote_opts(struct daemon *d, const char *out, struct mp_remote_opts *ro)
{
	const struct options *o = &d->opt;

	d->sources[0] = d->source_url;
	for (unsigned i = 0; i < o->nmirrors; i++)
		d->sources[i + 1] = o->mirrors[i];
	mp_fetch_s3_creds_load(&d->creds, d->creds_from, sizeof d->creds_from);
	*ro = (struct mp_remote_opts){
		.fetch = {.sources = d->sources, .nsources = 1 + o->nmirrors, .out = out,
			  .trust_keys = d->trust_keys, .ntrust = (size_t)d->ntrust,
			  .expect_seal_sha256 = o->expect_seal, .max_rate = o->fill_rate,
			  .s3 = mp_fetch_s3_config_from_env(o->s3_endpoint, o->s3_virtual_hosted),
			  .s3_key_id = d->creds.key_id, .s3_secret = d->creds.secret,
			  .s3_token = d->creds.token, .s3_key_from = d->creds_from,
			  .ca_file = mp_fetch_ca_file_default(),
			  .ca_path = getenv("SSL_CERT_DIR"), .note = note, .note_arg = d},
		.timeout_s = o->remote_timeout ? (unsigned)o->remote_timeout
					       : MP_REMOTE_TIMEOUT_DEFAULT,
		.fill = !o->fill_off,
		.abandon = session_gone,
		.abandon_arg = d,
	};
}

/* DIR/NAME.pack, NAME the SOURCE's file name; NULL after its line. */
static char *cache_path(struct daemon *d)
{
	char *name = mp_fetch_source_name(d->source_url), *out = NULL, shown[1024];

	if (name && strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
		out = mp_path_join(d->opt.cache, name);
	if (!out) {
		mp_text_escape(shown, sizeof shown, d->source_url, strlen(d->source_url), 0);
		fprintf(stderr, PROG ": %s: the URL names no file (the pack's name)\n", shown);
		free(name);
		return NULL;
	}
	d->remote_name = name;
	return out;
}

/*
 * DIR/NAME.pack complete from an earlier mount (renamed into place only
 * when every chunk had passed): mounted as the local sealed pack it is,
 * with no mirror asked; its seal is checked against the same root of
 * trust (openpack.c).
 */
static bool already_filled(struct daemon *d, char *out)
{
	char *partial = mp_path_with_suffix(out, ".partial");
	struct stat st;
	bool done = partial && lstat(partial, &st) != 0 && lstat(out, &st) == 0 &&
		    S_ISREG(st.st_mode);

	free(partial);
	if (!done)
		return false;
	d->opt.pack = out;
	d->opt.seal = true;
	d->opt.verify_given = true;
	d->seal_by_default = false;
	/* said once mounted (moepackfs.c), so that a refusal stays one line */
	snprintf(d->verify_note, sizeof d->verify_note, "%.1000s is complete: mounted from it "
		 "with -o verify=seal, no mirror asked", out);
	return true;
}

int daemon_open_remote(struct daemon *d)
{
	struct mp_remote_opts ro;
	struct mp_error err = {0};
	char *out, shown[1024];
	enum mp_err rc;

	d->source_url = d->opt.pack;
	d->opt.pack = NULL;
	if (!(out = cache_path(d)))
		return EXIT_USAGE;
	if (already_filled(d, out))
		return 0;
	if ((rc = mp_fetch_global_init(&err)) == MP_OK) {
		d->curl_ok = true;
		remote_opts(d, out, &ro);
		rc = mp_remote_open(&d->remote, &ro, &err);
	}
	free(out);
	if (rc != MP_OK) {
		mp_text_escape(shown, sizeof shown, d->source_url, strlen(d->source_url), 0);
		fprintf(stderr, PROG ": %s: %s; not mounted\n", shown, err.msg);
		return mp_err_exit_status(rc);
	}
	/* the partial is written here while mounted: no lease can be had on it */
	d->opt.nolease = true;
	d->opt.seal = true;
	d->opt.verify_given = true;
	d->fs.pack_filled_here = true;
	d->fs.remote = d->remote;
	d->fs.remote_source = d->source_url;
	d->opt.pack = strdup(mp_remote_partial_path(d->remote));
	if (!d->opt.pack) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_IO;
	}
	return 0;
}

enum mp_err daemon_remote_seal(struct daemon *d, struct mp_error *err)
{
	return mp_remote_seal_copy(d->remote, &d->seal, err);
}

static int want_chunk(void *arg, uint64_t chunk, bool wait)
{
	return mp_remote_make_local(arg, chunk, wait);
}

static bool refetch_chunk(void *arg, uint64_t chunk)
{
	return mp_remote_refetch(arg, chunk);
}

void daemon_remote_hook(struct daemon *d)
{
	d->check.want = want_chunk;
	d->check.refetch = refetch_chunk;
	d->check.want_arg = d->remote;
}

int daemon_remote_start(struct daemon *d)
{
	struct mp_error err = {0};

	if (!d->remote || mp_remote_start(d->remote, &err) == MP_OK)
		return 0;
	mp_fs_log(&d->fs, "cannot start the fill: %s", err.msg);
	return EXIT_IO;
}

void daemon_remote_stop(struct daemon *d)
{
	if (d->remote)
		mp_remote_stop(d->remote);
}
