/* outputs.c - outputs never alias an input or each other (outputs.h). */
#include "config.h"

#include "writer/outputs.h"

#include "base/outfile.h"

#include <errno.h>
#include <fcntl.h>
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
