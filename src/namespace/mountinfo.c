/* mountinfo.c - finding a FUSE mount in /proc/self/mountinfo (mountinfo.h). */
#include "config.h"

#include "namespace/mountinfo.h"

#include <stdlib.h>
#include <string.h>

static bool is_octal(char c, char max)
{
	return c >= '0' && c <= max;
}

/* Undo the octal escapes of mountinfo (\040 for a space, \134 for '\'). */
static void unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && is_octal(s[1], '3') && is_octal(s[2], '7') &&
		    is_octal(s[3], '7')) {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

bool mp_mountinfo_parse(char *line, struct mp_mountinfo_entry *e)
{
	char *save = NULL, *fields[5], *t, *type = NULL;
	int n = 0;

	for (t = strtok_r(line, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
		if (n < 5) {
			fields[n++] = t;
		} else if (strcmp(t, "-") == 0) {
			type = strtok_r(NULL, " \n", &save);
			break;
		}
	}
	if (n < 5 || !type)
		return false;
	unescape(fields[4]);
	e->dev = fields[2];
	e->mountpoint = fields[4];
	e->type = type;
	return true;
}

static bool is_wanted(const struct mp_mountinfo_entry *e, const char *mountpoint,
		      const char *want_type)
{
	if (strncmp(e->type, "fuse", 4) != 0 || (want_type && strcmp(e->type, want_type) != 0))
		return false;
	return strcmp(e->mountpoint, mountpoint) == 0;
}

bool mp_mountinfo_find_fuse(FILE *f, const char *mountpoint, const char *want_type,
			    char *dev, size_t dev_len)
{
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	while (getline(&line, &cap, f) > 0) {
		struct mp_mountinfo_entry e;

		if (!mp_mountinfo_parse(line, &e) || !is_wanted(&e, mountpoint, want_type))
			continue;
		/* the last match is the mount on top */
		snprintf(dev, dev_len, "%s", e.dev);
		found = true;
	}
	free(line);
	return found;
}
