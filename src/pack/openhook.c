/* openhook.c - run a validator's opened hook and refuse a pack that changed before it. */
#include "config.h"

#include "pack/openhook.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

enum mp_err mp_open_hook_run(int fd, mp_opened_fn opened, void *arg, const char *pack_path,
			     struct stat *st, struct mp_error *err)
{
	struct stat now;
	enum mp_err rc = opened(fd, arg, err);

	if (rc)
		return rc;
	if (fstat(fd, &now) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot read pack %s: %s", pack_path,
			       strerror(errno));
	if (now.st_size != st->st_size || !same_time(&now.st_mtim, &st->st_mtim) ||
	    !same_time(&now.st_ctim, &st->st_ctim))
		return mp_fail(err, MP_E_PACK_IO, "cannot read pack %s: it changed while it "
			       "was being opened (written to before its read lease was held)",
			       pack_path);
	*st = now;
	return MP_OK;
}
