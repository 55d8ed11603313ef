/*
 * builder.h - what both pack builders share: the free-space check made
 * before the first byte is written, the default margin, and the test
 * hooks that let a test stop a build at a known point (moepack(1)).
 */
#ifndef MOEPACK_BUILDER_H
#define MOEPACK_BUILDER_H

#include <stdint.h>

#include "base/cancel.h"
#include "base/errors.h"

#define MP_BUILD_DEFAULT_MARGIN (2ULL << 30) /* the reference's 2 GiB */

/*
 * The builders' test hooks (moepack(1)): the milliseconds each object
 * copied or entry compared is slowed by (MOEPACK_TEST_BUILD_DELAY_MS, 0
 * without it), and a wait at the point the test names
 * (MOEPACK_TEST_BUILD_PAUSE=point), announced on stderr ("moepack: test
 * hook: paused at POINT"), until a stop is asked through cancel, at most
 * ten minutes; nothing at any other point.
 */
long mp_build_test_delay_ms(void);

/*
 * The free-space check both builders make before writing: dir must have
 * `need` bytes free beyond `margin` (--margin), else MP_E_NO_SPACE naming
 * all three.  Skipped under the test hook MOEPACK_TEST_NO_SPACE_CHECK,
 * which lets a test reach a real ENOSPC.
 */
enum mp_err mp_build_check_space(const char *dir, uint64_t need, uint64_t margin,
				 struct mp_error *err);
void mp_build_test_pause(const struct mp_cancel *cancel, const char *point);

#endif
