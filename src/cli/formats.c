/* formats.c - the list of the CLI's formats, and picking one (formats.h). */
#include "config.h"

#include "cli/formats.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* The one list of formats: the default first. */
static const struct cli_format *const formats[] = {&cli_format_kimi, &cli_format_expertpack};
#define NFORMATS (sizeof formats / sizeof formats[0])

/* "a, b or c": every format's name. */
static void names(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (size_t i = 0; i < NFORMATS && used < len; i++) {
		const char *sep = i == 0 ? "" : i + 1 == NFORMATS ? " or " : ", ";
		int n = snprintf(buf + used, len - used, "%s%s", sep, formats[i]->name);

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

const struct cli_format *cli_format_named(const char *cmd, const char *name)
{
	char all[128];

	for (size_t i = 0; i < NFORMATS; i++)
		if (strcmp(name, formats[i]->name) == 0)
			return formats[i];
	if (!cmd)
		return NULL;
	names(all, sizeof all);
	cli_usage_error(cmd, "--format: %s is not %s", name, all);
	return NULL;
}

const struct cli_format *cli_format_of_gguf(const char *path)
{
	for (size_t i = 1; i < NFORMATS; i++)
		if (formats[i]->takes_gguf && formats[i]->takes_gguf(path))
			return formats[i];
	return formats[0];
}

/* The format that checks path: --format's, else the file's. */
static size_t format_for(const struct cli_check_gguf_args *a, const char *path)
{
	const struct cli_format *f = a->format ? cli_format_named(NULL, a->format)
					       : cli_format_of_gguf(path);

	for (size_t i = 0; i < NFORMATS; i++)
		if (formats[i] == f)
			return i;
	return 0;
}

int cli_format_check_ggufs(int n, char *const *paths, const struct cli_check_gguf_args *a)
{
	void *state[NFORMATS] = {0};
	int status = 0;

	for (int i = 0; i < n && status >= 0; i++) {
		size_t k = format_for(a, paths[i]);
		int one = formats[k]->check_gguf(&state[k], paths[i], a);

		status = one < 0 ? -1 : cli_worst(status, one);
	}
	for (size_t k = 0; k < NFORMATS; k++)
		if (formats[k]->check_gguf_end)
			formats[k]->check_gguf_end(state[k]);
	return status;
}
