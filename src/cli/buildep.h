/* buildep.h - `moepack build --format expertpack-v1`: SGLang's expert pack
 * from a DeepSeek-V4-Flash GGUF (writer/epwrite.h). */
#ifndef MOEPACK_BUILDEP_H
#define MOEPACK_BUILDEP_H

#include <stdbool.h>
#include <stdint.h>

#include "writer/expertpack/write.h"

struct cli_build_ep {
	struct mp_epw_opts o;
	bool check_only, json, quiet;
	int argc;
	char **argv;   /* for builder.command */
};

/* The pack and manifest; the exit status. */
int cli_build_ep_run(const char *cmd, struct cli_build_ep *a);

/* "kimi" or "expertpack-v1" into *ep; -1 for any other name. */
int cli_format_parse(const char *name, bool *ep);

#endif
