/*
 * fuzz_ep.c - libFuzzer target: mp_pack_open() on arbitrary SGLANG-EXPERTPACK-v1
 * heads.
 *
 * The input is the start of an SGLang expert pack: its 176-byte header and
 * index.  The target writes it to a file, extends it with zeros (sparse) to
 * where the header says the pack ends (data_start + layers x experts x the
 * seed manifest's object_stride), and writes a manifest that agrees with
 * what the input claims: the seed pack's manifest with pack_path,
 * pack_size, index_sha256 and every field the validator compares with the
 * header (index_count, data_start, alignment, the model's counts and the
 * three digests) replaced by this file's.  So the fuzzer is stopped neither
 * by the index digest nor by the header-against-manifest checks and reaches
 * every entry check, which is what stands between hostile bytes and a
 * mount.
 *
 * The pack goes through mp_pack_open(), as the mount and `moepack verify`
 * open it: the magic picks the format.  An accepted pack must place every
 * role of every object inside the file and answer every lookup; the target
 * aborts otherwise.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "fuzz.h"
#include "pack/expertpack/format.h"
#include "pack/pack.h"

/* Set once by LLVMFuzzerInitialize and only read afterwards. */
static json_t *template;       /* the seed pack's manifest */
static uint64_t stride;        /* its object_stride */
static char work_dir[PATH_MAX];
static char pack_path[PATH_MAX + 16];
static char manifest_path[PATH_MAX + 32];

/* Packs claiming more than this are not extended: the file stays as is. */
#define MAX_EXTEND ((uint64_t)1 << 26)
/* Indexes longer than this are not hashed (the digest is then zeros). */
#define MAX_HASHED ((uint64_t)1 << 24)

static void remove_work_dir(void)
{
	unlink(pack_path);
	unlink(manifest_path);
	rmdir(work_dir);
}

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = mp_fuzz_seed_dir();
	char path[PATH_MAX];
	json_error_t jerr;
	json_int_t s;

	(void)argc;
	(void)argv;
	snprintf(path, sizeof path, "%s/ep.pack.manifest.json", dir);
	template = json_load_file(path, 0, &jerr);
	if (!template || json_unpack(template, "{s:I}", "object_stride", &s) != 0 || s <= 0) {
		fprintf(stderr, "fuzz_ep: cannot use %s as the template manifest\n", path);
		exit(2);
	}
	stride = (uint64_t)s;
	mp_fuzz_work_dir("fuzz_ep", work_dir, sizeof work_dir, pack_path, sizeof pack_path,
			 manifest_path, sizeof manifest_path);
	atexit(remove_work_dir);
	return 0;
}

static void hex(const uint8_t *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* SHA-256 of the index's bytes [176, 176 + 328 count), zeros past the input. */
static void index_digest(const uint8_t *data, size_t size, uint64_t count,
			 char out[MP_SHA256_HEX])
{
	static const uint8_t zeros[4096];
	uint64_t end = MP_EP_HEADER_SIZE + count * MP_EP_ENTRY_SIZE;
	unsigned char d[32];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		mp_fuzz_bug("EVP sha256 unavailable");
	if (size > MP_EP_HEADER_SIZE)
		EVP_DigestUpdate(ctx, data + MP_EP_HEADER_SIZE,
				 (size < end ? size : (size_t)end) - MP_EP_HEADER_SIZE);
	for (uint64_t done = size > MP_EP_HEADER_SIZE ? size : MP_EP_HEADER_SIZE; done < end;) {
		uint64_t n = end - done < sizeof zeros ? end - done : sizeof zeros;

		EVP_DigestUpdate(ctx, zeros, (size_t)n);
		done += n;
	}
	EVP_DigestFinal_ex(ctx, d, NULL);
	EVP_MD_CTX_free(ctx);
	hex(d, sizeof d, out);
}

static int set_u64(json_t *o, const char *key, uint64_t v)
{
	/* a count jansson cannot hold stays as the template says */
	return v > (uint64_t)INT64_MAX ? 0 : json_object_set_new(o, key, json_integer((json_int_t)v));
}

/* The seed's manifest made to agree with the input's header. */
static void write_manifest(const uint8_t *h, uint64_t file_size, const char *digest)
{
	char model[MP_SHA256_HEX], source[MP_SHA256_HEX], config[MP_SHA256_HEX];
	json_t *m = json_deep_copy(template);
	json_t *mo = m ? json_object_get(m, "model") : NULL;
	json_t *so = m ? json_object_get(m, "source") : NULL;

	hex(h + 80, 32, model);
	hex(h + 112, 32, source);
	hex(h + 144, 32, config);
	if (!mo || !so || json_object_set_new(m, "pack_path", json_string(pack_path)) ||
	    set_u64(m, "pack_size", file_size) ||
	    json_object_set_new(m, "index_sha256", json_string(digest)) ||
	    set_u64(m, "index_count", le(h + 40, 8)) || set_u64(m, "data_start", le(h + 48, 8)) ||
	    set_u64(m, "alignment", le(h + 56, 8)) || set_u64(mo, "num_layers", le(h + 64, 4)) ||
	    set_u64(mo, "num_routed_experts", le(h + 68, 4)) ||
	    set_u64(mo, "top_k", le(h + 72, 4)) ||
	    json_object_set_new(mo, "model_identity_sha256", json_string(model)) ||
	    json_object_set_new(mo, "config_sha256", json_string(config)) ||
	    json_object_set_new(so, "sha256", json_string(source)) ||
	    json_dump_file(m, manifest_path, JSON_INDENT(1)) != 0)
		mp_fuzz_bug("cannot write %s", manifest_path);
	json_decref(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t no_header[MP_EP_HEADER_SIZE];
	const uint8_t *h = size >= MP_EP_HEADER_SIZE ? data : no_header;
	uint64_t count = le(h + 40, 8), data_start = le(h + 48, 8), file_size = size;
	unsigned __int128 end = (unsigned __int128)le(h + 64, 4) * le(h + 68, 4) * stride +
				data_start;
	char digest[MP_SHA256_HEX];

	if (end <= MAX_EXTEND && end > file_size)
		file_size = (uint64_t)end;
	mp_fuzz_write_file(pack_path, data, size, file_size);
	/* Hashing what a huge count claims would only slow the fuzzer down. */
	if (count <= (MAX_HASHED - MP_EP_HEADER_SIZE) / MP_EP_ENTRY_SIZE)
		index_digest(data, size, count, digest);
	else
		snprintf(digest, sizeof digest, "%064d", 0);
	write_manifest(h, file_size, digest);

	mp_fuzz_open_pack(pack_path, manifest_path);
	return 0;
}
