/*
 * cli.h - what the `moepack` subcommands share: exit statuses, option and
 * number parsing with uniform error messages, opening a pack with the
 * common options, error reporting and JSON output.
 *
 * Conventions every subcommand follows: `--help` prints usage on stdout and
 * exits 0; a usage error prints "moepack CMD: what is wrong" and a "Try"
 * line on stderr and exits 2; a library failure prints "moepack: PACK:
 * message" and exits with the status of the error's class.
 */
#ifndef MOEPACK_CLI_H
#define MOEPACK_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "base/errors.h"
#include "pack/pack.h"

/* Exit statuses: the error classes of errors.h. */
enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_INVALID = 1,
	CLI_EXIT_USAGE = 2,
	CLI_EXIT_IO = 3,
};

/* The subcommands, each `int cmd_NAME(int argc, char **argv)` with argv[0]
 * the subcommand's name; the return value is the exit status. */
int cmd_verify(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_mkdemo(int argc, char **argv);
int cmd_check_gguf(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_seal(int argc, char **argv);
int cmd_sign(int argc, char **argv);

/* What every command that prints an unanchored seal says about it. */
extern const char seal_unanchored_note[];

/* Read PACK.seal beside an open pack, compute its layout and bind it
 * (seal.h); on failure nothing is left allocated. */
struct mp_seal;
struct mp_seal_layout;
enum mp_err cli_load_seal(const struct mp_pack *pack, struct mp_seal **seal,
			  struct mp_seal_layout *l, struct mp_error *err);

/*
 * Room for any file name or argument after escaping: mp_text_escape()
 * writes at most 4 bytes per input byte; longer text is cut with "...".
 */
#define CLI_TEXT_MAX (4 * 4096 + 16)

/*
 * s as it may be shown on a terminal (mp_text_escape: control characters
 * and bytes that are not UTF-8 as \xNN), in buf[CLI_TEXT_MAX]; returns buf.
 * Every file name, argument or manifest string printed goes through it.
 */
const char *cli_text(char buf[CLI_TEXT_MAX], const char *s);

/* The exit status for a library error code (by its class). */
int cli_exit_status(enum mp_err code);

/* "moepack CMD: <message>" and the "Try 'moepack CMD --help'" line on
 * stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "moepack: PACK: <err->msg>" on stderr; returns the exit status. */
int cli_report(const char *pack, const struct mp_error *err);

/* Each of a pack's warnings as "moepack: warning: ..." on stderr. */
void cli_print_warnings(const struct mp_pack *pack);

/*
 * getopt_long() with moepack's messages instead of getopt's: returns the
 * option as getopt_long does, -1 at the end, or '?' after printing a usage
 * error for an unknown option or a missing argument (the caller returns
 * CLI_EXIT_USAGE).  shortopts must not start with ':' (added here).
 * `moepack CMD --list-options` (hidden; the bash completion's source)
 * prints these tables instead, one option a line, and exits.
 */
int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts);

/*
 * getopt would take a negative number such as "-1" for options ("invalid
 * option -- '1'").  Before option parsing, find the first argument that is
 * '-' and digits only and not an option's argument; return its position
 * among the operands (0 for the first) and set *text, or return -1.
 */
int cli_negative_operand(int argc, char **argv, const char *shortopts,
			 const struct option *longopts, const char **text);

/*
 * The operands PACK LAYER EXPERT ROLE (ops[0..3]) given in another order,
 * as in "moepack cat PACK up 17 3": when ops[3] is not a role (nor
 * "object" where allowed) but ops[1] or ops[2] is one, print a usage error
 * that says so and shows the order meant, and return CLI_EXIT_USAGE;
 * otherwise return -1.
 */
int cli_role_order(const char *cmd, char *const ops[4], bool object_ok);

/* Number parsing flags. */
#define CLI_NUM_SUFFIX 1u /* accept K, M, G, T (binary) suffixes */

/*
 * Parse a plain decimal unsigned integer (optionally with a suffix) in
 * [min, max].  Rejects empty text, signs, spaces, trailing junk and
 * overflow with an MP_E_USAGE message naming `what` (an option or an
 * argument name).
 */
enum mp_err cli_parse_u64(const char *text, const char *what, unsigned flags, uint64_t min,
			  uint64_t max, uint64_t *out, struct mp_error *err);

/* The manifest path actually used: `manifest`, or "<pack>.manifest.json".
 * Returns a string to free, or NULL when out of memory. */
char *cli_manifest_path(const char *pack, const char *manifest);

/*
 * Open and validate a pack; on failure print the error (cli_report) and
 * return its exit status, with *out NULL.  Warnings are printed unless
 * quiet.
 */
int cli_open_pack(const char *pack_path, const struct mp_open_opts *opts, bool quiet,
		  struct mp_pack **out);

/* Resolve a LAYER argument (a real layer id) to a layer index and an
 * EXPERT argument to an expert number, with MP_E_NOT_FOUND messages that
 * name the id and the valid range. */
enum mp_err cli_layer_arg(const struct mp_pack *pack, const char *text, uint64_t *layer_id,
			  uint64_t *layer_index, struct mp_error *err);
enum mp_err cli_expert_arg(const struct mp_pack *pack, const char *text, uint64_t *expert,
			   struct mp_error *err);

/* A JSON string for any C string: valid UTF-8 as it is (jansson escapes
 * control characters), anything else as cli_text() shows it; NULL only when
 * out of memory or s is NULL. */
json_t *cli_json_text(const char *s);

/* Dump a jansson value to stdout followed by a newline and release it;
 * returns 0, or -1 if it could not be encoded. */
int cli_print_json(json_t *value, size_t flags);

/*
 * Flush stdout and report a write error ("moepack CMD: write error: ...")
 * if there was one; returns CLI_EXIT_OK or CLI_EXIT_IO.  A reader that went
 * away (EPIPE) is not reported, but still gives CLI_EXIT_IO.
 */
int cli_finish_stdout(const char *cmd);

/*
 * The same, for a caller that saw a write to stdout fail with errno
 * `error` (0: none seen): stdio keeps only that it failed, and a later
 * fflush() with nothing left to write cannot say why.
 */
int cli_finish_stdout_errno(const char *cmd, int error);

/*
 * Run handler on SIGINT, SIGTERM and SIGHUP (once: SA_RESETHAND restores the
 * default, so a second signal kills at once), with the three blocked while it
 * runs.  A signal ignored by whoever started us (nohup, a background job)
 * stays ignored.
 */
void cli_catch_signals(void (*handler)(int));

#endif
