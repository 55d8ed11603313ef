/* cmd_check_gguf.c - `moepack check-gguf`: Kimi-K3 tensor quant types of GGUF files,
 * checked before a loader spends hours finding them. */
#include "config.h"

#include <limits.h>
#include <string.h>

#include "cli.h"
#include "gguf.h"
#include "text.h"

/* A path escaped for the terminal: each byte may become \xNN. */
#define SAFE_PATH_MAX (PATH_MAX * 4 + 1)

static const char usage_text[] =
	"Usage: moepack check-gguf [OPTIONS] FILE.gguf...\n"
	"Read the tensor infos of each GGUF file (a whole checkpoint or the parts\n"
	"of a split one) and check the quant types the Kimi-K3 loader requires:\n"
	"blk.N.attn_k_b.weight Q4_0, blk.N.attn_v_b.weight Q2_K,\n"
	"blk.N.ffn_up_exps.weight and blk.N.ffn_gate_exps.weight Q2_K,\n"
	"blk.N.ffn_down_exps.weight Q3_K.  Other tensors are not judged.  A file\n"
	"ggml's own GGUF reader would refuse (duplicate names or keys, data not at\n"
	"the offsets ggml computes, ...) is refused too; names are judged as ggml\n"
	"reads them, up to a NUL.  The first violation in each file is reported.\n"
	"\n"
	"  -j, --json               print one JSON object per file, one per line\n"
	"  -h, --help               show this help and exit\n"
	"\n"
	"Exit status: 0 all files pass, 1 a file breaks a rule or is not a valid\n"
	"GGUF, 2 usage error, 3 a file cannot be read (the highest status wins).\n";

static const struct option long_options[] = {
	{"json", no_argument, NULL, 'j'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/*
 * Everything printed comes escaped: a path (any bytes) goes through
 * mp_text_escape here, a message (naming tensors and keys from the file)
 * through mp_fail.  Both are then one line of valid UTF-8, which JSON
 * carries as it is.
 */
static int report_json(const char *safe_path, enum mp_err rc, const struct mp_error *err,
		       const struct mp_gguf_check_result *res)
{
	json_t *o = json_object();

	json_object_set_new(o, "file", cli_json_text(safe_path));
	json_object_set_new(o, "ok", json_boolean(rc == MP_OK));
	json_object_set_new(o, "code", json_string(mp_err_name(rc)));
	json_object_set_new(o, "message", cli_json_text(rc ? err->msg : "ok"));
	json_object_set_new(o, "tensors_checked",
			    json_integer((json_int_t)res->tensors_checked));
	return cli_print_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER) ? CLI_EXIT_IO : CLI_EXIT_OK;
}

static int check_one(const char *path, bool json)
{
	struct mp_gguf_check_result res = {0};
	struct mp_error err = {0};
	enum mp_err rc = mp_gguf_check_file(path, &res, &err);
	char safe[SAFE_PATH_MAX];

	mp_text_escape(safe, sizeof safe, path, strlen(path), 0);
	if (json) {
		int out = report_json(safe, rc, &err, &res);

		return out ? out : cli_exit_status(rc);
	}
	if (rc)
		return cli_report(safe, &err);
	printf("%s: ok (%llu of %llu tensors checked)\n", safe,
	       (unsigned long long)res.tensors_checked, (unsigned long long)res.tensor_count);
	return CLI_EXIT_OK;
}

int cmd_check_gguf(int argc, char **argv)
{
	const char *cmd = argv[0];
	bool json = false;
	int c, status = CLI_EXIT_OK;

	while ((c = cli_getopt(cmd, argc, argv, "jh", long_options)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return cli_finish_stdout(cmd);
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error(cmd, "missing FILE.gguf");

	for (int i = optind; i < argc; i++) {
		int one = check_one(argv[i], json);

		if (one > status)
			status = one;
	}
	c = cli_finish_stdout(cmd);
	return c > status ? c : status;
}
