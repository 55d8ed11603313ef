/* mkdemoep.h - `moepack mkdemo --format expertpack-v1` (writer/epdemo.h). */
#ifndef MOEPACK_MKDEMOEP_H
#define MOEPACK_MKDEMOEP_H

#include <stdbool.h>

#include "writer/expertpack/demo.h"

struct cli_mkdemo_ep {
	struct mp_epw_demo_opts d;
	const char *out, *manifest, *gguf_dir;
	bool quiet;
	int argc;
	char **argv;
};

/* The demo pack (or with gguf_dir the demo GGUF); the exit status. */
int cli_mkdemo_ep_run(const char *cmd, struct cli_mkdemo_ep *a);

#endif
