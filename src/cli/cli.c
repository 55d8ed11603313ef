/* cli.c - helpers shared by the moepack subcommands (see cli.h). */
#include "config.h"

#include "cli/cli.h"
#include "pack/progress.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * The hidden `moepack CMD --list-options`: the very tables getopt_long
 * parses with, one option a line, "LONG SHORT ARG" with "-" for what it
 * lacks ("--manifest -m arg", "--sparse - -"), for the bash completion.
 */
static int list_options(const char *cmd, const char *shortopts, const struct option *longopts)
{
	for (const struct option *o = longopts; o->name; o++) {
		const char *arg = o->has_arg == no_argument ? "-" : "arg";

		if (o->val > 0 && o->val < 0x100 && strchr(shortopts, o->val))
			printf("--%s -%c %s\n", o->name, o->val, arg);
		else
			printf("--%s - %s\n", o->name, arg);
	}
	for (const char *c = shortopts; *c; c++) {
		bool has_long = false;

		if (*c == ':')
			continue;
		for (const struct option *o = longopts; o->name; o++)
			has_long = has_long || o->val == *c;
		if (!has_long)
			printf("- -%c %s\n", *c, c[1] == ':' ? "arg" : "-");
	}
	return cli_finish_stdout(cmd);
}

int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts)
{
	char spec[64];
	int c;

	if (argc == 2 && strcmp(argv[1], "--list-options") == 0)
		exit(list_options(cmd, shortopts, longopts));

	/* A leading ':' makes getopt tell a missing argument (':') from an
	 * unknown option ('?'), and keeps it quiet: we word both ourselves. */
	snprintf(spec, sizeof spec, ":%s", shortopts);
	opterr = 0;
	c = getopt_long(argc, argv, spec, longopts, NULL);
	if (c == ':') {
		cli_usage_error(cmd, "option '%s' requires an argument", argv[optind - 1]);
		return '?';
	}
	if (c == '?') {
		const char *arg = argv[optind - 1];

		if (optopt > 0 && optopt < 0x100 && !strchr(shortopts, optopt))
			cli_usage_error(cmd, "invalid option -- '%c'", optopt);
		else if (optopt && strncmp(arg, "--", 2) == 0 && strchr(arg, '='))
			cli_usage_error(cmd, "option '%.*s' doesn't allow an argument",
					(int)(strchr(arg, '=') - arg), arg);
		else
			cli_usage_error(cmd, "unrecognized option '%s'", arg);
		return '?';
	}
	return c;
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

int cli_negative_operand(int argc, char **argv, const char *shortopts,
			 const struct option *longopts, const char **text)
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
		if (strncmp(a, "--", 2) == 0) {
			for (const struct option *o = longopts; o->name; o++)
				if (strcmp(a + 2, o->name) == 0 && o->has_arg == required_argument)
					i++; /* "--manifest FILE": FILE is not an operand */
		} else if (a[0] == '-' && a[1]) {
			for (const char *c = a + 1; *c; c++) {
				const char *spec = strchr(shortopts, *c);
				if (spec && spec[1] == ':') {
					if (!c[1])
						i++; /* "-m FILE" */
					break;   /* "-mFILE" */
				}
			}
		} else {
			operand++;
		}
	}
	return -1;
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
