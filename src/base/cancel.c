/* cancel.c - a request to stop long work (see cancel.h). */
#include "config.h"

#include "base/cancel.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

enum mp_err mp_cancel_check(const struct mp_cancel *c, struct mp_error *err,
			    const char *doing_fmt, ...)
{
	int sig = mp_cancel_sig(c);
	char doing[MP_MSG_MAX];
	va_list ap;

	if (!sig)
		return MP_OK;
	va_start(ap, doing_fmt);
	vsnprintf(doing, sizeof doing, doing_fmt, ap);
	va_end(ap);
	/* mp_fail escapes what the paths in it hold */
	return mp_fail(err, MP_E_INTERRUPTED, "%s by signal %d while %s",
		       mp_err_summary(MP_E_INTERRUPTED), sig, doing);
}

void mp_cancel_sleep_ms(const struct mp_cancel *c, long ms)
{
	struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};

	while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR && !mp_cancel_sig(c))
		;
}
