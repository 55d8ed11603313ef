/*
 * dequantbench - `make bench` row 8: our Q2_K/Q3_K/MXFP4 dequantization
 * against ggml's own reference dequantize_row_q2_K / dequantize_row_q3_K /
 * dequantize_row_mxfp4, on the same blocks, in the same run, on one core.
 *
 *   dequantbench [-n RUNS] [-b BLOCKS]
 *
 * BLOCKS (default 16384) is the output in units of 256 floats, whatever
 * the type: 16 MiB of float32 by default, 16384 Q2_K or Q3_K blocks and
 * 131072 MXFP4 blocks.
 *
 * ggml's functions come from libggml-base.so, opened with dlopen: the path
 * in $GGML_LIB, or else the first libggml-base.so found under
 * $GGML_NODE_MODULES, /var/cache/moepackfs-ggml/node_modules (where
 * `bootstrap.sh test` installs the prebuilt node-llama-cpp package) or
 * /tmp/oracle/node_modules.  Without it only our figures are printed,
 * with the reason.
 *
 * Prints one line of key=value pairs: for each type, MB/s of float32
 * output (median of RUNS, ours and ggml's runs alternating), and whether
 * the outputs were bit-identical.
 */
#include "config.h"

#include <dlfcn.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "payload/dequant.h"
#include "base/quant.h"

typedef void (*ggml_dequant_fn)(const void *x, float *y, int64_t k);

static char found[4096];

static int find_lib(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	const char *base = path + f->base;

	(void)st;
	if (flag == FTW_F && strcmp(base, "libggml-base.so") == 0) {
		snprintf(found, sizeof found, "%s", path);
		return 1;
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* MB/s of float32 output of one pass. */
static double once(const struct mp_quant_type *qt, ggml_dequant_fn ggml, const void *src,
		   float *dst, size_t blocks)
{
	size_t weights = blocks * qt->block_weights;
	double t0 = now();

	if (ggml)
		ggml(src, dst, (int64_t)weights);
	else
		mp_dequant(qt, src, dst, blocks);
	return (double)weights * 4 / 1e6 / (now() - t0);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof v[0], cmp_double);
	return v[n / 2];
}

/* libggml-base.so, or NULL with *why saying why not. */
static void *open_ggml(const char **why)
{
	const char *lib = getenv("GGML_LIB");
	void *h = NULL;

	if (!lib || !*lib) {
		const char *dirs[] = {getenv("GGML_NODE_MODULES"),
				      "/var/cache/moepackfs-ggml/node_modules",
				      "/tmp/oracle/node_modules"};

		for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && !found[0]; i++)
			if (dirs[i] && *dirs[i] && nftw(dirs[i], find_lib, 16, FTW_PHYS) == 1)
				lib = found;
	}
	if (!lib || !*lib)
		*why = "no libggml-base.so: GGML_LIB unset and none under $GGML_NODE_MODULES, "
		       "/var/cache/moepackfs-ggml/node_modules or /tmp/oracle/node_modules";
	else if (!(h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)))
		*why = dlerror();
	printf("ggml=%s", h ? lib : "none");
	return h;
}

/* One type: " T_ours_MBps=... T_ggml_MBps=... T_identical=yes|no".
 * Returns -1 when memory runs out. */
static int bench_type(const char *type, const char *sym, void *h, size_t units, int runs)
{
	const struct mp_quant_type *qt = mp_quant_by_name(type);
	size_t blocks = units * MP_QK_K / qt->block_weights;
	size_t bytes = blocks * qt->block_bytes, nf = blocks * qt->block_weights;
	unsigned char *src = malloc(bytes);
	float *a = malloc(nf * sizeof *a), *b = malloc(nf * sizeof *b);
	ggml_dequant_fn fn = h ? (ggml_dequant_fn)(uintptr_t)dlsym(h, sym) : NULL;
	double mbps_ours[64], mbps_ggml[64];
	int rc = 0;

	if (!src || !a || !b || mp_quant_fill_demo(qt, 20240611, 0, src, bytes)) {
		rc = -1;
		goto out;
	}
	/* fault the pages in, and keep the outputs for the comparison */
	mp_dequant(qt, src, a, blocks);
	if (fn)
		fn(src, b, (int64_t)nf);
	/* ours and ggml's alternate, so that load from elsewhere on the
	 * machine falls on both alike */
	for (int r = 0; r < runs; r++) {
		mbps_ours[r] = once(qt, NULL, src, a, blocks);
		if (fn)
			mbps_ggml[r] = once(qt, fn, src, b, blocks);
	}
	printf(" %s_ours_MBps=%.0f", type, median(mbps_ours, runs));
	if (fn)
		printf(" %s_ggml_MBps=%.0f %s_identical=%s", type, median(mbps_ggml, runs), type,
		       memcmp(a, b, nf * sizeof *a) ? "no" : "yes");
	else if (h)
		printf(" %s_ggml_MBps=none", type);
out:
	free(src);
	free(a);
	free(b);
	return rc;
}

int main(int argc, char **argv)
{
	static const char *const types[] = {"Q2_K", "Q3_K", "MXFP4"};
	static const char *const syms[] = {"dequantize_row_q2_K", "dequantize_row_q3_K",
					   "dequantize_row_mxfp4"};
	size_t units = 16384; /* 16 MiB of floats: past the caches */
	int runs = 15, c;
	const char *why = NULL;
	void *h;

	while ((c = getopt(argc, argv, "n:b:")) != -1) {
		if (c == 'n')
			runs = atoi(optarg);
		else if (c == 'b')
			units = (size_t)strtoull(optarg, NULL, 10);
		else
			return 2;
	}
	if (runs < 1 || runs > 64 || units < 1 || units > (1u << 22)) {
		fprintf(stderr, "dequantbench: -n 1..64, -b 1..4194304\n");
		return 2;
	}
	h = open_ggml(&why);
	for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
		if (bench_type(types[t], syms[t], h, units, runs)) {
			fprintf(stderr, "dequantbench: out of memory\n");
			return 1;
		}
	if (why)
		printf(" why=\"%s\"", why);
	printf("\n");
	if (h)
		dlclose(h);
	return 0;
}
