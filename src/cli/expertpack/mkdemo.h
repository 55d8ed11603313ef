/* mkdemo.h - `moepack mkdemo --format expertpack-v1`
 * (writer/expertpack/demo.h). */
#ifndef MOEPACK_CLI_EP_MKDEMO_H
#define MOEPACK_CLI_EP_MKDEMO_H

#include "cli/formats.h"

/* The demo pack (or with --gguf the demo GGUF); the exit status.  Refuses
 * the Kimi layout's options (--alignment, --gap, --full-sha256). */
int cli_mkdemo_ep_run(const char *cmd, const struct cli_mkdemo_args *a);

#endif
