/*
 * fuzz_pack.c - libFuzzer target: mp_pack_open() on arbitrary pack bytes.
 *
 * The input is the start of a pack: its 40-byte header and index (the
 * payload is not read without --full, so the target does not make the
 * fuzzer carry megabytes of it).  The target writes the input to a file,
 * extends it with zeros to where the header's data_start plus the seed
 * pack's payload says the pack ends (a sparse file), and writes a manifest
 * that matches what the input claims: the seed pack's manifest with
 * expert_pack.path, size, data_start and index_sha256 replaced by those of
 * this file.  So a mutation of the index is not stopped by the index digest
 * or the size check, and the fuzzer reaches every entry check; the index
 * digest itself is reached when an entry check passes (the digest always
 * matches, which is the point: only the entry checks stand between the
 * fuzzer and an accepted pack).
 *
 * An accepted pack must place every role of every object inside the file
 * and answer every lookup; the target aborts otherwise.
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
#include "pack/kimi/format.h"
#include "pack/pack.h"

/* Set once by LLVMFuzzerInitialize and only read afterwards. */
static json_t *template;       /* the seed pack's manifest */
static uint64_t payload_bytes; /* layers * experts * object_bytes of the seed */
static uint64_t entries;       /* layers * experts * 3 of the seed */
static char work_dir[PATH_MAX];
static char pack_path[PATH_MAX + 16];
static char manifest_path[PATH_MAX + 32];

/* Headers claiming more than this are not extended: the file stays as is. */
#define MAX_EXTEND ((uint64_t)1 << 26)

static void remove_work_dir(void)
{
	unlink(pack_path);
	unlink(manifest_path);
	rmdir(work_dir);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = mp_fuzz_seed_dir();
	char path[PATH_MAX];
	json_error_t jerr;
	json_int_t experts, object_bytes;

	(void)argc;
	(void)argv;
	snprintf(path, sizeof path, "%s/pack.pack.manifest.json", dir);
	template = json_load_file(path, 0, &jerr);
	if (!template ||
	    json_unpack(template, "{s:{s:I}, s:{s:I}}", "model", "num_experts", &experts,
			"expert_pack", "object_bytes", &object_bytes) != 0 ||
	    experts <= 0 || object_bytes <= 0) {
		fprintf(stderr, "fuzz_pack: cannot use %s as the template manifest\n", path);
		exit(2);
	}
	payload_bytes = (uint64_t)(MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1) *
			(uint64_t)experts * (uint64_t)object_bytes;
	entries = (uint64_t)(MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1) * (uint64_t)experts *
		  MP_ROLE_COUNT;
	mp_fuzz_work_dir("fuzz_pack", work_dir, sizeof work_dir, pack_path, sizeof pack_path,
			 manifest_path, sizeof manifest_path);
	atexit(remove_work_dir);
	return 0;
}

/*
 * SHA-256 of the header and of as many whole index entries as the header
 * claims and the file holds: what the loader hashes when the index fits.
 * The file past the input is zeros.
 */
static void index_digest(const uint8_t *data, size_t size, uint64_t file_size,
			 uint64_t index_count, char hex[MP_SHA256_HEX])
{
	static const uint8_t zeros[4096];
	uint64_t avail = file_size >= MP_HEADER_SIZE ? (file_size - MP_HEADER_SIZE) / MP_ENTRY_SIZE : 0;
	uint64_t len = MP_HEADER_SIZE + (index_count < avail ? index_count : avail) * MP_ENTRY_SIZE;
	unsigned char d[32];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		mp_fuzz_bug("EVP sha256 unavailable");
	EVP_DigestUpdate(ctx, data, size < len ? size : (size_t)len);
	for (uint64_t done = size; done < len;) {
		uint64_t n = len - done < sizeof zeros ? len - done : sizeof zeros;
		EVP_DigestUpdate(ctx, zeros, (size_t)n);
		done += n;
	}
	EVP_DigestFinal_ex(ctx, d, NULL);
	EVP_MD_CTX_free(ctx);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static void write_manifest(uint64_t file_size, uint64_t data_start, const char *digest)
{
	json_t *m = json_deep_copy(template);
	json_t *ep = m ? json_object_get(m, "expert_pack") : NULL;

	if (!ep || json_object_set_new(ep, "path", json_string(pack_path)) ||
	    json_object_set_new(ep, "size", json_integer((json_int_t)file_size)) ||
	    json_object_set_new(ep, "index_sha256", json_string(digest)) ||
	    (data_start <= (uint64_t)INT64_MAX &&
	     json_object_set_new(ep, "data_start", json_integer((json_int_t)data_start))) ||
	    json_dump_file(m, manifest_path, JSON_INDENT(1)) != 0)
		mp_fuzz_bug("cannot write %s", manifest_path);
	json_decref(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t index_count = 0, data_start = 0, file_size = size;
	char digest[MP_SHA256_HEX];

	if (size >= MP_HEADER_SIZE) {
		index_count = le64(data + 24);
		data_start = le64(data + 32);
		if (data_start <= MAX_EXTEND && data_start + payload_bytes > file_size)
			file_size = data_start + payload_bytes;
	}
	mp_fuzz_write_file(pack_path, data, size, file_size);
	/*
	 * A wrong index count is refused before the index is read or hashed:
	 * hashing what a huge count claims would only slow the fuzzer down.
	 */
	if (index_count == entries)
		index_digest(data, size, file_size, index_count, digest);
	else
		snprintf(digest, sizeof digest, "%064d", 0);
	write_manifest(file_size, data_start, digest);

	mp_fuzz_open_pack(pack_path, manifest_path);
	return 0;
}
