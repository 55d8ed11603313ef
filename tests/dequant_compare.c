/*
 * dequant_compare.c - for tests/dequant-clang.test: dequantize the ggml
 * fixtures of tests/data/dequant (q2_k.bin, q3_k.bin, mxfp4.bin) with
 * src/payload/ as built by whatever compiler compiled this, and compare
 * every float's bits with ggml's own output (q2_k.f32, q3_k.f32,
 * mxfp4.f32).  Prints one line per type and exits 1 when any bit differs,
 * or when a K-quant fixture has no NaN or the MXFP4 one no Inf to compare.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "payload/dequant.h"

static unsigned char *slurp(const char *dir, const char *name, size_t *n)
{
	char path[4096];
	unsigned char *buf;
	long len;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0) {
		fprintf(stderr, "dequant_compare: cannot read %s\n", path);
		exit(2);
	}
	rewind(f);
	buf = malloc((size_t)len + 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "dequant_compare: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	*n = (size_t)len;
	return buf;
}

int main(int argc, char **argv)
{
	int status = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: dequant_compare FIXTURE_DIR\n");
		return 2;
	}
	for (int t = 0; t < 3; t++) {
		static const char *names[] = {"q2_k", "q3_k", "mxfp4"};
		static const size_t blocks[] = {MP_Q2K_BYTES, MP_Q3K_BYTES, MP_MXFP4_BYTES};
		static const size_t weights[] = {MP_QK_K, MP_QK_K, MP_QK_MXFP4};
		static void (*const decode[])(const void *, float *restrict, size_t) = {
			mp_dequant_q2_k, mp_dequant_q3_k, mp_dequant_mxfp4};
		const char *name = names[t];
		size_t block = blocks[t], nb, nf, differ = 0, nan = 0, inf = 0;
		char file[32];
		unsigned char *raw, *want;
		float *got;

		snprintf(file, sizeof file, "%s.bin", name);
		raw = slurp(argv[1], file, &nb);
		snprintf(file, sizeof file, "%s.f32", name);
		want = slurp(argv[1], file, &nf);
		if (nb % block || nf != nb / block * weights[t] * 4) {
			fprintf(stderr, "dequant_compare: %s fixtures disagree in size\n", name);
			return 2;
		}
		got = malloc(nf);
		decode[t](raw, got, nb / block);
		for (size_t i = 0; i < nf / 4; i++) {
			uint32_t a, b;

			memcpy(&a, got + i, 4);
			memcpy(&b, want + 4 * i, 4);
			nan += (b & 0x7fffffffu) > 0x7f800000u;
			inf += (b & 0x7fffffffu) == 0x7f800000u;
			if (a != b && differ++ < 3)
				printf("%s value %zu: 0x%08x, ggml 0x%08x\n", name, i, a, b);
		}
		printf("%s: %zu values (%zu NaN, %zu Inf), %zu differ\n", name, nf / 4, nan, inf,
		       differ);
		if (differ || (t < 2 ? !nan : !inf))
			status = 1;
		free(raw);
		free(want);
		free(got);
	}
	return status;
}
