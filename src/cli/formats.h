/*
 * formats.h - the CLI's half of each pack format, as a table: what
 * `build`, `mkdemo` and `check-gguf` do for it.  cmd_build.c, cmd_mkdemo.c
 * and cmd_check_gguf.c parse the options, whatever the format, into the
 * structs below, pick the format (by --format, or by the GGUF) and call
 * its table; they never name a format's folder.  A format's table is
 * defined in its own folder (cli/kimi/, cli/expertpack/), which alone
 * makes its builder's options of these.
 */
#ifndef MOEPACK_CLI_FORMATS_H
#define MOEPACK_CLI_FORMATS_H

#include <stdbool.h>
#include <stdint.h>

/* `moepack build`'s options. */
struct cli_build_args {
	const char *gguf;          /* --gguf: a shard, or SGLang's one GGUF */
	const char *format;        /* NULL: by the GGUF (cli_format_of_gguf) */
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

/* `moepack check-gguf`'s options. */
struct cli_check_gguf_args {
	bool set, json;
	bool any_geometry;  /* not Kimi-K3's geometry */
	const char *format; /* NULL: by each file */
	const char *config; /* expertpack-v1: the model's config.json */
};

/*
 * One format's half.  Each run function reports on stdout or stderr and
 * returns the exit status (the caller finishes stdout); a usage error is
 * reported and CLI_EXIT_USAGE.  An option the format does not take is
 * refused there, in one line naming it.
 */
struct cli_format {
	const char *name;   /* as --format takes it: "kimi", "expertpack-v1" */
	/* Whether the GGUF file at path is this format's source, which picks
	 * the format when --format is not given; NULL for the format taken
	 * when no other's says so (the first in the list). */
	bool (*takes_gguf)(const char *path);
	int (*build)(const char *cmd, const struct cli_build_args *a);
	int (*mkdemo)(const char *cmd, const struct cli_mkdemo_args *a);
	/* One operand of check-gguf; *state is the format's own across the
	 * operands (NULL before the first), which check_gguf_end frees; -1
	 * when out of memory. */
	int (*check_gguf)(void **state, const char *path, const struct cli_check_gguf_args *a);
	void (*check_gguf_end)(void *state);
};

/* The formats, the default first (each defined in its own folder). */
extern const struct cli_format cli_format_kimi, cli_format_expertpack;

/* The format named name, else NULL after a usage error naming every
 * format's name ("--format: NAME is not kimi or expertpack-v1"; none when
 * cmd is NULL). */
const struct cli_format *cli_format_named(const char *cmd, const char *name);

/* The format whose source the GGUF file at path is: the first whose
 * takes_gguf says so, else the default. */
const struct cli_format *cli_format_of_gguf(const char *path);

/*
 * check-gguf over every operand, each by its format (--format's, which
 * the caller has checked, else the file's), each format's state kept
 * across them: the worst exit status, or -1 when out of memory (the
 * operands after it unchecked).
 */
int cli_format_check_ggufs(int n, char *const *paths, const struct cli_check_gguf_args *a);

#endif
