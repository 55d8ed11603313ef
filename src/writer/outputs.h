/*
 * outputs.h - the files a command will write, checked against the files it
 * reads and against each other before anything is written.
 *
 * An output that names an input would destroy it (a pack renamed over a
 * shard, a manifest over the config), and two outputs that name one file
 * would overwrite each other.  An output is identified by its directory
 * entry: realpath() of its directory plus its own name (the name is
 * replaced by a rename, never followed), and, when something already
 * exists there, by lstat()'s device and inode.  An input is identified by
 * realpath() and stat()'s device and inode, since it is read through any
 * link.  Two files alias when their device and inode agree or their
 * resolved names do.
 *
 * And how outputs are written: whole and durable, or not at all.
 */
#ifndef MOEPACK_OUTPUTS_H
#define MOEPACK_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/errors.h"

struct mp_path_id {
	char *path;       /* as given, for messages */
	const char *what; /* "shard", "config", "--out", ... (static) */
	char *name;       /* resolved name, or NULL */
	bool output;
	bool have_id;
	dev_t dev;
	ino_t ino;
};

struct mp_path_set {
	size_t n, cap;
	struct mp_path_id *ids;
};

void mp_path_set_init(struct mp_path_set *s);
void mp_path_set_free(struct mp_path_set *s);

/* An input file that exists (MP_E_USAGE naming it if it cannot be resolved). */
enum mp_err mp_path_set_input(struct mp_path_set *s, const char *path, const char *what,
			      struct mp_error *err);
/* An input already open as fd (its identity is fstat()'s). */
enum mp_err mp_path_set_input_fd(struct mp_path_set *s, const char *path, int fd,
				 const char *what, struct mp_error *err);
/* An output, which may not exist yet; its directory must (MP_E_PACK_IO). */
enum mp_err mp_path_set_output(struct mp_path_set *s, const char *path, const char *what,
			       struct mp_error *err);

/*
 * MP_OK when no output aliases an input or another output; otherwise
 * MP_E_USAGE: "invalid usage: output PATH (WHAT) is the same file as WHAT
 * PATH", for the first such pair.
 */
enum mp_err mp_path_set_check(const struct mp_path_set *s, struct mp_error *err);

/*
 * The directory of path (malloc'd into *dir: "." or "/" when it has no
 * other, NULL when out of memory) and its last component (in path).
 */
void mp_path_split(const char *path, char **dir, const char **base);

/*
 * The name an output path stands for: realpath() of its directory plus its
 * last component, which a rename replaces and nothing follows.  *out
 * malloc'd.  MP_E_PACK_IO "cannot write [WHAT ]PATH: DIR: REASON" when the
 * directory cannot be resolved (what may be NULL).
 */
enum mp_err mp_output_resolve(const char *path, const char *what, char **out,
			      struct mp_error *err);

/* "DIR/NAME", malloc'd; NULL when out of memory. */
char *mp_path_join(const char *dir, const char *name);

/*
 * pwrite() all n bytes of buf at *pos, retrying EINTR and short writes;
 * *pos ends after the last byte written.  0 when all went out, else the
 * errno of the failed pwrite(), or -1 when it wrote nothing (a full file
 * system): the writers of packs and GGUF files word their own messages.
 */
int mp_output_pwrite(int fd, const void *buf, size_t n, uint64_t *pos);

/*
 * fsync() the directory dir, so that renames in it are durable.
 * MP_E_PACK_IO "cannot sync directory DIR: REASON" otherwise.
 */
enum mp_err mp_output_sync_dir(const char *dir, struct mp_error *err);

/*
 * A temporary next to an output, written and then renamed over it: the one
 * atomic write of the writers.  mp_output_write_atomic() is open + commit;
 * mkdemo opens its three temporaries before the long pack write (a missing
 * directory fails before gigabytes are written), writes them all, and only
 * then renames them, the manifest last.
 */
enum mp_output_tmp_name {
	/* PATH.tmp: the caller holds the name (build, under its lock), so a
	 * leftover there is removed first */
	MP_TMP_SIBLING,
	/* DIR/.BASE.tmp-PID-N, the first N free: concurrent runs never meet */
	MP_TMP_PRIVATE,
};

struct mp_output_tmp {
	char *path;  /* the target */
	char *dir;   /* its directory */
	char *tmp;   /* the temporary; NULL once renamed or removed */
	int fd;      /* open for writing, or -1 */
	int slot;    /* in the signal-cleanup table, or -1 */
	/* the name write failures give: the target for a private temporary
	 * (its name means nothing to the user), else the temporary */
	const char *shown;
};

/*
 * Create the temporary for path, opened without following links, exclusive,
 * and remember its name for mp_output_remove_temporaries().  *t is set up
 * even on failure, so that mp_output_tmp_abandon() may always follow.
 * MP_E_PACK_IO "cannot write file TMP: REASON" (mp_open_output) when the
 * file cannot be created, MP_E_NOMEM.
 */
enum mp_err mp_output_tmp_open(struct mp_output_tmp *t, const char *path,
			       enum mp_output_tmp_name naming, struct mp_error *err);

/* fsync() and close the temporary.  MP_E_PACK_IO "cannot write SHOWN: REASON". */
enum mp_err mp_output_tmp_close(struct mp_output_tmp *t, struct mp_error *err);

/* text as the temporary's whole contents, then mp_output_tmp_close().
 * MP_E_PACK_IO "cannot write SHOWN at byte N: REASON" on a failed write. */
enum mp_err mp_output_tmp_write(struct mp_output_tmp *t, const char *text, size_t len,
				struct mp_error *err);

/*
 * Rename the (closed) temporary over the target, then fsync() dir (NULL:
 * the target's directory) so that the rename is durable.  MP_E_PACK_IO
 * "cannot rename TMP to PATH: REASON" or mp_output_sync_dir()'s message.
 */
enum mp_err mp_output_tmp_rename(struct mp_output_tmp *t, const char *dir,
				 struct mp_error *err);

/* mp_output_tmp_write() then mp_output_tmp_rename(). */
enum mp_err mp_output_tmp_commit(struct mp_output_tmp *t, const char *text, size_t len,
				 const char *dir, struct mp_error *err);

/* Close the temporary if open, remove it unless renamed, free *t. */
void mp_output_tmp_abandon(struct mp_output_tmp *t);

/*
 * Remove every temporary opened and not yet renamed or abandoned.  Async-
 * signal-safe (unlink(2) only), for a SIGINT or SIGTERM handler.
 */
void mp_output_remove_temporaries(void);

/*
 * path (in directory dir) written whole: PATH.tmp, removed first and opened
 * without following links (mp_open_output), written, fsynced, renamed over
 * path, and dir fsynced.  MP_E_PACK_IO naming the file on failure, when
 * PATH.tmp is gone (unless it could not be opened).
 */
enum mp_err mp_output_write_atomic(const char *path, const char *dir, const char *text,
				   size_t len, struct mp_error *err);

#endif
