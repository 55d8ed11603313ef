/* moepack.c - the `moepack` command: dispatch to a subcommand. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	/* The operands after the options, for the bash completion: words
	 * of a|b choices, [optional] ones and a trailing "..." (repeats). */
	const char *operands;
};

static const struct command commands[] = {
	{"verify", cmd_verify, "check a pack and its manifest as the loader does", "PACK"},
	{"info", cmd_info, "describe a pack's model, roles and layout", "PACK"},
	{"ls", cmd_ls, "list index entries (name, layer, expert, role, offset, size)",
	 "PACK [LAYER [EXPERT]]"},
	{"cat", cmd_cat, "write one expert payload to standard output",
	 "PACK LAYER EXPERT up|gate|down|object"},
	{"dump", cmd_dump, "dequantize one expert's role to float32 (or text, stats)",
	 "PACK LAYER EXPERT up|gate|down"},
	{"mkdemo", cmd_mkdemo, "write a valid demo pack, manifest and config", ""},
	{"check-gguf", cmd_check_gguf, "check a Kimi-K3 GGUF checkpoint (or its shard set)",
	 "FILE.gguf..."},
	{"build", cmd_build, "build a pack and manifest from a GGUF checkpoint", ""},
	{"top", cmd_top, "a live view of what loaders read from a mount", "MOUNT"},
	{"seal", cmd_seal, "write PACK.seal: a SHA-256 for every chunk of the pack", "PACK"},
	{"sign", cmd_sign, "sign a sealed pack with an Ed25519 key (PACK.sig)", "PACK"},
};

#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
	fputs("Usage: moepack [--version] [--help] COMMAND [ARGS]\n"
	      "Verify, inspect and build Kimi GGML MoE expert packs (GGMLMOEPACKv1).\n"
	      "\n"
	      "Commands:\n", out);
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "Run 'moepack COMMAND --help' or 'moepack help COMMAND' for a command's\n"
	      "options.\n"
	      "Exit status: 0 success, 1 invalid pack, 2 usage error, 3 I/O error.\n"
	      "See moepack(1) and moepack-pack(5).\n", out);
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/*
 * The hidden `moepack --list-options [CMD]` (the bash completion's source):
 * without CMD the commands and their operands, one a line; with CMD that
 * command's option tables (cli_getopt prints them).
 */
static int list_options(int argc, char **argv)
{
	char list[] = "--list-options";

	if (argc == 2) {
		for (size_t i = 0; i < COMMAND_COUNT; i++)
			printf("%s %s\n", commands[i].name, commands[i].operands);
		return cli_finish_stdout("--list-options");
	}
	for (size_t i = 0; argc == 3 && i < COMMAND_COUNT; i++) {
		if (strcmp(commands[i].name, argv[2]) == 0) {
			char *cmd_argv[] = {argv[2], list, NULL};

			return commands[i].run(2, cmd_argv);
		}
	}
	fprintf(stderr, "moepack: --list-options takes at most one known command\n");
	return CLI_EXIT_USAGE;
}

static int unknown_command(const char *name)
{
	char shown[CLI_TEXT_MAX];

	fprintf(stderr, "moepack: unknown command '%s'\n"
		"Try 'moepack --help' for a list of commands.\n", cli_text(shown, name));
	return CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	const struct command *cmd;
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
	if (strcmp(arg, "help") == 0) {
		char help[] = "--help";
		char *help_argv[] = {argc > 2 ? argv[2] : NULL, help, NULL};

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
		return cmd ? cmd->run(2, help_argv) : unknown_command(argv[2]);
	}
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
