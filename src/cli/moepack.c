/* moepack.c - the `moepack` command: dispatch to a subcommand. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "base/text.h"
#include "cli/cli.h"
#include "cli/commands.h"

static void usage(FILE *out)
{
	fputs("Usage: moepack [--version] [--help] COMMAND [ARGS]\n"
	      "Verify, inspect and build MoE expert packs: Kimi K3's GGML pack\n"
	      "(GGMLMOEPACKv1) and SGLang's DeepSeek-V4-Flash pack (SGLANG-EXPERTPACK-v1).\n"
	      "\n"
	      "Commands:\n", out);
	for (size_t i = 0; i < cli_command_count; i++)
		fprintf(out, "  %-10s %s\n", cli_commands[i]->name, cli_commands[i]->summary);
	fputs("\n"
	      "Run 'moepack COMMAND --help' or 'moepack help COMMAND' for a command's\n"
	      "options.\n"
	      "Exit status: 0 success, 1 invalid pack, 2 usage error, 3 I/O error.\n"
	      "See moepack(1) and moepack-pack(5).\n", out);
}

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < cli_command_count; i++)
		if (strcmp(cli_commands[i]->name, name) == 0)
			return cli_commands[i];
	return NULL;
}

/*
 * The hidden `moepack --list-options [CMD]` (the bash completion's source):
 * without CMD the commands and their operands, one a line; with CMD that
 * command's options.
 */
static int list_options(int argc, char **argv)
{
	const struct cli_command *cmd = argc == 3 ? find_command(argv[2]) : NULL;

	if (argc == 2) {
		for (size_t i = 0; i < cli_command_count; i++)
			printf("%s %s\n", cli_commands[i]->name,
			       cli_commands[i]->completion ? cli_commands[i]->completion
							   : cli_commands[i]->operands);
		return cli_finish_stdout("--list-options");
	}
	if (cmd)
		return cli_list_options(cmd);
	fprintf(stderr, "moepack: --list-options takes at most one known command\n");
	return CLI_EXIT_USAGE;
}

/* The i-th command's name, for mp_text_nearest(). */
static const char *command_name(size_t i, const void *arg)
{
	(void)arg;
	return cli_commands[i]->name;
}

static int unknown_command(const char *name)
{
	char shown[CLI_TEXT_MAX];
	const char *near = mp_text_nearest(name, command_name, NULL, cli_command_count);

	fprintf(stderr, "moepack: unknown command '%s'", cli_text(shown, name));
	if (near)
		fprintf(stderr, " (did you mean '%s'?)", near);
	fputs("\nTry 'moepack --help' for a list of commands.\n", stderr);
	return CLI_EXIT_USAGE;
}

/* `moepack help [COMMAND]` */
static int help(int argc, char **argv)
{
	const struct cli_command *cmd;

	if (argc == 2) {
		usage(stdout);
		return cli_finish_stdout("help");
	}
	if (argc > 3) {
		fprintf(stderr, "moepack help: too many arguments\n"
			"Try 'moepack --help' for more information.\n");
		return CLI_EXIT_USAGE;
	}
	cmd = find_command(argv[2]);
	if (!cmd)
		return unknown_command(argv[2]);
	cli_print_help(cmd);
	return cli_finish_stdout(cmd->name);
}

int main(int argc, char **argv)
{
	const struct cli_command *cmd;
	const char *arg = argc > 1 ? argv[1] : NULL;

	if (!arg) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
		usage(stdout);
		return cli_finish_stdout("help");
	}
	if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
		printf("moepack (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
		return cli_finish_stdout("version");
	}
	if (strcmp(arg, "help") == 0)
		return help(argc, argv);
	if (strcmp(arg, "--list-options") == 0)
		return list_options(argc, argv);
	if (arg[0] == '-') {
		char shown[CLI_TEXT_MAX];

		fprintf(stderr, "moepack: unrecognized option '%s'\n"
			"Try 'moepack --help' for more information.\n", cli_text(shown, arg));
		return CLI_EXIT_USAGE;
	}
	cmd = find_command(arg);
	return cmd ? cmd->run(argc - 1, argv + 1) : unknown_command(arg);
}
