/*
 * outfile.h - output files written whole and durably, or not at all.
 *
 * Every file a program writes for keeps (a manifest, a build's state, a
 * seal, a signed statement, mkdemo's pack, moepackfs's metrics file) goes
 * through one temporary here: created beside its target without following
 * links, written, fsync()ed, renamed over the target, and the target's
 * directory fsync()ed so that the rename survives a crash.  A reader sees
 * the old file or the new one, never a mixture.  The temporaries still
 * open are known to a signal handler, so an interrupted command leaves
 * none behind; threads may write temporaries at the same time.
 */
#ifndef MOEPACK_OUTFILE_H
#define MOEPACK_OUTFILE_H

#include <stddef.h>
#include <sys/stat.h>

#include "base/errors.h"

/*
 * The directory of path (malloc'd into *dir: "." or "/" when it has no
 * other, NULL when out of memory) and its last component (in path).
 */
void mp_path_split(const char *path, char **dir, const char **base);

/* "DIR/NAME", malloc'd; NULL when out of memory. */
char *mp_path_join(const char *dir, const char *name);

/* path followed by suffix, malloc'd; NULL when out of memory. */
char *mp_path_with_suffix(const char *path, const char *suffix);

/*
 * fsync() the directory dir, so that renames in it are durable.
 * MP_E_PACK_IO "cannot sync directory DIR: REASON" otherwise.
 */
enum mp_err mp_output_sync_dir(const char *dir, struct mp_error *err);

/* How a temporary is named. */
enum mp_output_tmp_name {
	/* PATH.tmp: the caller holds the name (build, under its lock), so a
	 * leftover there is removed first */
	MP_TMP_SIBLING,
	/* DIR/.BASE.tmp-XXXXXXXXXXXXXXXX, 64 random bits: concurrent runs never
	 * meet, and nobody can take the name in advance */
	MP_TMP_PRIVATE,
};

struct mp_output_tmp {
	char *path;  /* the target */
	char *dir;   /* its directory */
	char *tmp;   /* the temporary; NULL once renamed or removed */
	int fd;      /* open for writing, or -1 */
	int slot;    /* in the signal-cleanup table, or -1 */
	enum mp_err code; /* the code of every failure */
	/* the name write failures give: the target for a private temporary
	 * (its name means nothing to the user), else the temporary */
	const char *shown;
};

/*
 * Create the temporary for path, opened without following links, exclusive,
 * and remember its name for mp_output_remove_temporaries().  Failures here
 * and in the calls below carry code (MP_E_PACK_IO for packs and their
 * manifests, MP_E_SEAL_IO for seals).  *t is set up even on failure, so
 * that mp_output_tmp_abandon() may always follow.  code "cannot write file
 * TMP: REASON" (mp_open_output) when the file cannot be created, MP_E_NOMEM.
 */
enum mp_err mp_output_tmp_open(struct mp_output_tmp *t, const char *path,
			       enum mp_output_tmp_name naming, enum mp_err code,
			       struct mp_error *err);

/* fsync() and close the temporary.  code "cannot write SHOWN: REASON". */
enum mp_err mp_output_tmp_close(struct mp_output_tmp *t, struct mp_error *err);

/* data as the temporary's whole contents, then mp_output_tmp_close().
 * code "cannot write SHOWN at byte N: REASON" on a failed write. */
enum mp_err mp_output_tmp_write(struct mp_output_tmp *t, const void *data, size_t len,
				struct mp_error *err);

/*
 * Rename the (closed) temporary over the target, then fsync() the target's
 * directory so that the rename is durable.  code "cannot rename TMP to
 * PATH: REASON", or mp_output_sync_dir()'s message (with code).
 */
enum mp_err mp_output_tmp_rename(struct mp_output_tmp *t, struct mp_error *err);

/* Close the temporary if open, remove it unless renamed, free *t. */
void mp_output_tmp_abandon(struct mp_output_tmp *t);

/*
 * Remove every temporary opened and not yet renamed or abandoned.  Async-
 * signal-safe (unlink(2) only), for a SIGINT or SIGTERM handler.
 */
void mp_output_remove_temporaries(void);

/*
 * path written whole: open, write, rename, and no temporary left behind
 * on failure (unless it could not be opened).  Failures carry code.
 */
enum mp_err mp_output_write_atomic(const char *path, enum mp_output_tmp_name naming,
				   enum mp_err code, const void *data, size_t len,
				   struct mp_error *err);
/*
 * The same, with *written the fstat() of the file that became path: the
 * caller can tell later whether path is still that file (and remove it
 * only then).
 */
enum mp_err mp_output_write_atomic_as(const char *path, enum mp_output_tmp_name naming,
				      enum mp_err code, const void *data, size_t len,
				      struct stat *written, struct mp_error *err);

#endif
