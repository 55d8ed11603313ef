/* epcopy.c - the objects of an expert pack copied from their GGUF slices. */
#include "config.h"

#include "writer/epjob.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "writer/build.h"

/* Test hook, as the Kimi build's: milliseconds to sleep after each object,
 * so that a test can interrupt a small build (moepack(1)). */
#define DELAY_ENV "MOEPACK_TEST_BUILD_DELAY_MS"

static void test_delay(long ms)
{
	struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};

	while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR &&
	       !mp_gguf_build_interrupted())
		;
}

/* Object (layer, expert) as the builder lays it out: three slices, zeros. */
static enum mp_err read_object(struct mp_epw_job *j, uint64_t layer, uint64_t expert,
			       unsigned char *buf, struct mp_error *err)
{
	const struct mp_epw_plan *p = j->p;
	enum mp_err rc = MP_OK;

	memset(buf + MP_EP_ROLES * p->role_bytes, 0,
	       p->object_stride - MP_EP_ROLES * p->role_bytes);
	for (unsigned r = 0; r < MP_EP_ROLES && !rc; r++) {
		const struct mp_epw_tensor *t = mp_epw_routed(p, layer, r);

		rc = mp_pread_full(j->src_fd, buf + r * p->role_bytes, p->role_bytes,
				   t->offset + expert * p->role_bytes, "GGUF file", p->gguf_path,
				   MP_E_GGUF_IO, err);
	}
	return rc;
}

/* One object into the partial, unless a resumed partial has it right. */
static enum mp_err put_object(struct mp_epw_job *j, uint64_t object, unsigned char *buf,
			      unsigned char *old, struct mp_error *err)
{
	uint64_t at = j->p->data_start + object * j->p->object_stride;
	size_t n = (size_t)j->p->object_stride;

	if (old && mp_pread_all(j->out_fd, old, n, at, NULL) == 0 && memcmp(old, buf, n) == 0) {
		j->res->objects_kept++;
		return MP_OK;
	}
	j->res->objects_copied++;
	j->res->bytes_copied += MP_EP_ROLES * j->p->role_bytes;
	return mp_pwrite_full(j->out_fd, buf, n, at, j->partial, err);
}

static enum mp_err interrupted(struct mp_epw_job *j, uint64_t done, struct mp_error *err)
{
	if (fsync(j->out_fd) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", j->partial,
			       strerror(errno));
	return mp_fail(err, MP_E_INTERRUPTED, "%s by signal %d after %llu of %llu layers: %s "
		       "is kept, run again with --resume to continue it",
		       mp_err_summary(MP_E_INTERRUPTED), mp_gguf_build_interrupted(),
		       (unsigned long long)done, (unsigned long long)j->p->layers, j->partial);
}

static enum mp_err copy_layers(struct mp_epw_job *j, struct mp_sha256 *h, unsigned char *buf,
			       unsigned char *old, struct mp_error *err)
{
	const struct mp_epw_plan *p = j->p;
	const char *delay = getenv(DELAY_ENV);
	long ms = delay ? strtol(delay, NULL, 10) : 0;
	enum mp_err rc = MP_OK;

	for (uint64_t l = 0; l < p->layers && !rc; l++) {
		if (mp_gguf_build_interrupted())
			return interrupted(j, l, err);
		for (uint64_t e = 0; e < p->experts && !rc; e++) {
			uint64_t object = l * p->experts + e;

			rc = read_object(j, l, e, buf, err);
			if (!rc)
				rc = put_object(j, object, buf, old, err);
			mp_sha256_update(h, buf, (size_t)p->object_stride);
			if (j->o->progress)
				j->o->progress(object + 1, p->layers * p->experts, j->o->progress_arg);
			test_delay(ms);
		}
	}
	return rc;
}

enum mp_err mp_epw_copy(struct mp_epw_job *j, struct mp_error *err)
{
	size_t n = (size_t)j->p->object_stride;
	unsigned char *buf = malloc(n), *old = j->o->resume ? malloc(n) : NULL;
	struct mp_sha256 *h = mp_sha256_new();
	enum mp_err rc = MP_OK;

	if (!buf || (j->o->resume && !old) || !h)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
	if (!rc)
		mp_sha256_update(h, j->head, (size_t)j->p->data_start);
	if (!rc)
		rc = copy_layers(j, h, buf, old, err);
	/* the index last, as the reference writes it (with the header) */
	if (!rc)
		rc = mp_pwrite_full(j->out_fd, j->head, (size_t)j->p->data_start, 0, j->partial, err);
	if (!rc && fsync(j->out_fd) != 0)
		rc = mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", j->partial, strerror(errno));
	if (!rc)
		mp_sha256_final(h, j->pack_sha256);
	mp_sha256_free(h);
	free(buf);
	free(old);
	return rc;
}
