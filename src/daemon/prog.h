/*
 * prog.h - moepackfs's name in its messages, and its exit statuses.
 *
 * Every message of the daemon starts "moepackfs: " (PROG); every file of
 * its start-up returns one of these statuses.  A header alone, so that
 * the options (options.c) and the start-up share them without including
 * each other.
 */
#ifndef MOEPACK_DAEMON_PROG_H
#define MOEPACK_DAEMON_PROG_H

#define PROG "moepackfs"

/* Exit statuses: the error classes of errors.h, as for `moepack`. */
enum { EXIT_INVALID = 1, EXIT_USAGE = 2, EXIT_IO = 3 };

#endif
