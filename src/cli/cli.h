/*
 * cli.h - what the `moepack` subcommands share: exit statuses, the command
 * tables their command lines are parsed, documented and completed from,
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

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "base/cancel.h"
#include "base/errors.h"
#include "pack/pack.h"

/* Exit statuses: the error classes of errors.h. */
enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_INVALID = 1,
	CLI_EXIT_USAGE = 2,
	CLI_EXIT_IO = 3,
};

/*
 * One table per subcommand (cmd_*.c) says everything about its command
 * line; the generic code in cli.c builds from it the getopt_long tables,
 * the --help text, the usage errors and the hidden --list-options output
 * the bash completion reads.
 */

/* What parsing a command line came to. */
enum cli_parse {
	CLI_RUN,         /* options stored, operands checked: run the command */
	CLI_DONE,        /* --help (or --list-options) printed: finish stdout */
	CLI_USAGE_ERROR, /* a usage error was printed: exit CLI_EXIT_USAGE */
};

/* Where an option's value goes in the command's argument struct. */
enum cli_store {
	CLI_STORE_CALL,  /* the command's on_option() handles it */
	CLI_STORE_TRUE,  /* the bool at offset becomes true */
	CLI_STORE_FALSE, /* the bool at offset becomes false */
	CLI_STORE_TEXT,  /* the const char * at offset points to the argument */
	CLI_STORE_U64,   /* the uint64_t at offset: cli_parse_u64(), see below */
};

/* Keys at or above this have no short letter. */
#define CLI_LONG_ONLY 0x100

struct cli_option {
	const char *name;   /* the long name, without "--" */
	int key;            /* the short letter, or CLI_LONG_ONLY + n */
	const char *arg;    /* the argument's name in --help ("FILE"); NULL: none */
	const char *help;   /* the --help text; each '\n' starts a continuation */
	enum cli_store store;
	size_t offset;      /* offsetof() the field in the argument struct */
	unsigned num_flags; /* CLI_STORE_U64: CLI_NUM_* */
	uint64_t min, max;  /* CLI_STORE_U64: the accepted range */
};

/* Table rows: an option that sets a flag, clears one, takes a text or a
 * number, or that the command's on_option() handles; T is the argument
 * struct and f its field. */
#define CLI_OPT_TRUE(name, key, help, T, f) \
	{name, key, NULL, help, CLI_STORE_TRUE, offsetof(T, f), 0, 0, 0}
#define CLI_OPT_FALSE(name, key, help, T, f) \
	{name, key, NULL, help, CLI_STORE_FALSE, offsetof(T, f), 0, 0, 0}
#define CLI_OPT_TEXT(name, key, arg, help, T, f) \
	{name, key, arg, help, CLI_STORE_TEXT, offsetof(T, f), 0, 0, 0}
#define CLI_OPT_U64(name, key, arg, help, T, f, flags, min, max) \
	{name, key, arg, help, CLI_STORE_U64, offsetof(T, f), flags, min, max}
#define CLI_OPT_CALL(name, key, arg, help) {name, key, arg, help, CLI_STORE_CALL, 0, 0, 0, 0}

/* The rows most commands share. */
#define CLI_OPT_MANIFEST(T, f) \
	CLI_OPT_TEXT("manifest", 'm', "FILE", "the manifest (default: PACK.manifest.json)", T, f)
#define CLI_OPT_JSON(help, T, f) CLI_OPT_TRUE("json", 'j', help, T, f)
#define CLI_OPT_QUIET(help, T, f) CLI_OPT_TRUE("quiet", 'q', help, T, f)
#define CLI_HELP_JSON "print one JSON object on stdout"

/* The arguments left after the options. */
struct cli_operands {
	char **v;
	int n;
};

/* A command's code for the options its table cannot store (CLI_STORE_CALL):
 * key is the option's, cmd the command's name for messages. */
typedef enum cli_parse cli_option_fn(void *args, int key, const char *arg, const char *cmd);
/* A command's body: argv[0] is its name; returns its exit status. */
typedef int cli_run_fn(int argc, char **argv);

/*
 * A short letter a command no longer has, because it meant another long
 * option than in the other commands: "-f" once was verify's --full and is
 * --force everywhere else.  Given, it is a usage error that says which
 * long option to write instead.
 */
struct cli_retired {
	char letter;
	const char *name; /* the long option it was short for */
	const char *now;  /* what the letter is short for now ("--force") */
};

struct cli_command {
	const char *name;
	const char *summary;  /* its line in `moepack --help` */
	/* The operands in the usage line ("PACK [LAYER [EXPERT]]"): their
	 * words name what is missing, brackets make them optional, a
	 * trailing "..." repeats the last. */
	const char *operands;
	const char *completion; /* the operands for --list-options, when not
				 * `operands` ("up|gate|down" for ROLE) */
	const char *usage;    /* the usage line(s) after "Usage: ", when not
			       * "moepack NAME [OPTIONS] OPERANDS" */
	const char *about;    /* --help: what the command does */
	const char *epilogue; /* --help: after the option list */
	const char *extra_hint; /* after "unexpected argument 'ARG'" (or NULL) */
	bool escape_extra;    /* show the extra operand as cli_text() does
			       * (backslashes doubled), as build always has */
	/* Operands a negative number is reported for by name, before getopt
	 * takes it for options ("PACK LAYER EXPERT"; "..." repeats the last);
	 * NULL: none. */
	const char *number_operands;
	const struct cli_option *options; /* ends with {NULL}; -h, --help is added */
	const struct cli_retired *retired; /* ends with {0}; may be NULL */
	cli_option_fn *on_option;
	cli_run_fn *run;
};

/*
 * Parse argv (argv[0] the command's name) as table c says: each option
 * into its field of args (or through c->on_option); --help and the hidden
 * --list-options print (CLI_DONE); then the operands are counted against
 * c->operands ("missing PACK", "unexpected argument 'x'") and, on CLI_RUN,
 * left in *ops.  Every usage error is printed before CLI_USAGE_ERROR.
 */
enum cli_parse cli_parse(const struct cli_command *c, int argc, char **argv, void *args,
			 struct cli_operands *ops);

/* The two halves of cli_parse(), for a command that checks its options
 * against each other before its operands are counted. */
enum cli_parse cli_parse_options(const struct cli_command *c, int argc, char **argv,
				 void *args);
enum cli_parse cli_parse_operands(const struct cli_command *c, int argc, char **argv,
				  struct cli_operands *ops);

/* The exit status for a parse that did not come to CLI_RUN. */
int cli_parse_status(enum cli_parse p, const char *cmd);

/* `moepack --list-options CMD`: the option table, one "LONG SHORT ARG"
 * line each ("--manifest -m arg", "--sparse - -"). */
int cli_list_options(const struct cli_command *c);

/* The --help text of a command, on stdout. */
void cli_print_help(const struct cli_command *c);

/* rc, or CLI_EXIT_IO when rc is 0 and stdout could not be flushed. */
int cli_finish(const char *cmd, int rc);

/*
 * Write all len bytes of buf to standard output, retrying short writes and
 * EINTR, and waiting (poll) while a non-blocking stdout is full: whoever
 * started us may have left it so.  0, or the errno of the failed write
 * (EIO for a write of nothing).  The one write loop of the commands.
 */
int cli_write_stdout(const void *buf, size_t len);

/* Wait until standard output takes more (after EAGAIN). */
void cli_wait_stdout_writable(void);

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
 * The operands PACK LAYER EXPERT ROLE (ops[0..3]) given in another order,
 * as in "moepack cat PACK up 17 3": when ops[3] is not a role (nor
 * "object" where allowed) but ops[1] or ops[2] is one, print a usage error
 * that says so and shows the order meant, and return CLI_EXIT_USAGE;
 * otherwise return -1.
 */
int cli_role_order(const char *cmd, char *const ops[4], bool object_ok);

/* Number parsing flags. */
#define CLI_NUM_SUFFIX 1u /* accept K, M, G, T (binary) suffixes */
#define CLI_NUM_POW2 2u   /* CLI_STORE_U64: a power of two only */

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

/* Both, for the LAYER EXPERT operands of one entry. */
enum mp_err cli_entry_args(const struct mp_pack *pack, const char *layer, const char *expert,
			   uint64_t *layer_id, uint64_t *expert_id, struct mp_error *err);

/* Binary data is not for a terminal: unless force, a usage error when
 * stdout is one. */
enum cli_parse cli_refuse_terminal(const char *cmd, bool force);

/* The higher of two exit statuses (they rank by severity). */
int cli_worst(int a, int b);

/* A JSON string for any C string: valid UTF-8 as it is (jansson escapes
 * control characters), anything else as cli_text() shows it; NULL only when
 * out of memory or s is NULL. */
json_t *cli_json_text(const char *s);

/* A command's JSON result as it starts: {"ok", "code", "message": ok_msg
 * when code is MP_OK else err_msg, "pack" (null when pack is NULL)}; the
 * caller adds the rest. */
json_t *cli_json_result(enum mp_err code, const char *ok_msg, const char *err_msg,
			const char *pack);

/* The pack's warnings as a JSON array (empty for no pack). */
json_t *cli_warnings_json(const struct mp_pack *pack);

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

/*
 * cli_catch_signals() with a handler that only asks long work to stop: the
 * request returned, which the command passes down in its options (a build's
 * `cancel`), and whose signal it re-raises once the work has stopped and
 * said why.  A second signal kills at once.
 */
const struct mp_cancel *cli_cancel_on_signal(void);

/*
 * After work that stopped with MP_E_INTERRUPTED on cli_cancel_on_signal()'s
 * request (its line already printed): die of the signal that asked, so
 * that the caller sees how the command ended (a shell's 128 + N).
 * Returns when rc is another code or no signal asked.
 */
void cli_die_of_cancel(enum mp_err rc, const struct mp_cancel *c);

/*
 * cli_catch_signals() with a handler that removes the temporaries being
 * written (mp_output_remove_temporaries()), then dies of the same signal,
 * so that an interrupted command leaves none behind (a Kimi-K3-sized
 * sparse demo pack is 918 GiB apparent) and its caller sees how it ended.
 */
void cli_remove_temporaries_on_signal(void);

#endif
