/* cmd_ls.c - `moepack ls`: the index, as text or streamed JSON. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonstr.h"
#include "cli/cli.h"
#include "cli/commands.h"

struct ls_args {
	bool json;
	struct mp_open_opts open;
};

const struct cli_option cli_ls_options[] = {
	CLI_OPT_JSON("print a JSON array of entry objects", struct ls_args, json),
	CLI_OPT_MANIFEST(struct ls_args, open.manifest_path),
	{NULL},
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
/* The longest line: a 128-byte name escaped (at most 6 bytes a byte), a
 * shape of MP_MAX_SHAPE 20-digit numbers, the other fields. */
#define LINE_MAX_BYTES 2048

struct out {
	char *buf;
	size_t len;
	int error; /* errno of the first failed write, or 0 */
};

static void out_flush(struct out *o)
{
	if (!o->error)
		o->error = cli_write_stdout(o->buf, o->len);
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
	uint64_t offset, nbytes, object = mp_pack_object(p, layer_index, expert);
	char name[MP_PACK_TENSOR_NAME_MAX], shown[CLI_TEXT_MAX], *quoted = NULL;
	char shape[MP_SHAPE_TEXT_MAX];
	struct mp_role_info ri;

	mp_pack_role_range(p, object, role, &offset, &nbytes);
	/* a format's index may hold any bytes in a name: escaped either way */
	mp_pack_tensor_name(p, object, role, name, sizeof name);
	/* the entry's own shape: another expert's may differ */
	mp_pack_role_info(p, object, role, &ri);
	mp_shape_text(&ri, shape, sizeof shape);
	if (json && (quoted = mp_json_quote(name, strlen(name), NULL)) != NULL)
		out_printf(o, "%s\n  {\"name\": %s, \"layer\": %llu, \"expert\": %llu, "
			   "\"role\": \"%s\", \"offset\": %llu, \"nbytes\": %llu, "
			   "\"shape\": %s}",
			   first ? "" : ",", quoted, layer, (unsigned long long)expert,
			   mp_role_name(role), (unsigned long long)offset,
			   (unsigned long long)nbytes, shape);
	else if (json)
		o->error = ENOMEM;
	else
		out_printf(o, "%-28s %3llu %5llu %-4s %15llu %12llu\n", cli_text(shown, name),
			   layer, (unsigned long long)expert, mp_role_name(role),
			   (unsigned long long)offset, (unsigned long long)nbytes);
	free(quoted);
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
			for (int i = 0; i < MP_ROLE_COUNT; i++) {
				/* in the order the roles lie in the object */
				print_entry(&o, p, l, e, p->m.order[i], json, first);
				first = false;
			}
	if (json)
		out_printf(&o, first ? "]\n" : "\n]\n");
	out_flush(&o);
	free(o.buf);
	return o.error;
}

/* LAYER and EXPERT are numbers: checked before the (possibly slow)
 * validation. */
static enum cli_parse check_numbers(const char *cmd, const struct cli_operands *ops)
{
	struct mp_error err = {0};
	uint64_t ignored;

	for (int i = 1; i < ops->n; i++) {
		if (cli_parse_u64(ops->v[i], i == 1 ? "LAYER" : "EXPERT", 0, 0, UINT64_MAX,
				  &ignored, &err)) {
			cli_usage_error(cmd, "%s", err.msg);
			return CLI_USAGE_ERROR;
		}
	}
	return CLI_RUN;
}

/* All layers and experts, or the LAYER [EXPERT] given. */
static enum mp_err select_entries(const struct mp_pack *pack, const struct cli_operands *ops,
				  struct selection *sel, struct mp_error *err)
{
	uint64_t layer_id;
	enum mp_err rc = MP_OK;

	sel->layer_first = 0;
	sel->layer_end = pack->m.layer_count;
	sel->expert_first = 0;
	sel->expert_end = pack->m.num_experts;
	if (ops->n >= 2 && !(rc = cli_layer_arg(pack, ops->v[1], &layer_id, &sel->layer_first,
						 err)))
		sel->layer_end = sel->layer_first + 1;
	if (ops->n == 3 && !rc && !(rc = cli_expert_arg(pack, ops->v[2], &sel->expert_first, err)))
		sel->expert_end = sel->expert_first + 1;
	return rc;
}

int cli_ls_run(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct ls_args a = {0};
	struct cli_operands ops;
	struct mp_pack *pack = NULL;
	struct mp_error err = {0};
	struct selection sel;
	enum cli_parse p = cli_parse(&cli_ls_command, argc, argv, &a, &ops);
	int rc;

	if (p == CLI_RUN)
		p = check_numbers(cmd, &ops);
	if (p != CLI_RUN)
		return cli_parse_status(p, cmd);
	rc = cli_open_pack(ops.v[0], &a.open, true, &pack);
	if (rc)
		return rc;
	if (select_entries(pack, &ops, &sel, &err)) {
		mp_pack_close(pack);
		return cli_report(ops.v[0], &err);
	}
	rc = list(pack, &sel, a.json);
	mp_pack_close(pack);
	if (rc && rc != EPIPE)
		fprintf(stderr, "moepack %s: write error: %s\n", cmd, strerror(rc));
	return rc ? CLI_EXIT_IO : CLI_EXIT_OK;
}
