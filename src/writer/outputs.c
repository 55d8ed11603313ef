/* outputs.c - outputs never alias an input or each other (outputs.h). */
#include "config.h"

#include "writer/outputs.h"

#include "base/file.h"
#include "pack/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void mp_path_set_init(struct mp_path_set *s)
{
	memset(s, 0, sizeof *s);
}

void mp_path_set_free(struct mp_path_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->ids[i].path);
		free(s->ids[i].name);
	}
	free(s->ids);
	memset(s, 0, sizeof *s);
}

static struct mp_path_id *add(struct mp_path_set *s, const char *path, const char *what,
			      bool output, struct mp_error *err)
{
	struct mp_path_id *id;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct mp_path_id *grown = realloc(s->ids, cap * sizeof *grown);

		if (!grown) {
			mp_fail(err, MP_E_NOMEM, "out of memory");
			return NULL;
		}
		s->ids = grown;
		s->cap = cap;
	}
	id = &s->ids[s->n];
	memset(id, 0, sizeof *id);
	id->path = strdup(path);
	if (!id->path) {
		mp_fail(err, MP_E_NOMEM, "out of memory");
		return NULL;
	}
	id->what = what;
	id->output = output;
	s->n++;
	return id;
}

static void set_id(struct mp_path_id *id, const struct stat *st)
{
	id->have_id = true;
	id->dev = st->st_dev;
	id->ino = st->st_ino;
}

/* An input, identified by *st when known. */
static enum mp_err add_input(struct mp_path_set *s, const char *path, const char *what,
			     const struct stat *st, struct mp_error *err)
{
	struct mp_path_id *id = add(s, path, what, false, err);

	if (!id)
		return err->code;
	if (st)
		set_id(id, st);
	id->name = realpath(path, NULL);
	return MP_OK;
}

enum mp_err mp_path_set_input(struct mp_path_set *s, const char *path, const char *what,
			      struct mp_error *err)
{
	struct stat st;

	return add_input(s, path, what, stat(path, &st) == 0 ? &st : NULL, err);
}

enum mp_err mp_path_set_input_fd(struct mp_path_set *s, const char *path, int fd,
				 const char *what, struct mp_error *err)
{
	struct stat st;

	return add_input(s, path, what, fstat(fd, &st) == 0 ? &st : NULL, err);
}

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

enum mp_err mp_output_resolve(const char *path, const char *what, char **out,
			      struct mp_error *err)
{
	const char *base;
	char *dir, *real;
	size_t len;

	mp_path_split(path, &dir, &base);
	if (!dir)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	real = realpath(dir, NULL);
	if (!real) {
		enum mp_err rc = mp_fail(err, MP_E_PACK_IO, "cannot write %s%s%s: %s: %s",
					 what ? what : "", what ? " " : "", path, dir,
					 strerror(errno));

		free(dir);
		return rc;
	}
	free(dir);
	len = strlen(real) + strlen(base) + 2;
	*out = malloc(len);
	if (!*out) {
		free(real);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	snprintf(*out, len, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
	free(real);
	return MP_OK;
}

enum mp_err mp_path_set_output(struct mp_path_set *s, const char *path, const char *what,
			       struct mp_error *err)
{
	struct mp_path_id *id = add(s, path, what, true, err);
	struct stat st;
	enum mp_err rc;

	if (!id)
		return err->code;
	rc = mp_output_resolve(path, what, &id->name, err);
	if (rc)
		return rc;
	if (lstat(path, &st) == 0)
		set_id(id, &st);
	return MP_OK;
}

static bool same(const struct mp_path_id *a, const struct mp_path_id *b)
{
	if (a->have_id && b->have_id && a->dev == b->dev && a->ino == b->ino)
		return true;
	return a->name && b->name && strcmp(a->name, b->name) == 0;
}

enum mp_err mp_path_set_check(const struct mp_path_set *s, struct mp_error *err)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct mp_path_id *o = &s->ids[i];

		if (!o->output)
			continue;
		/* inputs first: destroying one is the worse outcome */
		for (size_t j = 0; j < s->n; j++) {
			const struct mp_path_id *in = &s->ids[j];

			if (!in->output && same(o, in))
				return mp_fail(err, MP_E_USAGE, "invalid usage: output %s (%s) "
					       "is the same file as %s %s", o->path, o->what,
					       in->what, in->path);
		}
		for (size_t j = i + 1; j < s->n; j++) {
			const struct mp_path_id *p = &s->ids[j];

			if (p->output && same(o, p))
				return mp_fail(err, MP_E_USAGE, "invalid usage: output %s (%s) "
					       "is the same file as output %s (%s)", o->path,
					       o->what, p->path, p->what);
		}
	}
	return MP_OK;
}

char *mp_path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s/%s", dir, name);
	return s;
}

int mp_output_pwrite(int fd, const void *buf, size_t n, uint64_t *pos)
{
	const unsigned char *p = buf;

	while (n > 0) {
		ssize_t done = pwrite(fd, p, n, (off_t)*pos);

		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0)
			return done < 0 ? errno : -1;
		p += done;
		n -= (size_t)done;
		*pos += (uint64_t)done;
	}
	return 0;
}

/* ---- durable files ------------------------------------------------------- */

enum mp_err mp_output_sync_dir(const char *dir, struct mp_error *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fsync(fd) != 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return mp_fail(err, MP_E_PACK_IO, "cannot sync directory %s: %s", dir,
			       strerror(e));
	}
	close(fd);
	return MP_OK;
}

/* ---- temporaries -------------------------------------------------------- */

/*
 * The temporaries being written, for mp_output_remove_temporaries() in a
 * signal handler: the one piece of global state, because a handler has no
 * other way to find them.  A slot's name is complete before it is marked
 * live, and it is marked live before the file is created (a signal in
 * between would otherwise leave the file behind; unlinking a name not yet
 * created is harmless), and unmarked only once the file is gone or
 * renamed.  mkdemo holds three at once; a temporary with no free slot is
 * simply not tracked.
 */
#define MAX_TEMPORARIES 3
static char temporary_name[MAX_TEMPORARIES][PATH_MAX];
static volatile sig_atomic_t temporary_live[MAX_TEMPORARIES];

void mp_output_remove_temporaries(void)
{
	for (int i = 0; i < MAX_TEMPORARIES; i++)
		if (temporary_live[i])
			unlink(temporary_name[i]);
}

static void temporary_track(struct mp_output_tmp *t)
{
	if (strlen(t->tmp) >= PATH_MAX)
		return; /* cannot happen: open() refused it */
	for (int i = 0; i < MAX_TEMPORARIES; i++) {
		if (!temporary_live[i]) {
			strcpy(temporary_name[i], t->tmp);
			temporary_live[i] = 1;
			t->slot = i;
			return;
		}
	}
}

static void temporary_untrack(struct mp_output_tmp *t)
{
	if (t->slot >= 0)
		temporary_live[t->slot] = 0;
	t->slot = -1;
}

/* PATH.tmp, whatever a crash or a hand left there removed first (a link
 * without its target). */
static enum mp_err open_sibling(struct mp_output_tmp *t, struct mp_error *err)
{
	struct stat st;

	t->tmp = mp_path_with_suffix(t->path, ".tmp");
	if (!t->tmp)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	unlink(t->tmp);
	temporary_track(t);
	return mp_open_output(t->tmp, O_WRONLY | O_CREAT | O_EXCL, NULL, "file", MP_E_PACK_IO,
			      &t->fd, &st, err);
}

/* DIR/.BASE.tmp-PID-N for the first N no other run holds. */
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

		snprintf(t->tmp, len, "%s/.%s.tmp-%ld-%u", t->dir, base, (long)getpid(),
			 attempt);
		temporary_untrack(t);
		temporary_track(t);
		code = mp_open_output(t->tmp, O_WRONLY | O_CREAT | O_EXCL, NULL, "file",
				      MP_E_PACK_IO, &t->fd, &st, err);
		/* only a name taken by another run is worth another attempt */
		if (code == MP_OK || lstat(t->tmp, &st) != 0 || attempt == 999)
			return code;
	}
}

enum mp_err mp_output_tmp_open(struct mp_output_tmp *t, const char *path,
			       enum mp_output_tmp_name naming, struct mp_error *err)
{
	const char *base;
	enum mp_err rc;

	memset(t, 0, sizeof *t);
	t->fd = -1;
	t->slot = -1;
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
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", t->shown,
			       strerror(errno));
	return MP_OK;
}

enum mp_err mp_output_tmp_write(struct mp_output_tmp *t, const char *text, size_t len,
				struct mp_error *err)
{
	enum mp_err rc = mp_pwrite_full(t->fd, text, len, 0, t->shown, err);

	if (rc) {
		close(t->fd);
		t->fd = -1;
		return rc;
	}
	return mp_output_tmp_close(t, err);
}

enum mp_err mp_output_tmp_rename(struct mp_output_tmp *t, const char *dir,
				 struct mp_error *err)
{
	if (rename(t->tmp, t->path) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot rename %s to %s: %s", t->tmp,
			       t->path, strerror(errno));
	temporary_untrack(t);
	free(t->tmp);
	t->tmp = NULL;
	return mp_output_sync_dir(dir ? dir : t->dir, err);
}

enum mp_err mp_output_tmp_commit(struct mp_output_tmp *t, const char *text, size_t len,
				 const char *dir, struct mp_error *err)
{
	enum mp_err rc = mp_output_tmp_write(t, text, len, err);

	return rc ? rc : mp_output_tmp_rename(t, dir, err);
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

enum mp_err mp_output_write_atomic(const char *path, const char *dir, const char *text,
				   size_t len, struct mp_error *err)
{
	struct mp_output_tmp t;
	enum mp_err rc = mp_output_tmp_open(&t, path, MP_TMP_SIBLING, err);

	if (!rc)
		rc = mp_output_tmp_commit(&t, text, len, dir, err);
	mp_output_tmp_abandon(&t);
	return rc;
}
