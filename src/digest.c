/* digest.c - SHA-256 through OpenSSL EVP (SHA-NI where the CPU has it). */
#include "config.h"

#include "digest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/evp.h>

struct mp_sha256 {
	EVP_MD_CTX *ctx;
};

struct mp_sha256 *mp_sha256_new(void)
{
	struct mp_sha256 *h = malloc(sizeof *h);
	if (!h)
		return NULL;
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(h->ctx);
		free(h);
		return NULL;
	}
	return h;
}

void mp_sha256_update(struct mp_sha256 *h, const void *data, size_t len)
{
	EVP_DigestUpdate(h->ctx, data, len);
}

void mp_sha256_final(struct mp_sha256 *h, unsigned char out[MP_SHA256_LEN])
{
	unsigned int n = MP_SHA256_LEN;
	EVP_DigestFinal_ex(h->ctx, out, &n);
	EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL);
}

void mp_sha256_free(struct mp_sha256 *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

void mp_sha256_buf(const void *data, size_t len, unsigned char out[MP_SHA256_LEN])
{
	unsigned int n = MP_SHA256_LEN;
	EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}

void mp_sha256_hex(const unsigned char d[MP_SHA256_LEN], char out[MP_SHA256_HEX])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < MP_SHA256_LEN; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * MP_SHA256_LEN] = '\0';
}

int mp_is_sha256_hex(const char *s)
{
	size_t i;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == 2 * MP_SHA256_LEN;
}

/*
 * 8 MiB reads: large enough that syscall cost vanishes next to hashing,
 * small enough to stay in L2/L3-friendly territory.
 */
#define DIGEST_CHUNK (8u << 20)

enum mp_err mp_sha256_fd(int fd, uint64_t size, const char *what,
			 mp_progress_fn progress, void *arg,
			 unsigned char out[MP_SHA256_LEN], struct mp_error *err)
{
	struct mp_sha256 *h = mp_sha256_new();
	unsigned char *buf = malloc(DIGEST_CHUNK);
	enum mp_err rc = MP_OK;
	uint64_t done = 0;

	if (!h || !buf) {
		rc = mp_fail(err, MP_E_NOMEM, "out of memory hashing %s", what);
		goto out;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	while (done < size) {
		size_t want = size - done < DIGEST_CHUNK ? (size_t)(size - done) : DIGEST_CHUNK;
		ssize_t got = pread(fd, buf, want, (off_t)done);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = mp_fail(err, MP_E_PACK_IO, "cannot read %s at byte %llu: %s", what,
				     (unsigned long long)done, strerror(errno));
			goto out;
		}
		if (got == 0) {
			rc = mp_fail(err, MP_E_PACK_IO,
				     "cannot read %s: file ends at byte %llu, expected %llu",
				     what, (unsigned long long)done, (unsigned long long)size);
			goto out;
		}
		mp_sha256_update(h, buf, (size_t)got);
		done += (uint64_t)got;
		if (progress)
			progress(done, size, arg);
	}
	if (progress && size == 0)
		progress(0, 0, arg);
	mp_sha256_final(h, out);
out:
	free(buf);
	mp_sha256_free(h);
	return rc;
}
