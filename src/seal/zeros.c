/* zeros.c - the digest of a chunk in a hole of the file (seal_internal.h). */
#include "config.h"

#include "seal/seal_internal.h"

#include <string.h>

void mp_seal_zeros_digest(struct mp_seal_zeros *z, struct mp_sha256 *h, unsigned char *buf,
			  size_t bufsize, uint64_t len, unsigned char out[MP_SHA256_LEN])
{
	unsigned i;

	for (i = 0; i < z->n && z->len[i] != len; i++)
		;
	if (i == z->n) {
		/* a full table gives up the slot the length picks */
		i = z->n < MP_SEAL_ZERO_LENS ? z->n++ : (unsigned)(len % MP_SEAL_ZERO_LENS);
		memset(buf, 0, len < bufsize ? (size_t)len : bufsize);
		for (uint64_t done = 0; done < len;) {
			size_t n = len - done < bufsize ? (size_t)(len - done) : bufsize;

			mp_sha256_update(h, buf, n);
			done += n;
		}
		mp_sha256_final(h, z->d[i]);
		z->len[i] = len;
	}
	memcpy(out, z->d[i], MP_SHA256_LEN);
}
