/*
 * fuzz_common.c - helpers shared by the fuzz targets (see fuzz.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fuzz.h"

#ifndef MP_FUZZ_SEED_DIR
#define MP_FUZZ_SEED_DIR "tests/fuzz/seeds"
#endif

const char *mp_fuzz_seed_dir(void)
{
	const char *dir = getenv("MP_FUZZ_SEEDS");
	struct stat st;

	if (!dir || !*dir)
		dir = MP_FUZZ_SEED_DIR;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fuzz: seed directory %s is missing (make fuzz-seeds, "
				"or set MP_FUZZ_SEEDS)\n", dir);
		exit(2);
	}
	return dir;
}

void mp_fuzz_bug(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz: BUG: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void mp_fuzz_report(enum mp_err rc, const struct mp_error *err)
{
	if (!getenv("MP_FUZZ_VERBOSE"))
		return;
	printf("%s: %s\n", mp_err_name(rc), rc ? err->msg : "accepted");
	fflush(stdout);
}
