/*
 * metricsfile.h - -o metrics_file (metricsfile.c).
 */
#ifndef MOEPACK_DAEMON_METRICSFILE_H
#define MOEPACK_DAEMON_METRICSFILE_H

#include <stdbool.h>

#include "daemon/fsstate.h"

struct daemon;

/*
 * Render a new snapshot and write its metrics to fs->metrics_file (-o
 * metrics_file) atomically.  False with *err set when it cannot be written.
 */
bool mp_fs_metrics_write(struct mp_fs *fs, struct mp_error *err);
/*
 * On a clean unmount: remove fs->metrics_file if it is still the file the
 * last write made, so that no report of a mount that is gone stays behind
 * to look like a daemon that stopped writing.  Call once the watcher has
 * stopped.
 */
void mp_fs_metrics_remove(struct mp_fs *fs);

/*
 * -o metrics_file from the watcher: write it, settle the snapshot, and log
 * one line when writing starts to fail (*failing) and one when it works
 * again.
 */
void mp_fs_metrics_write_logged(struct mp_fs *fs, bool *failing);

/*
 * -o metrics_file before mounting: its directory must exist, lie outside
 * the mount point (the daemon would wait for its own answer) and not let
 * other users replace the file, and the file must not be one of the
 * mount's inputs, which the rename would replace.  0, or EXIT_USAGE with
 * the message printed.
 */
int daemon_check_metrics_file(struct daemon *d);

/* The first write, right after mounting: 0, or EXIT_IO with the message. */
int daemon_first_metrics_file(struct daemon *d);

#endif
