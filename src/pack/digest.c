/* digest.c - SHA-256 through OpenSSL EVP (SHA-NI where the CPU has it). */
#include "config.h"

#include "pack/digest.h"

#include "base/file.h"
#include "pack/readahead.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

enum mp_err mp_fail_no_full_digest(struct mp_error *err, const char *key,
				   const char *manifest_path, const char *hint)
{
	return mp_fail(err, MP_E_FULL_DIGEST_MISSING,
		       "full SHA-256 requested but the manifest has no whole-file digest: no "
		       "%s in %s, so there is nothing to check the pack against (%s)",
		       key, manifest_path, hint);
}

static enum mp_err hash_piece(const unsigned char *buf, size_t len, uint64_t pos,
			      void *arg, struct mp_error *err)
{
	mp_sha256_update(arg, buf, len);
	return MP_OK;
}

/* The read goes on a second thread (readahead.h): the wall time is the
 * hash's alone. */
enum mp_err mp_sha256_fd(int fd, uint64_t size, const char *what,
			 mp_progress_fn progress, void *arg, const struct mp_cancel *cancel,
			 unsigned char out[MP_SHA256_LEN], struct mp_error *err)
{
	struct mp_readahead_opts ro = {.progress = progress, .progress_arg = arg,
				       .cancel = cancel};
	struct mp_sha256 *h = mp_sha256_new();
	enum mp_err rc;

	if (!h)
		return mp_fail(err, MP_E_NOMEM, "out of memory hashing %s", what);
	rc = mp_readahead(fd, 0, size, what, &ro, hash_piece, h, err);
	if (rc == MP_OK)
		mp_sha256_final(h, out);
	mp_sha256_free(h);
	return rc;
}

/*
 * A config file is small, but its size cannot be trusted: a sysfs or procfs
 * file reports 4096 bytes whatever it holds.  So it is read to end of file,
 * whatever st_size says, and hashed as read; more than MP_CONFIG_MAX bytes
 * is not a model config.
 */
#define MP_CONFIG_MAX (16u << 20)

enum mp_err mp_config_sha256(const char *path, char hex[MP_SHA256_HEX], struct mp_error *err)
{
	unsigned char d[MP_SHA256_LEN], buf[64 * 1024];
	struct mp_sha256 *h;
	uint64_t total = 0;
	struct stat st;
	enum mp_err rc = MP_OK;
	int fd;

	if ((rc = mp_open_regular(path, "config file", MP_E_CONFIG_IO, &fd, &st, err)))
		return rc;
	h = mp_sha256_new();
	if (!h) {
		close(fd);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	for (int e = 0; e != MP_READ_EOF;) {
		size_t got;

		e = mp_pread_all(fd, buf, sizeof buf, total, &got);
		if (e > 0) {
			rc = mp_fail(err, MP_E_CONFIG_IO, "cannot read config file %s: %s", path,
				     strerror(e));
			break;
		}
		total += (uint64_t)got;
		if (total > MP_CONFIG_MAX) {
			rc = mp_fail(err, MP_E_CONFIG_IO,
				     "cannot read config file %s: larger than %u MiB", path,
				     MP_CONFIG_MAX >> 20);
			break;
		}
		mp_sha256_update(h, buf, (size_t)got);
	}
	close(fd);
	mp_sha256_final(h, d);
	mp_sha256_free(h);
	if (!rc)
		mp_sha256_hex(d, hex);
	return rc;
}
