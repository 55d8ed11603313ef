/*
 * epbench - `make bench` row 24: validate an SGLANG-EXPERTPACK-v1 pack
 * with mp_ep_open(), as moepack verify will once it knows the format.
 *
 *   epbench PACK [LAYERS EXPERTS TOP_K]
 *
 * Runs every default check (the reference runtime's and the stricter
 * ones) once, with the expected dimensions when given, and prints one line:
 * "ok entries=N objects=N warnings=N", or the error on stderr with the
 * code's exit status.  run.sh times whole runs with `readbench run`.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "pack/expertpack/expertpack.h"

int main(int argc, char **argv)
{
	struct mp_ep_opts o = {0};
	struct mp_error err;
	struct mp_ep *ep;

	if (argc != 2 && argc != 5) {
		fprintf(stderr, "usage: epbench PACK [LAYERS EXPERTS TOP_K]\n");
		return 2;
	}
	if (argc == 5) {
		o.expect_layers = strtoull(argv[2], NULL, 10);
		o.expect_experts = strtoull(argv[3], NULL, 10);
		o.expect_top_k = strtoull(argv[4], NULL, 10);
	}
	if (mp_ep_open(&ep, argv[1], &o, &err) != MP_OK) {
		fprintf(stderr, "epbench: %s: %s (%s)\n", argv[1], err.msg, mp_err_name(err.code));
		return mp_err_exit_status(err.code);
	}
	printf("ok entries=%llu objects=%llu warnings=%u\n", (unsigned long long)ep->index_count,
	       (unsigned long long)ep->object_count, ep->file.nwarnings);
	mp_ep_close(ep);
	return 0;
}
