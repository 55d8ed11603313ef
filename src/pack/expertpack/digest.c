/*
 * epdigest.c - the index digest on a second thread.
 *
 * Hashing the index is a third of a validation's time at full geometry
 * (10.8 MB of entries): it runs beside the checks, which need it only at
 * the index_sha256 check, and the two cores of a small machine share the
 * work.  The thread reads the index itself (pread() on the shared
 * descriptor) with its own buffer; it is always joined before the pack is
 * freed.  When no thread can be started the digest is made at once.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "pack/expertpack/check.h"

#define DIGEST_CHUNK (1u << 20)

struct mp_epdigest {
	pthread_t tid;
	bool threaded;
	int fd;
	uint64_t start, end;
	const char *path;
	unsigned char d[MP_SHA256_LEN];
	enum mp_err rc;
	struct mp_error err;
};

static void *digest(void *arg)
{
	struct mp_epdigest *j = arg;
	struct mp_sha256 *h = mp_sha256_new();
	unsigned char *buf = malloc(DIGEST_CHUNK);

	j->rc = h && buf ? MP_OK : mp_fail(&j->err, MP_E_NOMEM, "out of memory");
	for (uint64_t pos = j->start; pos < j->end && !j->rc; pos += DIGEST_CHUNK) {
		size_t n = j->end - pos < DIGEST_CHUNK ? (size_t)(j->end - pos) : DIGEST_CHUNK;

		j->rc = mp_pread_full(j->fd, buf, n, pos, "pack", j->path, MP_E_PACK_IO, &j->err);
		if (!j->rc)
			mp_sha256_update(h, buf, n);
	}
	if (!j->rc)
		mp_sha256_final(h, j->d);
	mp_sha256_free(h);
	free(buf);
	return NULL;
}

enum mp_err mp_epcheck_digest_start(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_epdigest *j = calloc(1, sizeof *j);

	if (!j)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	*j = (struct mp_epdigest){.fd = c->ep->file.fd, .start = MP_EP_HEADER_SIZE,
				  .end = MP_EP_HEADER_SIZE + c->ep->index_count * MP_EP_ENTRY_SIZE,
				  .path = c->ep->file.path};
	c->digest = j;
	j->threaded = pthread_create(&j->tid, NULL, digest, j) == 0;
	if (!j->threaded)
		digest(j);
	return MP_OK;
}

enum mp_err mp_epcheck_digest_wait(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_epdigest *j = c->digest;
	enum mp_err rc;

	if (!j)
		return MP_OK;
	if (j->threaded)
		pthread_join(j->tid, NULL);
	rc = j->rc;
	if (rc && err)
		*err = j->err;
	else if (!rc)
		memcpy(c->ep->index_digest, j->d, sizeof j->d);
	free(j);
	c->digest = NULL;
	return rc;
}
