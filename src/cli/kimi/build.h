/* build.h - `moepack build` of the Kimi pack (GGMLMOEPACKv1) from a GGUF
 * shard set (writer/kimi/build.h). */
#ifndef MOEPACK_CLI_KIMI_BUILD_H
#define MOEPACK_CLI_KIMI_BUILD_H

#include "cli/formats.h"

/* The pack and manifest (or with check_only, the judgement), reported on
 * stdout or stderr; the exit status (the caller finishes stdout).  A signal
 * that stopped the build is raised again once PACK.partial is kept. */
int cli_build_kimi_run(const char *cmd, const struct cli_build_args *a);

#endif
