/* kimi.h - the Kimi format's half of the CLI (GGMLMOEPACKv1, Kimi K3):
 * the functions its table, cli_format_kimi (table.c), is made of. */
#ifndef MOEPACK_CLI_KIMI_H
#define MOEPACK_CLI_KIMI_H

#include "cli/formats.h"

/* `build`: the pack and manifest from a GGUF shard set (build.c). */
int cli_kimi_build(const char *cmd, const struct cli_build_args *a);
/* `mkdemo`: a demo pack, or with --gguf a small K3-shaped checkpoint
 * (mkdemo.c). */
int cli_kimi_mkdemo(const char *cmd, const struct cli_mkdemo_args *a);
/* `check-gguf`: a file's tensor types, or a split set once (checkgguf.c). */
int cli_kimi_check_gguf(void **state, const char *path, const struct cli_check_gguf_args *a);
void cli_kimi_check_gguf_end(void *state);

#endif
