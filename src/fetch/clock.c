/* clock.c - the fetch's clock and its notes to the caller
 * (fetch_internal.h): below every phase, so that none calls back up. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "fetch/fetch_internal.h"

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
