/* mkdemo.h - `moepack mkdemo` of a Kimi pack, or of a Kimi-K3-shaped GGUF
 * checkpoint (writer/kimi/demo.h, writer/kimi/ggufdemo.h). */
#ifndef MOEPACK_CLI_KIMI_MKDEMO_H
#define MOEPACK_CLI_KIMI_MKDEMO_H

#include "cli/formats.h"
#include "writer/kimi/ggufdemo.h" /* MP_GGUF_DEMO_PREFIX, which mkdemo's --help names */

/* The demo pack, or with a->gguf the checkpoint in that directory, and
 * what it holds on stdout (unless quiet); the exit status. */
int cli_mkdemo_kimi_run(const char *cmd, const struct cli_mkdemo_args *a);

#endif
