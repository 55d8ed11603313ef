/* table.c - SGLang's expert pack's table of the CLI (formats.h). */
#include "config.h"

#include "cli/expertpack/expertpack.h"

#include <stddef.h>

const struct cli_format cli_format_expertpack = {
	.name = "expertpack-v1",
	.takes_gguf = cli_ep_takes_gguf,
	.build = cli_ep_build,
	.mkdemo = cli_ep_mkdemo,
	.check_gguf = cli_ep_check_gguf,
	.check_gguf_end = NULL,
};
