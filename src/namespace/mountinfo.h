/*
 * mountinfo.h - finding a FUSE mount in /proc/self/mountinfo.
 *
 * The daemon must not stat() its own mount point before it serves
 * requests (nobody would answer), so what it needs to know of the mount
 * (its device, whether a moepackfs is there already) comes from the
 * kernel's table instead.  Parsing is kept apart from the file so that it
 * can be tested on crafted lines.
 */
#ifndef MOEPACK_MOUNTINFO_H
#define MOEPACK_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The fields of one mountinfo line that matter here (pointers into it). */
struct mp_mountinfo_entry {
	const char *dev;         /* "major:minor" */
	const char *mountpoint;  /* with the octal escapes (\040...) undone */
	const char *type;        /* the file system type, e.g. "fuse.moepackfs" */
};

/*
 * Split one line ("id parent major:minor root mountpoint options
 * [optional...] - type source superopts") in place.  False when it has
 * fewer than five fields or no type after the "-".
 */
bool mp_mountinfo_parse(char *line, struct mp_mountinfo_entry *e);

/*
 * Read mountinfo lines from f and copy to dev the "major:minor" of the
 * last (the topmost) FUSE mount at `mountpoint` whose type starts with
 * "fuse" and, when want_type is not NULL, is exactly want_type.  False
 * when there is none.  Lines of any length are read.
 */
bool mp_mountinfo_find_fuse(FILE *f, const char *mountpoint, const char *want_type,
			    char *dev, size_t dev_len);

#endif
