/* ggufcheck.c - the Kimi-K3 rules on a GGUF file's tensor types, applied
 * to every tensor info the reader passes (k3names.h holds the rules). */
#include "config.h"

#include "writer/kimi/ggufcheck.h"

#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/quant.h"
#include "writer/gguf.h"
#include "writer/kimi/k3names.h"

static enum mp_err check_tensor(const struct mp_gguf_tensor *t, void *ctx,
				struct mp_error *err)
{
	struct mp_gguf_check_result *res = ctx;
	/* the name as ggml sees it, up to a NUL inside the string: that is
	 * the name the loader looks the tensor up by */
	const struct mp_k3_rule *rule = mp_k3_rule_for(t->name, NULL);
	char have[32], want[32];

	if (!rule)
		return MP_OK;
	res->tensors_checked++;
	if (t->type == (uint32_t)rule->type)
		return MP_OK;
	mp_gguf_type_text(have, sizeof have, t->type);
	mp_gguf_type_text(want, sizeof want, (uint32_t)rule->type);
	return mp_fail(err, rule->code, "%s: %s is %s%s%s", mp_err_summary(rule->code),
		       t->name, have, rule->say_required ? ", must be " : "",
		       rule->say_required ? want : "");
}

enum mp_err mp_gguf_check_fd(int fd, const char *path, struct mp_gguf_check_result *res,
			     struct mp_error *err)
{
	struct mp_gguf_check_result local = {0};
	struct mp_gguf_header h = {0};
	enum mp_err rc = mp_gguf_read(fd, path, &h, check_tensor, &local, err);

	local.tensor_count = h.tensor_count;
	if (res)
		*res = local;
	return rc;
}

enum mp_err mp_gguf_check_file(const char *path, struct mp_gguf_check_result *res,
			       struct mp_error *err)
{
	struct stat st;
	enum mp_err rc;
	int fd;

	if ((rc = mp_open_regular(path, "GGUF file", MP_E_GGUF_IO, &fd, &st, err))) {
		if (res)
			*res = (struct mp_gguf_check_result){0};
		return rc;
	}
	rc = mp_gguf_check_fd(fd, path, res, err);
	close(fd);
	return rc;
}
