/* cmd_info.c - `moepack info`: what a (valid) pack holds and how it is laid out. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "pack/progress.h"

struct info_args {
	bool json;
	struct mp_open_opts open;
};

const struct cli_option cli_info_options[] = {
	CLI_OPT_JSON(CLI_HELP_JSON, struct info_args, json),
	CLI_OPT_MANIFEST(struct info_args, open.manifest_path),
	{NULL},
};

/* As the manifest writes it, "[3584, 3072]": GGUF ne[] order, the row
 * length first.  ("3584 x 3072" would read as 3584 rows.)  A role whose
 * experts' entries record different shapes says so after the first's. */
static void format_shape(char *buf, size_t len, const struct mp_model *m,
			 const struct mp_role_info *ri)
{
	char text[MP_SHAPE_TEXT_MAX];

	mp_shape_text(ri, text, sizeof text);
	if (ri->shape_varies)
		snprintf(buf, len, "%s in layer %u expert 0; other experts differ", text,
			 m->layer_ids[0]);
	else
		snprintf(buf, len, "%s", text);
}

/* The format's own facts, the head or the tail ones, as text lines. */
static void print_facts(const struct mp_pack *p, bool tail)
{
	struct mp_pack_fact f[MP_PACK_FACTS_MAX];
	unsigned n = p->format->facts(p, f);
	char shown[CLI_TEXT_MAX];

	for (unsigned i = 0; i < n; i++) {
		if (f[i].tail != tail)
			continue;
		if (f[i].number)
			printf("%-17s %llu\n", f[i].label, (unsigned long long)f[i].u64);
		else
			printf("%-17s %s\n", f[i].label,
			       f[i].text[0] ? cli_text(shown, f[i].text) : "(none)");
	}
}

static void print_text(const struct mp_pack *p)
{
	const struct mp_model *m = &p->m;
	char size[32], shape[MP_SHAPE_TEXT_MAX + 64], shown[CLI_TEXT_MAX];

	printf("pack              %s\n", cli_text(shown, p->file.path));
	if (strcmp(p->file.path, p->file.real_path) != 0)
		printf("real path         %s\n", cli_text(shown, p->file.real_path));
	printf("manifest          %s\n", cli_text(shown, p->file.manifest_path));
	print_facts(p, false);
	printf("MoE layers        %zu (%u..%u)\n", m->layer_count, m->layer_ids[0],
	       m->layer_ids[m->layer_count - 1]);
	printf("experts           %llu per layer, top-k %llu\n",
	       (unsigned long long)m->num_experts, (unsigned long long)m->top_k);
	printf("roles             %-5s %-5s %3s %13s %13s  %s\n", "name", "dtype", "id",
	       "expert_bytes", "role_offset", "logical_shape");
	/* as they lie in an object */
	for (int i = 0; i < MP_ROLE_COUNT; i++) {
		enum mp_role r = m->order[i];
		const struct mp_role_info *ri = &m->roles[r];

		format_shape(shape, sizeof shape, m, ri);
		printf("                  %-5s %-5s %3d %13llu %13llu  %s\n",
		       mp_role_name(r), ri->dtype, ri->dtype_id,
		       (unsigned long long)ri->expert_bytes,
		       (unsigned long long)ri->role_offset, shape);
	}
	printf("object bytes      %llu (%s)\n", (unsigned long long)m->object_bytes,
	       format_bytes(size, sizeof size, m->object_bytes));
	printf("objects           %llu\n", (unsigned long long)p->object_count);
	printf("alignment         %llu\n", (unsigned long long)m->alignment);
	printf("page aligned      %s\n", p->page_aligned ? "yes" : "no");
	printf("data start        %llu\n", (unsigned long long)m->data_start);
	printf("index entries     %llu\n", (unsigned long long)p->index_count);
	printf("index sha256      %s\n", m->index_sha256);
	printf("full sha256       %s\n", m->sha256[0] ? m->sha256 : "(none)");
	print_facts(p, true);
	printf("file size         %llu (%s)\n", (unsigned long long)p->file.size,
	       format_bytes(size, sizeof size, p->file.size));
}

static json_t *u64(uint64_t v)
{
	/* JSON numbers past 2^63 cannot be carried by jansson; none of these
	 * values come near after validation against the file size. */
	return json_integer((json_int_t)v);
}

static json_t *role_json(const struct mp_role_info *ri)
{
	json_t *o = json_object();
	json_t *shape = json_array();

	for (unsigned i = 0; i < ri->shape_len; i++)
		json_array_append_new(shape, u64(ri->shape[i]));
	json_object_set_new(o, "dtype", json_string(ri->dtype));
	json_object_set_new(o, "dtype_id", json_integer(ri->dtype_id));
	json_object_set_new(o, "expert_bytes", u64(ri->expert_bytes));
	json_object_set_new(o, "role_offset", u64(ri->role_offset));
	json_object_set_new(o, "logical_shape", shape);
	json_object_set_new(o, "logical_shape_varies", json_boolean(ri->shape_varies));
	return o;
}

static json_t *digest_or_null(const char *hex)
{
	return hex[0] ? json_string(hex) : json_null();
}

/* The format's own facts, the head or the tail ones, into o. */
static void json_facts(json_t *o, const struct mp_pack *p, bool tail)
{
	struct mp_pack_fact f[MP_PACK_FACTS_MAX];
	unsigned n = p->format->facts(p, f);

	for (unsigned i = 0; i < n; i++)
		if (f[i].tail == tail)
			json_object_set_new(o, f[i].key, f[i].number ? u64(f[i].u64)
					    : f[i].text[0] ? cli_json_text(f[i].text)
							   : json_null());
}

static int print_json(const struct mp_pack *p)
{
	const struct mp_model *m = &p->m;
	json_t *o = json_object();
	json_t *roles = json_object();
	json_t *layers = json_object();

	for (int r = 0; r < MP_ROLE_COUNT; r++)
		json_object_set_new(roles, mp_role_name((enum mp_role)r),
				    role_json(&m->roles[r]));
	json_object_set_new(layers, "count", u64(m->layer_count));
	json_object_set_new(layers, "first", u64(m->layer_ids[0]));
	json_object_set_new(layers, "last", u64(m->layer_ids[m->layer_count - 1]));

	json_object_set_new(o, "pack", cli_json_text(p->file.path));
	json_object_set_new(o, "real_path", cli_json_text(p->file.real_path));
	json_object_set_new(o, "manifest", cli_json_text(p->file.manifest_path));
	json_facts(o, p, false);
	json_object_set_new(o, "moe_layers", layers);
	json_object_set_new(o, "num_experts", u64(m->num_experts));
	json_object_set_new(o, "top_k", u64(m->top_k));
	json_object_set_new(o, "roles", roles);
	json_object_set_new(o, "object_bytes", u64(m->object_bytes));
	json_object_set_new(o, "object_count", u64(p->object_count));
	json_object_set_new(o, "alignment", u64(m->alignment));
	json_object_set_new(o, "page_aligned", json_boolean(p->page_aligned));
	json_object_set_new(o, "data_start", u64(m->data_start));
	json_object_set_new(o, "index_count", u64(p->index_count));
	json_object_set_new(o, "index_sha256", json_string(m->index_sha256));
	json_object_set_new(o, "sha256", digest_or_null(m->sha256));
	json_facts(o, p, true);
	json_object_set_new(o, "size", u64(p->file.size));
	json_object_set_new(o, "warnings", cli_warnings_json(p));
	return cli_print_json(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) ? CLI_EXIT_IO
								       : CLI_EXIT_OK;
}

int cli_info_run(int argc, char **argv)
{
	struct info_args a = {0};
	struct cli_operands ops;
	struct mp_pack *pack = NULL;
	enum cli_parse p = cli_parse(&cli_info_command, argc, argv, &a, &ops);
	int rc;

	if (p != CLI_RUN)
		return cli_parse_status(p, argv[0]);
	rc = cli_open_pack(ops.v[0], &a.open, a.json, &pack);
	if (rc)
		return rc;
	if (a.json)
		rc = print_json(pack);
	else
		print_text(pack);
	mp_pack_close(pack);
	return cli_finish(argv[0], rc);
}
