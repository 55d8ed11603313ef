/*
 * digest.h - SHA-256 (OpenSSL EVP) over buffers, streams and whole files.
 */
#ifndef MOEPACK_DIGEST_H
#define MOEPACK_DIGEST_H

#include <stdint.h>
#include <stddef.h>

#include "base/cancel.h"
#include "base/errors.h"
#include "base/progress_fn.h"

#define MP_SHA256_LEN 32
#define MP_SHA256_HEX 65 /* 64 hex digits and a NUL */

/* An incremental SHA-256.  Opaque; one per thread. */
struct mp_sha256;

struct mp_sha256 *mp_sha256_new(void); /* NULL on out-of-memory */
void mp_sha256_update(struct mp_sha256 *h, const void *data, size_t len);
/* Writes the digest and resets h for reuse. */
void mp_sha256_final(struct mp_sha256 *h, unsigned char out[MP_SHA256_LEN]);
void mp_sha256_free(struct mp_sha256 *h);

/* One-shot digest of a buffer. */
void mp_sha256_buf(const void *data, size_t len, unsigned char out[MP_SHA256_LEN]);

/* Lowercase hex of a digest into out[MP_SHA256_HEX]. */
void mp_sha256_hex(const unsigned char d[MP_SHA256_LEN], char out[MP_SHA256_HEX]);

/*
 * MP_E_FULL_DIGEST_MISSING: the whole file's SHA-256 was asked for and the
 * manifest at manifest_path records none (its key absent, or null).  hint
 * is the format's way to one, or to checking every byte another way
 * (struct mp_pack_format's sha256_hint); it ends the message.  Said before
 * any long read: there is nothing to compare the digest with.
 */
enum mp_err mp_fail_no_full_digest(struct mp_error *err, const char *key,
				   const char *manifest_path, const char *hint);

/* True when s is exactly 64 lowercase hex digits. */
int mp_is_sha256_hex(const char *s);

/*
 * Digest bytes [0, size) of fd with large reads, calling progress (if not
 * NULL) as it goes.  A short file or a read error gives MP_E_PACK_IO with a
 * message naming `what` (a path); a stop asked through cancel (may be
 * NULL) MP_E_INTERRUPTED, between reads.
 */
enum mp_err mp_sha256_fd(int fd, uint64_t size, const char *what,
			 mp_progress_fn progress, void *arg, const struct mp_cancel *cancel,
			 unsigned char out[MP_SHA256_LEN], struct mp_error *err);

/*
 * The SHA-256 of a model config file (--config, -o config=): read to its
 * end whatever st_size says, at most 16 MiB.  MP_E_CONFIG_IO.
 */
enum mp_err mp_config_sha256(const char *path, char hex[MP_SHA256_HEX], struct mp_error *err);

#endif
