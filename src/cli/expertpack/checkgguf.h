/* checkgguf.h - `moepack check-gguf --format expertpack-v1`
 * (writer/expertpack/plan.h). */
#ifndef MOEPACK_CLI_EP_CHECKGGUF_H
#define MOEPACK_CLI_EP_CHECKGGUF_H

#include <stdbool.h>

/* The GGUF at path checked with the config (NULL: layers and experts as
 * its tensors say), reported on stdout (json: one object) or stderr; the
 * exit status. */
int cli_check_gguf_ep(const char *path, const char *config, bool json);

/* Whether this format is the file's: its routed experts are MXFP4. */
bool cli_check_gguf_ep_wants(const char *path);

#endif
