/*
 * commands.h - moepack's subcommands: each one's table (commands.c) and
 * what its cmd_*.c file supplies to it: the options it parses into its
 * argument struct, a hook for the options that need code, and run().
 */
#ifndef MOEPACK_CLI_COMMANDS_H
#define MOEPACK_CLI_COMMANDS_H

#include <stddef.h>

#include "cli/cli.h"

/* Every subcommand, in the order `moepack --help` lists them. */
extern const struct cli_command *const cli_commands[];
extern const size_t cli_command_count;

extern const struct cli_command cli_verify_command, cli_info_command, cli_ls_command,
	cli_cat_command, cli_dump_command, cli_mkdemo_command, cli_check_gguf_command,
	cli_build_command, cli_top_command, cli_seal_command, cli_sign_command,
	cli_relocate_command;
extern const struct cli_command cli_fetch_command;   /* cmd_fetch.c */
extern const struct cli_command cli_metalink_command; /* cmd_metalink.c */

extern const struct cli_option cli_verify_options[], cli_info_options[], cli_ls_options[],
	cli_cat_options[], cli_dump_options[], cli_mkdemo_options[], cli_check_gguf_options[],
	cli_build_options[], cli_top_options[], cli_seal_options[], cli_sign_options[],
	cli_relocate_options[];
extern const struct cli_option cli_fetch_options[];
extern const struct cli_option cli_metalink_options[];

cli_option_fn cli_verify_on_option, cli_dump_on_option, cli_build_on_option;

cli_run_fn cli_verify_run, cli_info_run, cli_ls_run, cli_cat_run, cli_dump_run, cli_mkdemo_run,
	cli_check_gguf_run, cli_build_run, cli_top_run, cli_seal_run, cli_sign_run,
	cli_relocate_run;
cli_run_fn cli_fetch_run;
cli_run_fn cli_metalink_run;

#endif
