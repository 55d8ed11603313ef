/*
 * sharedmaps.c - processes that map the pack shared and writable
 * (see sharedmaps.h).
 */
#include "config.h"

#include "namespace/sharedmaps.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

/* Skip one field and the blanks after it; NULL at the end of the line. */
static const char *next_field(const char *p)
{
	while (*p && *p != ' ' && *p != '\t')
		p++;
	while (*p == ' ' || *p == '\t')
		p++;
	return *p && *p != '\n' ? p : NULL;
}

bool mp_maps_line_writes(const char *line, unsigned major, unsigned minor, uint64_t ino)
{
	const char *perms = next_field(line), *dev, *inode;
	char *end;
	unsigned long maj, min;
	unsigned long long i;

	if (!perms || !(dev = next_field(perms)) || !(dev = next_field(dev)) ||
	    !(inode = next_field(dev)))
		return false;
	/* "rw-s": w second, s (shared) fourth */
	if (strlen(perms) < 4 || perms[1] != 'w' || perms[3] != 's')
		return false;
	maj = strtoul(dev, &end, 16);
	if (*end != ':')
		return false;
	min = strtoul(end + 1, &end, 16);
	if (*end != ' ' && *end != '\t')
		return false;
	if (!isdigit((unsigned char)*inode))
		return false;
	i = strtoull(inode, &end, 10);
	return maj == major && min == minor && i == ino;
}

/* Whether one process's maps (an open file) show such a mapping. */
static bool maps_write(FILE *f, unsigned major, unsigned minor, uint64_t ino)
{
	char line[512];
	bool at_start = true;

	while (fgets(line, sizeof line, f)) {
		size_t n = strlen(line);
		bool whole = n > 0 && line[n - 1] == '\n';

		/* the fields that matter come first: a long path is skipped */
		if (at_start && mp_maps_line_writes(line, major, minor, ino))
			return true;
		at_start = whole;
	}
	return false;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

pid_t mp_maps_find_shared_writer(const char *proc, dev_t dev, uint64_t ino)
{
	DIR *d = opendir(proc);
	struct dirent *e;
	pid_t found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		char path[256];
		FILE *f;

		if (!all_digits(e->d_name) || strlen(e->d_name) > 10)
			continue;
		snprintf(path, sizeof path, "%s/%s/maps", proc, e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (maps_write(f, major(dev), minor(dev), ino))
			found = (pid_t)strtol(e->d_name, NULL, 10);
		fclose(f);
	}
	closedir(d);
	return found;
}
