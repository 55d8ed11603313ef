/*
 * formats.h - the subcommands that have one half per pack format (`build`,
 * `mkdemo`): the options as the user gave them, whatever the format, and
 * the format names the CLI takes.  cmd_build.c and cmd_mkdemo.c parse into
 * these and hand them to the format's half, cli/kimi/ or cli/expertpack/,
 * which makes its builder's options of them.
 */
#ifndef MOEPACK_CLI_FORMATS_H
#define MOEPACK_CLI_FORMATS_H

#include <stdbool.h>
#include <stdint.h>

/* `moepack build`'s options. */
struct cli_build_args {
	const char *gguf;          /* --gguf: a shard, or SGLang's one GGUF */
	const char *format;        /* NULL: by the GGUF's routed type */
	const char *model_ref;     /* expertpack-v1: model.ref */
	const char *config_path, *out, *manifest, *tokenizer_dir;
	bool json, quiet;
	bool samples_given;        /* --samples was given (its value: samples) */
	uint64_t samples;
	bool full_sha256, compare_all, check_only, resume, force;
	bool any_geometry;         /* not Kimi-K3's geometry */
	uint64_t margin;
	int argc;                  /* the subcommand's argv, its name first */
	char **argv;
};

/* `moepack mkdemo`'s options; a 0 count is the format's default. */
struct cli_mkdemo_args {
	const char *out, *manifest;
	const char *gguf;            /* --gguf DIR: a checkpoint instead of a pack */
	const char *format;          /* NULL: kimi */
	uint64_t layers, top_k;      /* expertpack-v1 only */
	uint64_t experts, hidden, inter, alignment, gap, seed;
	bool sparse, full_sha256, force, quiet;
	int argc;
	char **argv;
};

/* "kimi" or "expertpack-v1" into *ep; -1 for any other name. */
int cli_format_parse(const char *name, bool *ep);

#endif
