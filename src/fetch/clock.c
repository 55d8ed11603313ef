/* clock.c - the fetch's clock, its notes to the caller and its test hook
 * (fetch_internal.h): below every phase, so that none calls back up. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fetch/fetch_internal.h"

/* Test hook: at the named point (mp_fetch_test_pause()), wait for a stop to
 * be asked, so that a test's signal lands there.  Documented in
 * moepack(1). */
#define PAUSE_ENV "MOEPACK_TEST_FETCH_PAUSE"
/* a bound, long enough for a starved test to send its signal, so that a
 * test that never signals still ends */
#define PAUSE_MS 600000

double mp_fetch_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void mp_fetch_note(struct fetch *f, const char *fmt, ...)
{
	char line[MP_MSG_MAX + 256];
	va_list ap;

	if (!f->o->note)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	f->o->note(line, f->o->note_arg);
}

enum mp_err mp_fetch_test_pause(struct fetch *f, const char *point, struct mp_error *err)
{
	const char *env = getenv(PAUSE_ENV);

	if (!env || strcmp(env, point) != 0)
		return MP_OK;
	mp_fetch_note(f, "test hook: paused at %s", point);
	mp_cancel_sleep_ms(f->o->cancel, PAUSE_MS);
	return mp_cancel_check(f->o->cancel, err, "paused at %s in fetching %s", point,
			       f->partial);
}
