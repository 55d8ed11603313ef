/* cmd_ls.c - `moepack ls`: the index, as text or streamed JSON. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char usage_text[] =
	"Usage: moepack ls [OPTIONS] PACK [LAYER [EXPERT]]\n"
	"Validate PACK and list its index entries in file order, one per line:\n"
	"tensor name, layer, expert, role, offset and size in bytes.  LAYER is a\n"
	"real layer id (1..92); EXPERT is 0..num_experts-1.\n"
	"\n"
	"  -j, --json               print a JSON array of entry objects\n"
	"  -m, --manifest=FILE      the manifest (default: PACK.manifest.json)\n"
	"  -h, --help               show this help and exit\n"
	"\n"
	"Exit status: 0 listed, 1 invalid pack, 2 usage error or no such layer or\n"
	"expert, 3 a file cannot be read.\n";

static const struct option long_options[] = {
	{"json", no_argument, NULL, 'j'},
	{"manifest", required_argument, NULL, 'm'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* What to list: layer indexes [layer_first, layer_end) x experts [...). */
struct selection {
	uint64_t layer_first, layer_end;
	uint64_t expert_first, expert_end;
};

/*
 * 247k lines at Kimi K3 scale: formatted into one large buffer and written
 * with few write(2)s.  Our own buffer rather than setvbuf(), which would
 * need a buffer that outlives main.
 */
#define OUT_BUF (1u << 20)
#define LINE_MAX_BYTES 256

struct out {
	char *buf;
	size_t len;
	int error; /* errno of the first failed write, or 0 */
};

static void out_flush(struct out *o)
{
	size_t done = 0;

	while (done < o->len && !o->error) {
		ssize_t n = write(STDOUT_FILENO, o->buf + done, o->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			o->error = n < 0 ? errno : EIO;
		else
			done += (size_t)n;
	}
	o->len = 0;
}

static void out_printf(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (OUT_BUF - o->len < LINE_MAX_BYTES)
		out_flush(o);
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, OUT_BUF - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n < OUT_BUF - o->len ? (size_t)n : OUT_BUF - o->len - 1;
}

static void print_entry(struct out *o, const struct mp_pack *p, uint64_t layer_index,
			uint64_t expert, enum mp_role role, bool json, bool first)
{
	unsigned long long layer = p->m.layer_ids[layer_index];
	uint64_t offset, nbytes;
	char name[MP_ENTRY_NAME_LEN];

	mp_pack_role_range(p, mp_pack_object(p, layer_index, expert), role, &offset, &nbytes);
	/* Names are made here from numbers and role names: nothing to escape
	 * for JSON. */
	mp_tensor_name(name, sizeof name, layer, role);
	if (json)
		out_printf(o, "%s\n  {\"name\": \"%s\", \"layer\": %llu, \"expert\": %llu, "
			   "\"role\": \"%s\", \"offset\": %llu, \"nbytes\": %llu}",
			   first ? "" : ",", name, layer, (unsigned long long)expert,
			   mp_role_name(role), (unsigned long long)offset,
			   (unsigned long long)nbytes);
	else
		out_printf(o, "%-28s %3llu %5llu %-4s %15llu %12llu\n", name, layer,
			   (unsigned long long)expert, mp_role_name(role),
			   (unsigned long long)offset, (unsigned long long)nbytes);
}

/* Returns the errno of a failed write, or 0. */
static int list(const struct mp_pack *p, const struct selection *s, bool json)
{
	struct out o = {.buf = malloc(OUT_BUF)};
	bool first = true;

	if (!o.buf)
		return ENOMEM;
	if (json)
		out_printf(&o, "[");
	for (uint64_t l = s->layer_first; l < s->layer_end && !o.error; l++)
		for (uint64_t e = s->expert_first; e < s->expert_end; e++)
			for (int r = 0; r < MP_ROLE_COUNT; r++) {
				print_entry(&o, p, l, e, (enum mp_role)r, json, first);
				first = false;
			}
	if (json)
		out_printf(&o, first ? "]\n" : "\n]\n");
	out_flush(&o);
	free(o.buf);
	return o.error;
}

int cmd_ls(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct mp_open_opts open = {0};
	struct mp_pack *pack = NULL;
	struct mp_error err = {0};
	struct selection sel;
	const char *pack_path;
	bool json = false;
	const char *negative;
	int c, rc, nargs;

	c = cli_negative_operand(argc, argv, "jm:h", long_options, &negative);
	if (c >= 0)
		return cli_usage_error(cmd, "%s: '%s' is not a non-negative integer",
				       c == 0 ? "PACK" : c == 1 ? "LAYER" : "EXPERT", negative);
	while ((c = cli_getopt(cmd, argc, argv, "jm:h", long_options)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'm':
			open.manifest_path = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return cli_finish_stdout(cmd);
		default:
			return CLI_EXIT_USAGE;
		}
	}
	nargs = argc - optind;
	if (nargs < 1)
		return cli_usage_error(cmd, "missing PACK");
	if (nargs > 3)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 3]);
	pack_path = argv[optind];
	/* Numbers are checked before the (possibly slow) validation. */
	for (int i = 1; i < nargs; i++) {
		uint64_t ignored;

		if (cli_parse_u64(argv[optind + i], i == 1 ? "LAYER" : "EXPERT", 0, 0,
				  UINT64_MAX, &ignored, &err))
			return cli_usage_error(cmd, "%s", err.msg);
	}

	rc = cli_open_pack(pack_path, &open, true, &pack);
	if (rc)
		return rc;
	sel.layer_first = 0;
	sel.layer_end = pack->m.layer_count;
	sel.expert_first = 0;
	sel.expert_end = pack->m.num_experts;
	if (nargs >= 2) {
		uint64_t layer_id;

		if (cli_layer_arg(pack, argv[optind + 1], &layer_id, &sel.layer_first, &err))
			goto fail;
		sel.layer_end = sel.layer_first + 1;
	}
	if (nargs == 3) {
		if (cli_expert_arg(pack, argv[optind + 2], &sel.expert_first, &err))
			goto fail;
		sel.expert_end = sel.expert_first + 1;
	}

	rc = list(pack, &sel, json);
	mp_pack_close(pack);
	if (rc && rc != EPIPE)
		fprintf(stderr, "moepack %s: write error: %s\n", cmd, strerror(rc));
	return rc ? CLI_EXIT_IO : CLI_EXIT_OK;
fail:
	mp_pack_close(pack);
	return cli_report(pack_path, &err);
}
