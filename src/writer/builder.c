/* builder.c - the free-space check and test hooks of builder.h. */
#include "config.h"

#include "writer/builder.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

/* Test hook: milliseconds to sleep after each object, so that a test can
 * interrupt a small build deterministically.  Documented in moepack(1). */
#define DELAY_ENV "MOEPACK_TEST_BUILD_DELAY_MS"
/* Test hook: at the named point (mp_build_test_pause()), say so on stderr
 * and wait for a stop to be asked, so that a test's signal lands there.
 * The test waits for the line, not for file contents it would have to
 * probe: on a loaded machine a probe can lag the build by minutes.
 * Documented in moepack(1). */
#define PAUSE_ENV "MOEPACK_TEST_BUILD_PAUSE"
/* a bound, long enough for a starved test to send its signal, so that a
 * test that never signals still ends */
#define PAUSE_MS 600000
/* Test hook: skip the free-space check, to reach a real ENOSPC. */
#define NO_SPACE_CHECK_ENV "MOEPACK_TEST_NO_SPACE_CHECK"

long mp_build_test_delay_ms(void)
{
	const char *env = getenv(DELAY_ENV);

	return env ? strtol(env, NULL, 10) : 0;
}

void mp_build_test_pause(const struct mp_cancel *cancel, const char *point)
{
	const char *env = getenv(PAUSE_ENV);

	if (env && strcmp(env, point) == 0) {
		fprintf(stderr, "moepack: test hook: paused at %s\n", point);
		fflush(stderr);
		mp_cancel_sleep_ms(cancel, PAUSE_MS);
	}
}

enum mp_err mp_build_check_space(const char *dir, uint64_t need, uint64_t margin,
				 struct mp_error *err)
{
	struct statvfs sv;
	uint64_t free_bytes;

	if (getenv(NO_SPACE_CHECK_ENV))
		return MP_OK;
	if (statvfs(dir, &sv) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot read free space of %s: %s", dir,
			       strerror(errno));
	free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (free_bytes < need || free_bytes - need < margin)
		return mp_fail(err, MP_E_NO_SPACE, "%s: %s has %" PRIu64 " bytes free, the pack "
			       "needs %" PRIu64 " more and a margin of %" PRIu64 " (--margin)",
			       mp_err_summary(MP_E_NO_SPACE), dir, free_bytes, need, margin);
	return MP_OK;
}
