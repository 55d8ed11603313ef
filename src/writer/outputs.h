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
 * path (in directory dir) written whole: PATH.tmp, removed first and opened
 * without following links (mp_open_output), written, fsynced, renamed over
 * path, and dir fsynced.  MP_E_PACK_IO naming the file on failure, when
 * PATH.tmp is gone (unless it could not be opened).
 */
enum mp_err mp_output_write_atomic(const char *path, const char *dir, const char *text,
				   size_t len, struct mp_error *err);

#endif
