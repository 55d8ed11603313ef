/* expertpack.h - SGLang's expert pack's half of the CLI
 * (SGLANG-EXPERTPACK-v1, DeepSeek-V4-Flash): the functions its table,
 * cli_format_expertpack (table.c), is made of. */
#ifndef MOEPACK_CLI_EXPERTPACK_H
#define MOEPACK_CLI_EXPERTPACK_H

#include <stdbool.h>

#include "cli/formats.h"

/* Whether the GGUF at path is this format's source: its routed experts
 * are MXFP4 (build.c). */
bool cli_ep_takes_gguf(const char *path);
/* `build`: the pack and manifest from one GGUF and its config; refuses
 * the Kimi builder's options (build.c). */
int cli_ep_build(const char *cmd, const struct cli_build_args *a);
/* `mkdemo`: a demo pack, or with --gguf the demo GGUF; refuses the Kimi
 * layout's options (mkdemo.c). */
int cli_ep_mkdemo(const char *cmd, const struct cli_mkdemo_args *a);
/* `check-gguf`: one GGUF as SGLang's builder checks it, with --config if
 * given; no state (checkgguf.c). */
int cli_ep_check_gguf(void **state, const char *path, const struct cli_check_gguf_args *a);

#endif
