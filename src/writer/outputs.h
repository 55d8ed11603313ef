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
 * The name an output path stands for: realpath() of its directory plus its
 * last component, which a rename replaces and nothing follows.  *out
 * malloc'd.  MP_E_PACK_IO "cannot write [WHAT ]PATH: DIR: REASON" when the
 * directory cannot be resolved (what may be NULL).
 */
enum mp_err mp_output_resolve(const char *path, const char *what, char **out,
			      struct mp_error *err);

#endif
