/* outfile.c - output files written whole and durably (outfile.h). */
#include "config.h"

#include "base/outfile.h"

#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- names -------------------------------------------------------------- */

void mp_path_split(const char *path, char **dir, const char **base)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		*dir = strdup(".");
		*base = path;
	} else {
		*dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		*base = slash + 1;
	}
}

char *mp_path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s/%s", dir, name);
	return s;
}

char *mp_path_with_suffix(const char *path, const char *suffix)
{
	size_t len = strlen(path), slen = strlen(suffix);
	char *s = malloc(len + slen + 1);

	if (s) {
		memcpy(s, path, len);
		memcpy(s + len, suffix, slen + 1);
	}
	return s;
}

/* ---- durable directories ------------------------------------------------- */

static enum mp_err sync_dir(const char *dir, enum mp_err code, struct mp_error *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fsync(fd) != 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return mp_fail(err, code, "cannot sync directory %s: %s", dir, strerror(e));
	}
	close(fd);
	return MP_OK;
}

enum mp_err mp_output_sync_dir(const char *dir, struct mp_error *err)
{
	return sync_dir(dir, MP_E_PACK_IO, err);
}

/* ---- temporaries -------------------------------------------------------- */

/*
 * The temporaries being written, for mp_output_remove_temporaries() in a
 * signal handler: the one piece of global state, because a handler has no
 * other way to find them.  A slot is claimed (compare-and-swap, as the
 * daemon's main thread and its watcher may both write -o metrics_file),
 * its name completed, and only then marked live.  A name is tracked only
 * once the exclusive create made it ours, with the termination signals
 * blocked from the create to the tracking: tracking it earlier would let
 * a signal unlink a file of that name that someone else owns (a private
 * name taken by another run, or planted), and tracking it later would let
 * a signal leave ours behind.  Freed once the file is gone or renamed.
 * mkdemo holds three at once; a temporary with no free slot is simply not
 * tracked.
 */
#define MAX_TEMPORARIES 3
/* draws of a private temporary's name before giving up */
#define PRIVATE_TRIES 16
enum { SLOT_FREE, SLOT_CLAIMED, SLOT_LIVE };
static char temporary_name[MAX_TEMPORARIES][PATH_MAX];
static atomic_int temporary_slot[MAX_TEMPORARIES];

void mp_output_remove_temporaries(void)
{
	for (int i = 0; i < MAX_TEMPORARIES; i++)
		if (atomic_load(&temporary_slot[i]) == SLOT_LIVE)
			unlink(temporary_name[i]);
}

static void temporary_track(struct mp_output_tmp *t)
{
	if (strlen(t->tmp) >= PATH_MAX)
		return; /* cannot happen: open() refused it */
	for (int i = 0; i < MAX_TEMPORARIES; i++) {
		int free_slot = SLOT_FREE;

		if (atomic_compare_exchange_strong(&temporary_slot[i], &free_slot,
						   SLOT_CLAIMED)) {
			strcpy(temporary_name[i], t->tmp);
			atomic_store(&temporary_slot[i], SLOT_LIVE);
			t->slot = i;
			return;
		}
	}
}

static void temporary_untrack(struct mp_output_tmp *t)
{
	if (t->slot >= 0)
		atomic_store(&temporary_slot[t->slot], SLOT_FREE);
	t->slot = -1;
}

/* Create t->tmp exclusively, without following links, and track it. */
static enum mp_err create_tracked(struct mp_output_tmp *t, struct mp_error *err)
{
	sigset_t stop, old;
	struct stat st;
	enum mp_err rc;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	rc = mp_open_output(t->tmp, O_WRONLY | O_CREAT | O_EXCL, NULL, "file", t->code, &t->fd,
			    &st, err);
	if (rc == MP_OK)
		temporary_track(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* PATH.tmp, whatever a crash or a hand left there removed first (a link
 * without its target). */
static enum mp_err open_sibling(struct mp_output_tmp *t, struct mp_error *err)
{
	t->tmp = mp_path_with_suffix(t->path, ".tmp");
	if (!t->tmp)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	unlink(t->tmp);
	return create_tracked(t, err);
}

/* 64 bits nobody can guess: getrandom(2), or (never seen) time and address. */
static uint64_t unpredictable(void)
{
	uint64_t v;
	struct timespec ts;

	if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v)
		return v;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&v ^
	       (uint64_t)getpid() << 32;
}

/*
 * DIR/.BASE.tmp-XXXXXXXXXXXXXXXX, 64 random bits: a name nobody can take
 * in advance (a world-writable directory's other users included), and
 * concurrent runs never meet.  A name that exists all the same is worth
 * a few more draws, no more.
 */
static enum mp_err open_private(struct mp_output_tmp *t, const char *base,
				struct mp_error *err)
{
	size_t len = strlen(t->dir) + strlen(base) + 64;
	struct stat st;

	t->tmp = malloc(len);
	if (!t->tmp)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (unsigned attempt = 0;; attempt++) {
		enum mp_err code;

		snprintf(t->tmp, len, "%s/.%s.tmp-%016" PRIx64, t->dir, base, unpredictable());
		code = create_tracked(t, err);
		if (code == MP_OK || lstat(t->tmp, &st) != 0 || attempt == PRIVATE_TRIES - 1)
			return code;
	}
}

enum mp_err mp_output_tmp_open(struct mp_output_tmp *t, const char *path,
			       enum mp_output_tmp_name naming, enum mp_err code,
			       struct mp_error *err)
{
	const char *base;
	enum mp_err rc;

	memset(t, 0, sizeof *t);
	t->fd = -1;
	t->slot = -1;
	t->code = code;
	t->path = strdup(path);
	if (!t->path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	mp_path_split(t->path, &t->dir, &base);
	if (!t->dir)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	rc = naming == MP_TMP_PRIVATE ? open_private(t, base, err) : open_sibling(t, err);
	if (rc) {
		temporary_untrack(t);
		free(t->tmp); /* nothing of ours is there */
		t->tmp = NULL;
		return rc;
	}
	t->shown = naming == MP_TMP_PRIVATE ? t->path : t->tmp;
	return MP_OK;
}

enum mp_err mp_output_tmp_close(struct mp_output_tmp *t, struct mp_error *err)
{
	int fd = t->fd;
	int failed = fsync(fd) != 0;

	t->fd = -1;
	failed |= close(fd) != 0;
	if (failed)
		return mp_fail(err, t->code, "cannot write %s: %s", t->shown, strerror(errno));
	return MP_OK;
}

enum mp_err mp_output_tmp_write(struct mp_output_tmp *t, const void *data, size_t len,
				struct mp_error *err)
{
	size_t done;
	int e = mp_pwrite_all(t->fd, data, len, 0, &done);

	if (e) {
		close(t->fd);
		t->fd = -1;
		return mp_fail(err, t->code, "cannot write %s at byte %zu: %s", t->shown, done,
			       mp_write_failure(e));
	}
	return mp_output_tmp_close(t, err);
}

enum mp_err mp_output_tmp_rename(struct mp_output_tmp *t, struct mp_error *err)
{
	if (rename(t->tmp, t->path) != 0)
		return mp_fail(err, t->code, "cannot rename %s to %s: %s", t->tmp, t->path,
			       strerror(errno));
	temporary_untrack(t);
	free(t->tmp);
	t->tmp = NULL;
	return sync_dir(t->dir, t->code, err);
}

void mp_output_tmp_abandon(struct mp_output_tmp *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (t->tmp)
		unlink(t->tmp);
	temporary_untrack(t);
	free(t->tmp);
	free(t->dir);
	free(t->path);
	t->tmp = t->dir = t->path = NULL;
	t->shown = NULL;
}

enum mp_err mp_output_write_atomic(const char *path, enum mp_output_tmp_name naming,
				   enum mp_err code, const void *data, size_t len,
				   struct mp_error *err)
{
	return mp_output_write_atomic_as(path, naming, code, data, len, NULL, err);
}

enum mp_err mp_output_write_atomic_as(const char *path, enum mp_output_tmp_name naming,
				      enum mp_err code, const void *data, size_t len,
				      struct stat *written, struct mp_error *err)
{
	struct mp_output_tmp t;
	enum mp_err rc = mp_output_tmp_open(&t, path, naming, code, err);

	if (!rc && written && fstat(t.fd, written) != 0)
		rc = mp_fail(err, code, "cannot write %s: %s", t.shown, strerror(errno));
	if (!rc)
		rc = mp_output_tmp_write(&t, data, len, err);
	if (!rc)
		rc = mp_output_tmp_rename(&t, err);
	mp_output_tmp_abandon(&t);
	return rc;
}
