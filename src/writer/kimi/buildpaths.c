/*
 * buildpaths.c - the files a Kimi build touches (build_internal.h's
 * mp_build_paths(), the locks, mp_build_check_outputs() and
 * mp_build_check_existing()): the pack's path and every path derived from
 * it, PACK.lock and the manifest's lock, every output checked against
 * every input and each other, and an output already there checked to be
 * of its kind before it may be replaced.
 */

#define _GNU_SOURCE /* memmem */
#include "config.h"

#include "writer/kimi/build.h"
#include "writer/kimi/build_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/outfile.h"
#include "base/text.h"
#include "pack/kimi/manifest.h"
#include "seal/seal.h"
#include "writer/outputs.h"

static enum mp_err lock_one(const char *path, int *fd, struct mp_error *err)
{
	struct stat st;
	enum mp_err rc = mp_open_output(path, O_RDWR | O_CREAT, NULL, "lock", MP_E_PACK_IO, fd,
					&st, err);

	if (rc)
		return rc;
	if (flock(*fd, LOCK_EX | LOCK_NB) != 0)
		return mp_fail(err, errno == EWOULDBLOCK ? MP_E_BUILD_LOCKED : MP_E_PACK_IO,
			       "%s: %s", mp_err_summary(MP_E_BUILD_LOCKED), path);
	return MP_OK;
}

/*
 * PACK.lock covers the pack and every file beside it (partial, state,
 * seal, the default manifest); a manifest elsewhere has its own lock, so
 * that two builds given one -m never write it at once.
 */
enum mp_err mp_build_take_lock(struct build *b, struct mp_error *err)
{
	enum mp_err rc = lock_one(b->lock_path, &b->lock_fd, err);

	if (!rc && b->mlock_path)
		rc = lock_one(b->mlock_path, &b->mlock_fd, err);
	return rc;
}

/*
 * --check-only writes nothing, not even PACK.lock: it takes a shared lock
 * on the lock file if there is one (so that it does not judge a pack a
 * build is writing) and none otherwise.
 */
enum mp_err mp_build_peek_lock(struct build *b, struct mp_error *err)
{
	struct stat st;

	b->lock_fd = open(b->lock_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
			  O_CLOEXEC);
	if (b->lock_fd < 0)
		return MP_OK;
	if (fstat(b->lock_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(b->lock_fd);
		b->lock_fd = -1;
		return MP_OK;
	}
	if (flock(b->lock_fd, LOCK_SH | LOCK_NB) != 0)
		return mp_fail(err, errno == EWOULDBLOCK ? MP_E_BUILD_LOCKED : MP_E_PACK_IO,
			       "%s: %s", mp_err_summary(MP_E_BUILD_LOCKED), b->lock_path);
	return MP_OK;
}

static enum mp_err manifest_lock_path(struct build *b, struct mp_error *err);

enum mp_err mp_build_paths(struct build *b, struct mp_error *err)
{
	struct mp_gguf_build_result *res = b->res;
	const char *slash;

	if (b->o->out) {
		res->pack_path = strdup(b->o->out);
	} else {
		size_t n = strlen(b->set->dir) + strlen(b->set->prefix) + 32;

		res->pack_path = malloc(n);
		if (res->pack_path)
			snprintf(res->pack_path, n, "%s/%s.expert-major.pack", b->set->dir,
				 b->set->prefix);
	}
	if (!res->pack_path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	res->manifest_path = b->o->manifest ? strdup(b->o->manifest)
					    : mp_pack_default_manifest_path(res->pack_path);
	b->partial = mp_path_with_suffix(res->pack_path, ".partial");
	b->state = mp_path_with_suffix(res->pack_path, ".partial.state");
	b->lock_path = mp_path_with_suffix(res->pack_path, ".lock");
	b->seal_path = mp_path_with_suffix(res->pack_path, MP_SEAL_SUFFIX);
	b->digests_path = mp_path_with_suffix(res->pack_path, ".partial.digests");
	slash = strrchr(res->pack_path, '/');
	b->dir = !slash ? strdup(".")
			: slash == res->pack_path ? strdup("/")
						  : strndup(res->pack_path,
							    (size_t)(slash - res->pack_path));
	if (!res->manifest_path || !b->partial || !b->state || !b->lock_path || !b->dir ||
	    !b->seal_path || !b->digests_path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	return manifest_lock_path(b, err);
}

/*
 * The lock that covers the manifest: PACK.lock for PACK.manifest.json, and
 * for any other NAME.manifest.json the lock of the pack NAME (the one whose
 * default manifest it is), else MANIFEST.lock.  NULL when that is the
 * pack's own lock.
 */
static enum mp_err manifest_lock_path(struct build *b, struct mp_error *err)
{
	static const char suffix[] = ".manifest.json";
	const char *m = b->res->manifest_path;
	size_t len = strlen(m), slen = sizeof suffix - 1;
	char *base;

	if (len > slen && strcmp(m + len - slen, suffix) == 0)
		base = strndup(m, len - slen);
	else
		base = strdup(m);
	b->mlock_path = base ? mp_path_with_suffix(base, ".lock") : NULL;
	free(base);
	if (!b->mlock_path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	if (strcmp(b->mlock_path, b->lock_path) == 0) {
		free(b->mlock_path);
		b->mlock_path = NULL;
	}
	return MP_OK;
}

/* The regular files of the tokenizer directory, as inputs. */
static enum mp_err add_tokenizer_inputs(struct build *b, struct mp_path_set *ps,
					struct mp_error *err)
{
	const char *dir = b->o->tokenizer_dir;
	struct dirent **names = NULL;
	int n = scandir(dir, &names, NULL, NULL);
	enum mp_err rc = MP_OK;

	for (int i = 0; i < n; i++) {
		size_t len = strlen(dir) + strlen(names[i]->d_name) + 2;
		char *path = rc ? NULL : malloc(len);
		struct stat st;

		if (path) {
			snprintf(path, len, "%s/%s", dir, names[i]->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
				rc = mp_path_set_input(ps, path, "tokenizer file", err);
		} else if (!rc) {
			rc = mp_fail(err, MP_E_NOMEM, "out of memory");
		}
		free(path);
		free(names[i]);
	}
	free(names);
	return rc;
}

/*
 * Every file this build may write, the temporaries it removes first
 * included.  The seal's temporary is private (MP_TMP_PRIVATE): created
 * exclusively under a name no file has, it can never be an input.
 */
static enum mp_err add_outputs(struct build *b, struct mp_path_set *ps, const char *state_tmp,
			       const char *manifest_tmp, struct mp_error *err)
{
	const char *out[][2] = {
		{b->res->pack_path, "the pack"},
		{b->res->manifest_path, "the manifest"},
		{b->partial, "the partial pack"},
		{b->state, "the build state"},
		{b->digests_path, "the partial pack's chunk digests"},
		{state_tmp, "the build state's temporary file"},
		{manifest_tmp, "the manifest's temporary file"},
		{b->lock_path, "the lock"},
		{b->mlock_path, "the manifest's lock"},
		{b->seal_path, "the seal"},
	};
	enum mp_err rc = MP_OK;

	for (size_t i = 0; !rc && i < sizeof out / sizeof out[0]; i++)
		if (out[i][0])
			rc = mp_path_set_output(ps, out[i][0], out[i][1], err);
	return rc;
}

/* Every output against every input and each other, before anything is written. */
enum mp_err mp_build_check_outputs(struct build *b, struct mp_error *err)
{
	struct mp_path_set ps;
	char *state_tmp = mp_path_with_suffix(b->state, ".tmp");
	char *manifest_tmp = mp_path_with_suffix(b->res->manifest_path, ".tmp");
	enum mp_err rc = MP_OK;

	mp_path_set_init(&ps);
	if (!state_tmp || !manifest_tmp)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
	for (size_t i = 0; !rc && i < b->set->count; i++)
		rc = mp_path_set_input_fd(&ps, b->set->shards[i].path, b->set->shards[i].fd,
					  "shard", err);
	if (!rc)
		rc = mp_path_set_input(&ps, b->o->config_path, "config", err);
	if (!rc && b->o->tokenizer_dir)
		rc = add_tokenizer_inputs(b, &ps, err);
	if (!rc && !b->o->check_only)
		rc = add_outputs(b, &ps, state_tmp, manifest_tmp, err);
	if (!rc)
		rc = mp_path_set_check(&ps, err);
	mp_path_set_free(&ps);
	free(state_tmp);
	free(manifest_tmp);
	return rc;
}

/*
 * What lies at an output's name.  A pack is a regular file that starts
 * with the pack magic ("GGMLMOEPACKv1" and three NUL bytes); a seal one
 * that starts with the seal magic; a manifest one that starts with '{'
 * and holds the quoted manifest format string in its first 64 KiB.
 * Anything else (another file, a link, a directory, a FIFO) is not ours to
 * replace without --force.  Returns 0 when nothing is there, 1 when the
 * file is of its kind, -1 (with *why) otherwise.
 */
enum output_kind { KIND_PACK, KIND_MANIFEST, KIND_SEAL };

static int output_is(const char *path, enum output_kind kind, const char **why)
{
	static char buf[64 * 1024];
	struct stat st;
	ssize_t n;
	int fd;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : (*why = strerror(errno), -1);
	if (S_ISLNK(st.st_mode))
		return *why = "a symbolic link", -1;
	if (!S_ISREG(st.st_mode))
		return *why = mp_file_kind(st.st_mode), -1;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return *why = strerror(errno), -1;
	n = pread(fd, buf, sizeof buf, 0);
	close(fd);
	if (n < 0)
		return *why = strerror(errno), -1;
	switch (kind) {
	case KIND_PACK:
		if (n >= MP_MAGIC_LEN && memcmp(buf, MP_MAGIC "\0\0\0", MP_MAGIC_LEN) == 0)
			return 1;
		return *why = "it does not start with the pack magic", -1;
	case KIND_SEAL:
		if (n >= MP_SEAL_MAGIC_LEN &&
		    memcmp(buf, MP_SEAL_MAGIC "\0\0\0", MP_SEAL_MAGIC_LEN) == 0)
			return 1;
		return *why = "it does not start with the seal magic", -1;
	case KIND_MANIFEST:
		if (n > 0 && buf[0] == '{' && memmem(buf, (size_t)n, "\"" MP_FORMAT "\"",
						    sizeof MP_FORMAT + 1))
			return 1;
		return *why = "it is not a moepack manifest", -1;
	}
	return -1;
}

/*
 * Outputs that already exist must be of their kind, or --force must say
 * they may go: a build never replaces a file it cannot tell is its own.
 */
enum mp_err mp_build_check_existing(struct build *b, struct mp_error *err)
{
	const struct {
		const char *path, *what;
		enum output_kind kind;
	} out[] = {
		{b->res->pack_path, "pack", KIND_PACK},
		{b->res->manifest_path, "manifest", KIND_MANIFEST},
		{b->seal_path, "seal", KIND_SEAL},
	};

	for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
		const char *why = NULL;

		if (output_is(out[i].path, out[i].kind, &why) >= 0)
			continue;
		if (!b->o->force)
			return mp_fail(err, MP_E_USAGE, "invalid usage: %s exists and is not a %s "
				       "(%s): give --force to replace it", out[i].path, out[i].what,
				       why);
		if (unlink(out[i].path) != 0)
			return mp_fail(err, MP_E_PACK_IO, "cannot remove %s: %s", out[i].path,
				       strerror(errno));
	}
	return MP_OK;
}

int mp_build_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}
