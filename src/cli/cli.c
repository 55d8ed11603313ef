/* cli.c - helpers shared by the moepack subcommands (see cli.h). */
#include "config.h"

#include "cli/cli.h"
#include "pack/progress.h"

#include <ctype.h>
#include <getopt.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/outfile.h"
#include "base/text.h"

const char *cli_text(char buf[CLI_TEXT_MAX], const char *s)
{
	mp_text_escape(buf, CLI_TEXT_MAX, s, strlen(s), 0);
	return buf;
}

int cli_exit_status(enum mp_err code)
{
	return mp_err_exit_status(code);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[CLI_TEXT_MAX];
	va_list ap;

	/* Usage errors echo arguments, which may hold anything. */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	mp_text_sanitize(msg, sizeof msg, MP_TEXT_ESCAPED);
	fprintf(stderr, "moepack %s: %s\nTry 'moepack %s --help' for more information.\n",
		cmd, msg, cmd);
	return CLI_EXIT_USAGE;
}

int cli_report(const char *pack, const struct mp_error *err)
{
	char shown[CLI_TEXT_MAX];

	fprintf(stderr, "moepack: %s: %s\n", cli_text(shown, pack), err->msg);
	return cli_exit_status(err->code);
}

void cli_print_warnings(const struct mp_pack *pack)
{
	print_pack_warnings(stderr, "moepack", pack);
}

/* ---- the command tables -------------------------------------------------- */

/* Room for every command's options and the --help added to them. */
#define MAX_OPTIONS 24

static const struct cli_option help_option = {"help", 'h', NULL, "show this help and exit",
					      CLI_STORE_CALL, 0, 0, 0, 0};

static bool has_short(const struct cli_option *o)
{
	return o->key > 0 && o->key < CLI_LONG_ONLY;
}

/* The table's options and then --help, in order: o[0..n). */
static size_t all_options(const struct cli_command *c, const struct cli_option *o[MAX_OPTIONS])
{
	size_t n = 0;

	for (const struct cli_option *p = c->options; p && p->name; p++) {
		if (n == MAX_OPTIONS - 1) {
			/* a table too long for MAX_OPTIONS: a bug, not input */
			fprintf(stderr, "moepack %s: internal error: too many options\n", c->name);
			abort();
		}
		o[n++] = p;
	}
	o[n++] = &help_option;
	return n;
}

/* getopt_long's tables for the options: longopts (ends with zeros) and
 * the short-option string with ':' after each that takes an argument. */
struct getopt_tables {
	struct option longopts[MAX_OPTIONS + 1];
	char shortopts[2 * MAX_OPTIONS + 2];
};

static void make_getopt_tables(const struct cli_command *c, struct getopt_tables *t)
{
	const struct cli_option *o[MAX_OPTIONS];
	size_t n = all_options(c, o), len = 0;

	memset(t, 0, sizeof *t);
	for (size_t i = 0; i < n; i++) {
		t->longopts[i].name = o[i]->name;
		t->longopts[i].has_arg = o[i]->arg ? required_argument : no_argument;
		t->longopts[i].val = o[i]->key;
		if (!has_short(o[i]))
			continue;
		t->shortopts[len++] = (char)o[i]->key;
		if (o[i]->arg)
			t->shortopts[len++] = ':';
	}
}

int cli_list_options(const struct cli_command *c)
{
	const struct cli_option *o[MAX_OPTIONS];
	size_t n = all_options(c, o);

	for (size_t i = 0; i < n; i++) {
		const char *arg = o[i]->arg ? "arg" : "-";

		if (has_short(o[i]))
			printf("--%s -%c %s\n", o[i]->name, o[i]->key, arg);
		else
			printf("--%s - %s\n", o[i]->name, arg);
	}
	return cli_finish_stdout(c->name);
}

/* Help text starts at this column; what is longer gets one space. */
#define HELP_COLUMN 27

static void print_option_help(const struct cli_option *o)
{
	char head[96];
	const char *line = o->help, *nl;
	int len;

	if (has_short(o))
		len = snprintf(head, sizeof head, "  -%c, --%s%s%s", o->key, o->name,
			       o->arg ? "=" : "", o->arg ? o->arg : "");
	else
		len = snprintf(head, sizeof head, "      --%s%s%s", o->name, o->arg ? "=" : "",
			       o->arg ? o->arg : "");
	printf("%s%*s", head, len < HELP_COLUMN ? HELP_COLUMN - len : 1, "");
	while ((nl = strchr(line, '\n'))) {
		printf("%.*s\n%*s", (int)(nl - line), line, HELP_COLUMN, "");
		line = nl + 1;
	}
	printf("%s\n", line);
}

void cli_print_help(const struct cli_command *c)
{
	const struct cli_option *o[MAX_OPTIONS];
	size_t n = all_options(c, o);

	if (c->usage)
		printf("Usage: %s\n", c->usage);
	else
		printf("Usage: moepack %s [OPTIONS] %s\n", c->name, c->operands);
	printf("%s\n", c->about);
	for (size_t i = 0; i < n; i++)
		print_option_help(o[i]);
	fputs(c->epilogue, stdout);
}

/* A retired short letter of c's (cli_retired): a usage error that names
 * the long option meant; false when optopt is no such letter. */
static bool retired_letter(const struct cli_command *c, int letter)
{
	for (const struct cli_retired *r = c->retired; r && r->letter; r++) {
		if (r->letter != letter)
			continue;
		cli_usage_error(c->name, "-%c is no longer short for --%s (in moepack, -%c is %s "
				"only): write --%s", letter, r->name, letter, r->now, r->name);
		return true;
	}
	return false;
}

/*
 * getopt_long() with moepack's messages instead of getopt's: returns the
 * option as getopt_long does, -1 at the end, or '?' after printing a usage
 * error for an unknown option or a missing argument.
 */
static int next_option(const struct cli_command *c, int argc, char **argv,
		       const struct getopt_tables *t)
{
	const char *cmd = c->name;
	char spec[sizeof t->shortopts + 1];
	int key;

	/* A leading ':' makes getopt tell a missing argument (':') from an
	 * unknown option ('?'), and keeps it quiet: we word both ourselves. */
	snprintf(spec, sizeof spec, ":%s", t->shortopts);
	opterr = 0;
	key = getopt_long(argc, argv, spec, t->longopts, NULL);
	if (key == ':') {
		cli_usage_error(cmd, "option '%s' requires an argument", argv[optind - 1]);
		return '?';
	}
	if (key == '?') {
		const char *arg = argv[optind - 1];
		bool letter = optopt > 0 && optopt < 0x100 && !strchr(t->shortopts, optopt);

		if (letter) {
			if (!retired_letter(c, optopt))
				cli_usage_error(cmd, "invalid option -- '%c'", optopt);
		} else if (optopt && strncmp(arg, "--", 2) == 0 && strchr(arg, '=')) {
			cli_usage_error(cmd, "option '%.*s' doesn't allow an argument",
					(int)(strchr(arg, '=') - arg), arg);
		} else {
			cli_usage_error(cmd, "unrecognized option '%s'", arg);
		}
		return '?';
	}
	return key;
}

static const struct cli_option *find_option(const struct cli_command *c, int key)
{
	for (const struct cli_option *o = c->options; o && o->name; o++)
		if (o->key == key)
			return o;
	return NULL;
}

static enum cli_parse store_number(const struct cli_command *c, const struct cli_option *o,
				   const char *arg, uint64_t *field)
{
	struct mp_error err;
	char what[64];
	uint64_t v;

	snprintf(what, sizeof what, "--%s", o->name);
	if (cli_parse_u64(arg, what, o->num_flags, o->min, o->max, &v, &err))
		cli_usage_error(c->name, "%s", err.msg);
	else if ((o->num_flags & CLI_NUM_POW2) && (v & (v - 1)))
		cli_usage_error(c->name, "%s must be a power of two", what);
	else {
		*field = v;
		return CLI_RUN;
	}
	return CLI_USAGE_ERROR;
}

/* The option's value into its field of args, or to the command's
 * on_option(). */
static enum cli_parse store_option(const struct cli_command *c, const struct cli_option *o,
				   void *args, const char *arg)
{
	void *field = (char *)args + o->offset;

	switch (o->store) {
	case CLI_STORE_TRUE:
	case CLI_STORE_FALSE:
		*(bool *)field = o->store == CLI_STORE_TRUE;
		return CLI_RUN;
	case CLI_STORE_TEXT:
		*(const char **)field = arg;
		return CLI_RUN;
	case CLI_STORE_U64:
		return store_number(c, o, arg, field);
	case CLI_STORE_CALL:
		break;
	}
	return c->on_option(args, o->key, arg, c->name);
}

static bool is_role_operand(const char *s, bool object_ok)
{
	return mp_role_from_name(s) != MP_ROLE_COUNT || (object_ok && strcmp(s, "object") == 0);
}

int cli_role_order(const char *cmd, char *const ops[4], bool object_ok)
{
	const char *others[2];
	int role = -1, n = 0;

	if (is_role_operand(ops[3], object_ok))
		return -1;
	for (int i = 1; i <= 3; i++) {
		if (role < 0 && i < 3 && is_role_operand(ops[i], object_ok))
			role = i;
		else if (n < 2)
			others[n++] = ops[i];
	}
	if (role < 0)
		return -1;
	return cli_usage_error(cmd, "operands in the wrong order: '%s' is the ROLE, which "
			       "comes last (PACK LAYER EXPERT ROLE): did you mean '%s %s %s'?",
			       ops[role], others[0], others[1], ops[role]);
}

static bool is_negative_number(const char *a)
{
	return a[0] == '-' && a[1] >= '0' && a[1] <= '9' &&
	       strspn(a + 1, "0123456789") == strlen(a + 1);
}

/* The operand a short option's cluster ("-jm", "-mFILE") takes as its
 * argument: 1 when it is the next word, else 0. */
static int short_option_argument(const char *a, const char *shortopts)
{
	for (const char *c = a + 1; *c; c++) {
		const char *spec = strchr(shortopts, *c);

		if (spec && spec[1] == ':')
			return c[1] ? 0 : 1; /* "-mFILE" or "-m FILE" */
	}
	return 0;
}

static int long_option_argument(const char *a, const struct option *longopts)
{
	for (const struct option *o = longopts; o->name; o++)
		if (strcmp(a + 2, o->name) == 0 && o->has_arg == required_argument)
			return 1; /* "--manifest FILE": FILE is not an operand */
	return 0;
}

/*
 * getopt would take a negative number such as "-1" for options ("invalid
 * option -- '1'").  Before option parsing, find the first argument that is
 * '-' and digits only and not an option's argument; return its position
 * among the operands (0 for the first) and set *text, or return -1.
 */
static int negative_operand(int argc, char **argv, const struct getopt_tables *t,
			    const char **text)
{
	int operand = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0)
			break; /* what follows is operands: cli_parse_u64 words it */
		if (is_negative_number(a)) {
			*text = a;
			return operand;
		}
		if (strncmp(a, "--", 2) == 0)
			i += long_option_argument(a, t->longopts);
		else if (a[0] == '-' && a[1])
			i += short_option_argument(a, t->shortopts);
		else
			operand++;
	}
	return -1;
}

/* Word i of a space-separated list, without brackets, into buf; a list
 * ending in "..." repeats its last word.  False when there is none. */
static bool operand_word(const char *list, int i, char *buf, size_t len)
{
	const char *w = list, *end;
	size_t n;

	for (;;) {
		w += strspn(w, " [");
		end = w + strcspn(w, " ");
		if (!*w)
			return false;
		if (i-- == 0 || (!*end && end - w > 3 && strcmp(end - 3, "...") == 0))
			break;
		w = end;
	}
	n = strcspn(w, " ]");
	if (n > 3 && strncmp(w + n - 3, "...", 3) == 0)
		n -= 3;
	snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), w);
	return true;
}

static enum cli_parse check_negative_operand(const struct cli_command *c, int argc,
					     char **argv, const struct getopt_tables *t)
{
	const char *text;
	char name[32];
	int at;

	if (!c->number_operands)
		return CLI_RUN;
	at = negative_operand(argc, argv, t, &text);
	if (at < 0 || !operand_word(c->number_operands, at, name, sizeof name))
		return CLI_RUN;
	cli_usage_error(c->name, "%s: '%s' is not a non-negative integer", name, text);
	return CLI_USAGE_ERROR;
}

enum cli_parse cli_parse_options(const struct cli_command *c, int argc, char **argv,
				 void *args)
{
	struct getopt_tables t;
	enum cli_parse p;
	int key;

	make_getopt_tables(c, &t);
	if (argc == 2 && strcmp(argv[1], "--list-options") == 0) {
		cli_list_options(c);
		return CLI_DONE;
	}
	if ((p = check_negative_operand(c, argc, argv, &t)) != CLI_RUN)
		return p;
	while ((key = next_option(c, argc, argv, &t)) != -1) {
		const struct cli_option *o = find_option(c, key);

		if (key == 'h') {
			cli_print_help(c);
			return CLI_DONE;
		}
		if (!o)
			return CLI_USAGE_ERROR;
		if ((p = store_option(c, o, args, optarg)) != CLI_RUN)
			return p;
	}
	return CLI_RUN;
}

/* How many operands the usage's words allow: [min, max], max -1: any. */
static void operand_range(const char *list, int *min, int *max)
{
	char word[32];

	*min = *max = 0;
	for (const char *w = list; *w; w += strcspn(w, " ")) {
		w += strspn(w, " ");
		if (!*w)
			break;
		if (*w != '[')
			(*min)++;
		(*max)++;
	}
	if (operand_word(list, *max, word, sizeof word))
		*max = -1; /* "..." */
}

enum cli_parse cli_parse_operands(const struct cli_command *c, int argc, char **argv,
				  struct cli_operands *ops)
{
	char word[32], shown[CLI_TEXT_MAX];
	int min, max, n = argc - optind;
	const char *extra;

	operand_range(c->operands, &min, &max);
	if (n < min) {
		operand_word(c->operands, n, word, sizeof word);
		cli_usage_error(c->name, "missing %s", word);
		return CLI_USAGE_ERROR;
	}
	if (max >= 0 && n > max) {
		extra = argv[optind + max];
		if (c->escape_extra)
			extra = cli_text(shown, extra);
		cli_usage_error(c->name, "unexpected argument '%s'%s", extra,
				c->extra_hint ? c->extra_hint : "");
		return CLI_USAGE_ERROR;
	}
	ops->v = argv + optind;
	ops->n = n;
	return CLI_RUN;
}

enum cli_parse cli_parse(const struct cli_command *c, int argc, char **argv, void *args,
			 struct cli_operands *ops)
{
	enum cli_parse p = cli_parse_options(c, argc, argv, args);

	return p == CLI_RUN ? cli_parse_operands(c, argc, argv, ops) : p;
}

int cli_parse_status(enum cli_parse p, const char *cmd)
{
	return p == CLI_DONE ? cli_finish_stdout(cmd) : CLI_EXIT_USAGE;
}

int cli_finish(const char *cmd, int rc)
{
	return cli_finish_stdout(cmd) && !rc ? CLI_EXIT_IO : rc;
}

enum mp_err cli_parse_u64(const char *text, const char *what, unsigned flags, uint64_t min,
			  uint64_t max, uint64_t *out, struct mp_error *err)
{
	uint64_t v;
	unsigned shift = 0;
	bool overflow;
	const char *end;

	if (!text[0] || text[0] < '0' || text[0] > '9')
		return mp_fail(err, MP_E_USAGE, "%s: '%s' is not a non-negative integer", what,
			       text);
	end = mp_scan_u64(text, 10, &v, &overflow);
	if (overflow)
		return mp_fail(err, MP_E_USAGE, "%s: '%s' is too large", what, text);
	if ((flags & CLI_NUM_SUFFIX) && *end) {
		static const char suffixes[] = "KMGT";
		const char *s = strchr(suffixes, toupper((unsigned char)end[0]));

		if (s && *s && (end[1] == '\0' || strcmp(end + 1, "iB") == 0)) {
			shift = 10 * (unsigned)(s - suffixes + 1);
			end += end[1] ? 3 : 1;
		}
	}
	if (*end)
		return mp_fail(err, MP_E_USAGE, "%s: '%s' is not a%s integer", what, text,
			       (flags & CLI_NUM_SUFFIX) ? " valid (K, M, G or T suffixed)"
							: " plain decimal");
	if (shift && v > (UINT64_MAX >> shift))
		return mp_fail(err, MP_E_USAGE, "%s: '%s' is too large", what, text);
	v <<= shift;
	if (v < min)
		return mp_fail(err, MP_E_USAGE, "%s: '%s' is too small (at least %llu)", what,
			       text, (unsigned long long)min);
	if (v > max)
		return mp_fail(err, MP_E_USAGE, "%s: '%s' is too large (at most %llu)", what,
			       text, (unsigned long long)max);
	*out = v;
	return MP_OK;
}

char *cli_manifest_path(const char *pack, const char *manifest)
{
	return manifest ? strdup(manifest) : mp_pack_default_manifest_path(pack);
}

int cli_open_pack(const char *pack_path, const struct mp_open_opts *opts, bool quiet,
		  struct mp_pack **out)
{
	struct mp_error err = {0};
	enum mp_err rc = mp_pack_open(out, pack_path, opts, &err);

	if (rc)
		return cli_report(pack_path, &err);
	if (!quiet)
		cli_print_warnings(*out);
	return CLI_EXIT_OK;
}

/*
 * Both wrap mp_pack_lookup() so that the "no such entry" messages have one
 * source: a layer is checked with expert 0, an expert with the first active
 * layer, which validation guarantees exist.
 */
enum mp_err cli_layer_arg(const struct mp_pack *pack, const char *text, uint64_t *layer_id,
			  uint64_t *layer_index, struct mp_error *err)
{
	uint64_t offset, nbytes;
	enum mp_err rc = cli_parse_u64(text, "LAYER", 0, 0, UINT64_MAX, layer_id, err);

	if (!rc)
		rc = mp_pack_lookup(pack, *layer_id, 0, MP_ROLE_UP, &offset, &nbytes, err);
	if (!rc)
		*layer_index = (uint64_t)mp_pack_layer_index(pack, *layer_id);
	return rc;
}

enum mp_err cli_expert_arg(const struct mp_pack *pack, const char *text, uint64_t *expert,
			   struct mp_error *err)
{
	uint64_t offset, nbytes;
	enum mp_err rc = cli_parse_u64(text, "EXPERT", 0, 0, UINT64_MAX, expert, err);

	if (!rc)
		rc = mp_pack_lookup(pack, pack->m.layer_ids[0], *expert, MP_ROLE_UP, &offset,
				    &nbytes, err);
	return rc;
}

enum mp_err cli_entry_args(const struct mp_pack *pack, const char *layer, const char *expert,
			   uint64_t *layer_id, uint64_t *expert_id, struct mp_error *err)
{
	uint64_t layer_index;
	enum mp_err rc = cli_layer_arg(pack, layer, layer_id, &layer_index, err);

	return rc ? rc : cli_expert_arg(pack, expert, expert_id, err);
}

enum cli_parse cli_refuse_terminal(const char *cmd, bool force)
{
	if (force || !isatty(STDOUT_FILENO))
		return CLI_RUN;
	cli_usage_error(cmd, "refusing to write binary data to a terminal "
			"(redirect it, or use --force)");
	return CLI_USAGE_ERROR;
}

int cli_worst(int a, int b)
{
	return a > b ? a : b;
}

json_t *cli_json_text(const char *s)
{
	char *shown;
	json_t *v;

	if (!s)
		return NULL;
	if (mp_text_is_utf8(s, strlen(s)))
		return json_string(s);
	/* Not UTF-8 (a file name can be anything): JSON cannot carry it as
	 * it is, so it goes as the terminal sees it. */
	shown = malloc(CLI_TEXT_MAX);
	if (!shown)
		return NULL;
	v = json_string(cli_text(shown, s));
	free(shown);
	return v;
}

json_t *cli_json_result(enum mp_err code, const char *ok_msg, const char *err_msg,
			const char *pack)
{
	json_t *o = json_object();

	json_object_set_new(o, "ok", json_boolean(code == MP_OK));
	json_object_set_new(o, "code", json_string(mp_err_name(code)));
	json_object_set_new(o, "message", cli_json_text(code == MP_OK ? ok_msg : err_msg));
	json_object_set_new(o, "pack", pack ? cli_json_text(pack) : json_null());
	return o;
}

json_t *cli_warnings_json(const struct mp_pack *pack)
{
	json_t *list = json_array();

	for (unsigned i = 0; pack && list && i < pack->file.nwarnings && i < MP_MAX_WARNINGS; i++)
		json_array_append_new(list, cli_json_text(pack->file.warnings[i]));
	return list;
}

int cli_print_json(json_t *value, size_t flags)
{
	int rc = value ? json_dumpf(value, stdout, flags) : -1;

	if (rc == 0)
		putc('\n', stdout);
	json_decref(value);
	return rc;
}

int cli_finish_stdout(const char *cmd)
{
	return cli_finish_stdout_errno(cmd, 0);
}

int cli_finish_stdout_errno(const char *cmd, int error)
{
	int failed, saved;

	errno = 0;
	failed = fflush(stdout) != 0 || ferror(stdout);
	saved = errno ? errno : error;

	if (!failed)
		return CLI_EXIT_OK;
	if (saved != EPIPE)
		fprintf(stderr, "moepack %s: write error: %s\n", cmd,
			saved ? strerror(saved) : "unknown error");
	return CLI_EXIT_IO;
}

void cli_wait_stdout_writable(void)
{
	struct pollfd pfd = {.fd = STDOUT_FILENO, .events = POLLOUT};

	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
}

int cli_write_stdout(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, p, len);

		if (n < 0 && errno == EAGAIN)
			cli_wait_stdout_writable();
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void cli_catch_signals(void (*handler)(int))
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa, old;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaddset(&sa.sa_mask, sigs[i]);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
}

/* The one stop request of the process: a signal handler has no other way
 * to reach the work it stops.  Written only by ask_stop(). */
static struct mp_cancel signal_cancel;

static void ask_stop(int sig)
{
	mp_cancel_request(&signal_cancel, sig);
}

const struct mp_cancel *cli_cancel_on_signal(void)
{
	cli_catch_signals(ask_stop);
	return &signal_cancel;
}

void cli_die_of_cancel(enum mp_err rc, const struct mp_cancel *c)
{
	int sig = mp_cancel_sig(c);

	if (rc != MP_E_INTERRUPTED || !sig)
		return;
	fflush(NULL);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* SA_RESETHAND has restored the default action: the re-raised signal is
 * delivered, and kills, when the handler returns. */
static void remove_temporaries_and_die(int sig)
{
	mp_output_remove_temporaries();
	raise(sig);
}

void cli_remove_temporaries_on_signal(void)
{
	cli_catch_signals(remove_temporaries_and_die);
}
