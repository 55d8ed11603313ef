/* build.h - `moepack build --format expertpack-v1`: SGLang's expert pack
 * from a DeepSeek-V4-Flash GGUF (writer/expertpack/write.h). */
#ifndef MOEPACK_CLI_EP_BUILD_H
#define MOEPACK_CLI_EP_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/formats.h"

/* The pack and manifest (or with check_only, the judgement); the exit
 * status.  The caller has refused the options this format does not take. */
int cli_build_ep_run(const char *cmd, const struct cli_build_args *a);

/* Whether the GGUF at path is this format's source: its routed experts
 * are MXFP4 (what picks the format when --format is not given). */
bool cli_build_ep_wants(const char *gguf);

#endif
