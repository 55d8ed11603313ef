/*
 * replay.c - main() for a fuzz target built without libFuzzer: run the
 * target once on each file named on the command line, as libFuzzer does
 * when given files.  A finding aborts (or trips ASan in the sanitizer
 * build); otherwise the exit status is 0, or 3 when a file cannot be read.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

/* Inputs larger than any target's -max_len are not inputs we made. */
#define REPLAY_MAX (16u << 20)

int main(int argc, char **argv)
{
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		unsigned char *buf = malloc(REPLAY_MAX);
		size_t n;

		if (!f || !buf) {
			fprintf(stderr, "replay: cannot read %s: %s\n", argv[i],
				strerror(errno));
			free(buf);
			if (f)
				fclose(f);
			return 3;
		}
		n = fread(buf, 1, REPLAY_MAX, f);
		fclose(f);
		if (getenv("MP_FUZZ_VERBOSE")) {
			printf("%s ", argv[i]);
			fflush(stdout);
		}
		LLVMFuzzerTestOneInput(buf, n);
		free(buf);
	}
	return 0;
}
