/* epcopy.c - the objects of an expert pack copied from their GGUF slices. */
#include "config.h"

#include "writer/expertpack/job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "writer/builder.h"

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

/* A stop asked before object `done`: what is written made durable. */
static enum mp_err interrupted(struct mp_epw_job *j, uint64_t done, struct mp_error *err)
{
	if (fsync(j->out_fd) != 0)
		return mp_fail(err, MP_E_PACK_IO, "cannot write %s: %s", j->partial,
			       strerror(errno));
	return mp_fail(err, MP_E_INTERRUPTED, "%s by signal %d after %llu of %llu objects: %s "
		       "is kept, run again with --resume to continue it",
		       mp_err_summary(MP_E_INTERRUPTED), mp_cancel_sig(j->o->cancel),
		       (unsigned long long)done,
		       (unsigned long long)(j->p->layers * j->p->experts), j->partial);
}

/* Every object, the flag looked at before each: an object of the last
 * layer is as far from the end as any other. */
static enum mp_err copy_objects(struct mp_epw_job *j, struct mp_sha256 *h, unsigned char *buf,
				unsigned char *old, struct mp_error *err)
{
	const struct mp_epw_plan *p = j->p;
	uint64_t objects = p->layers * p->experts;
	long ms = mp_build_test_delay_ms();
	enum mp_err rc = MP_OK;

	for (uint64_t object = 0; object < objects && !rc; object++) {
		if (object + 1 == objects)
			mp_build_test_pause(j->o->cancel, "last-object");
		if (mp_cancel_sig(j->o->cancel))
			return interrupted(j, object, err);
		rc = read_object(j, object / p->experts, object % p->experts, buf, err);
		if (!rc)
			rc = put_object(j, object, buf, old, err);
		mp_sha256_update(h, buf, (size_t)p->object_stride);
		if (j->o->progress)
			j->o->progress(object + 1, objects, j->o->progress_arg);
		mp_cancel_sleep_ms(j->o->cancel, ms);
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
		rc = copy_objects(j, h, buf, old, err);
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
