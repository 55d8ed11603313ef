/* checkgguf.c - `moepack check-gguf` of a DeepSeek-V4-Flash GGUF, as
 * SGLang's expert-pack builder checks it. */
#include "config.h"

#include "cli/expertpack/expertpack.h"

#include <limits.h>
#include <string.h>

#include "base/text.h"
#include "cli/cli.h"
#include "writer/expertpack/plan.h"
#include "writer/expertpack/write.h"

/* A path escaped for the terminal: each byte may become \xNN. */
#define SAFE_PATH_MAX (PATH_MAX * 4 + 1)

/* One DeepSeek-V4-Flash GGUF, as SGLang's expert-pack builder checks it. */
int cli_ep_check_gguf(void **state, const char *path, const struct cli_check_gguf_args *a)
{
	struct mp_epw_plan p;
	struct mp_error err = {0};
	enum mp_err rc = mp_epw_plan_open(&p, path, a->config, &err);
	char safe[SAFE_PATH_MAX];
	json_t *o;
	int out = CLI_EXIT_OK;

	(void)state; /* one file is all this format checks at a time */
	mp_text_escape(safe, sizeof safe, path, strlen(path), 0);
	if (a->json) {
		o = json_object();
		json_object_set_new(o, "file", cli_json_text(safe));
		json_object_set_new(o, "format", json_string("expertpack-v1"));
		json_object_set_new(o, "ok", json_boolean(rc == MP_OK));
		json_object_set_new(o, "code", json_string(mp_err_name(rc)));
		json_object_set_new(o, "message", cli_json_text(rc ? err.msg : "ok"));
		json_object_set_new(o, "tensors_checked",
				    json_integer(rc ? 0 : (json_int_t)(3 * p.layers)));
		out = cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER) ? CLI_EXIT_IO : 0;
	} else if (rc) {
		cli_report(rc == MP_E_CONFIG_IO || rc == MP_E_CONFIG_MISMATCH ? a->config : path,
			   &err);
	} else {
		printf("%s: ok (SGLANG-EXPERTPACK-v1: %llu layers x %llu experts, role %llu bytes, "
		       "%zu tensors)\n", safe, (unsigned long long)p.layers,
		       (unsigned long long)p.experts, (unsigned long long)p.role_bytes, p.ntensors);
	}
	mp_epw_plan_free(&p);
	return out ? out : cli_exit_status(rc);
}
