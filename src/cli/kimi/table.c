/* table.c - the Kimi format's table of the CLI (formats.h). */
#include "config.h"

#include "cli/kimi/kimi.h"

#include <stddef.h>

const struct cli_format cli_format_kimi = {
	.name = "kimi",
	.takes_gguf = NULL, /* the default: a GGUF no other format takes */
	.build = cli_kimi_build,
	.mkdemo = cli_kimi_mkdemo,
	.check_gguf = cli_kimi_check_gguf,
	.check_gguf_end = cli_kimi_check_gguf_end,
};
