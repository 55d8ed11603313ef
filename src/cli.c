/* cli.c - helpers shared by the moepack subcommands (see cli.h). */
#include "config.h"

#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_exit_status(enum mp_err code)
{
	switch (mp_err_class(code)) {
	case MP_CLASS_OK:
		return CLI_EXIT_OK;
	case MP_CLASS_INVALID:
		return CLI_EXIT_INVALID;
	case MP_CLASS_USAGE:
		return CLI_EXIT_USAGE;
	case MP_CLASS_IO:
		return CLI_EXIT_IO;
	}
	return CLI_EXIT_IO;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "moepack %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'moepack %s --help' for more information.\n", cmd);
	return CLI_EXIT_USAGE;
}

int cli_report(const char *pack, const struct mp_error *err)
{
	fprintf(stderr, "moepack: %s: %s\n", pack, err->msg);
	return cli_exit_status(err->code);
}

void cli_print_warnings(const struct mp_pack *pack)
{
	for (unsigned i = 0; i < pack->nwarnings && i < MP_MAX_WARNINGS; i++)
		fprintf(stderr, "moepack: warning: %s\n", pack->warnings[i]);
}

int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts)
{
	char spec[64];
	int c;

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

enum mp_err cli_parse_u64(const char *text, const char *what, unsigned flags, uint64_t min,
			  uint64_t max, uint64_t *out, struct mp_error *err)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!text[0] || text[0] < '0' || text[0] > '9')
		return mp_fail(err, MP_E_USAGE, "%s: '%s' is not a non-negative integer", what,
			       text);
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno == ERANGE)
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
	static const char suffix[] = ".manifest.json";
	size_t len;
	char *s;

	if (manifest)
		return strdup(manifest);
	len = strlen(pack);
	s = malloc(len + sizeof suffix);
	if (s) {
		memcpy(s, pack, len);
		memcpy(s + len, suffix, sizeof suffix);
	}
	return s;
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

enum mp_err cli_layer_arg(const struct mp_pack *pack, const char *text, uint64_t *layer_id,
			  uint64_t *layer_index, struct mp_error *err)
{
	const struct mp_manifest *m = &pack->m;
	enum mp_err rc = cli_parse_u64(text, "LAYER", 0, 0, UINT64_MAX, layer_id, err);
	long li;

	if (rc)
		return rc;
	li = mp_pack_layer_index(pack, *layer_id);
	if (li < 0)
		return mp_fail(err, MP_E_NOT_FOUND,
			       "no such entry: layer %s is not an active MoE layer (%u..%u)",
			       text, m->layer_ids[0], m->layer_ids[m->layer_count - 1]);
	*layer_index = (uint64_t)li;
	return MP_OK;
}

enum mp_err cli_expert_arg(const struct mp_pack *pack, const char *text, uint64_t *expert,
			   struct mp_error *err)
{
	enum mp_err rc = cli_parse_u64(text, "EXPERT", 0, 0, UINT64_MAX, expert, err);

	if (rc)
		return rc;
	if (*expert >= pack->m.num_experts)
		return mp_fail(err, MP_E_NOT_FOUND,
			       "no such entry: expert %s is out of range (0..%llu)", text,
			       (unsigned long long)pack->m.num_experts - 1);
	return MP_OK;
}

json_t *cli_json_text(const char *s)
{
	json_t *v = json_string(s);
	char *copy;

	if (v || !s)
		return v;
	/* Not UTF-8 (a file name can be anything): JSON cannot carry it
	 * as is, so say something readable rather than nothing. */
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	v = json_string(copy);
	free(copy);
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
	int failed, saved;

	errno = 0;
	failed = fflush(stdout) != 0 || ferror(stdout);
	saved = errno;

	if (!failed)
		return CLI_EXIT_OK;
	if (saved != EPIPE)
		fprintf(stderr, "moepack %s: write error: %s\n", cmd,
			saved ? strerror(saved) : "unknown error");
	return CLI_EXIT_IO;
}
