/* formats.c - the format names the CLI takes (formats.h). */
#include "config.h"

#include "cli/formats.h"

#include <string.h>

int cli_format_parse(const char *name, bool *ep)
{
	if (strcmp(name, "kimi") == 0)
		*ep = false;
	else if (strcmp(name, "expertpack-v1") == 0)
		*ep = true;
	else
		return -1;
	return 0;
}
