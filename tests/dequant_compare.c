/*
 * dequant_compare.c - for tests/dequant-clang.test: dequantize the ggml
 * fixtures of tests/data/dequant (q2_k.bin, q3_k.bin) with src/payload/dequant.c as
 * built by whatever compiler compiled this, and compare every float's bits
 * with ggml's own output (q2_k.f32, q3_k.f32).  Prints one line per type
 * and exits 1 when any bit differs.
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
	for (int t = 0; t < 2; t++) {
		const char *name = t ? "q3_k" : "q2_k";
		size_t block = t ? MP_Q3K_BYTES : MP_Q2K_BYTES, nb, nf, differ = 0, nan = 0;
		char file[32];
		unsigned char *raw, *want;
		float *got;

		snprintf(file, sizeof file, "%s.bin", name);
		raw = slurp(argv[1], file, &nb);
		snprintf(file, sizeof file, "%s.f32", name);
		want = slurp(argv[1], file, &nf);
		if (nb % block || nf != nb / block * 256 * 4) {
			fprintf(stderr, "dequant_compare: %s fixtures disagree in size\n", name);
			return 2;
		}
		got = malloc(nf);
		if (t)
			mp_dequant_q3_k(raw, got, nb / block);
		else
			mp_dequant_q2_k(raw, got, nb / block);
		for (size_t i = 0; i < nf / 4; i++) {
			uint32_t a, b;

			memcpy(&a, got + i, 4);
			memcpy(&b, want + 4 * i, 4);
			nan += (b & 0x7fffffffu) > 0x7f800000u;
			if (a != b && differ++ < 3)
				printf("%s value %zu: 0x%08x, ggml 0x%08x\n", name, i, a, b);
		}
		printf("%s: %zu values (%zu NaN), %zu differ\n", name, nf / 4, nan, differ);
		if (differ || !nan)
			status = 1;
		free(raw);
		free(want);
		free(got);
	}
	return status;
}
