/*
 * epjob.h - the state of one expert-pack build, shared by its phases
 * (epwrite.c: outputs, index, check, rename; epcopy.c: the copy).  Private
 * to writer/ep*.c.
 */
#ifndef MOEPACK_EPJOB_H
#define MOEPACK_EPJOB_H

#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "writer/expertpack/hash.h"
#include "writer/expertpack/manifest.h"
#include "writer/expertpack/opts.h"
#include "writer/expertpack/plan.h"

struct mp_epw_job {
	struct mp_epw_plan *p;
	const struct mp_epw_opts *o;
	struct mp_epw_result *res;
	struct mp_epw_digests d;
	char *partial;            /* PACK.partial */
	char *lock_path;          /* PACK.lock, held exclusively while building */
	int lock_fd;
	char *pack_real, *partial_real, *source_real, *dir;
	unsigned char *head;      /* header and index: data_start bytes */
	int src_fd, out_fd;
	struct stat out_st;
	unsigned char pack_sha256[MP_SHA256_LEN];
	bool sparse;              /* mkdemo --sparse: no pack_sha256, no source */
	bool resumed;             /* PACK.partial was there: --resume continues it */
	char started_at[MP_EPW_TIME_LEN];
	struct timespec t0;
};

/*
 * Copy every object from the GGUF into PACK.partial (job->out_fd, sized
 * already), comparing first with what a resumed PACK.partial holds; the
 * header and index go in last.  The whole file's digest into
 * job->pack_sha256.  MP_E_INTERRUPTED before any object when a stop was
 * asked (job->o->cancel; the partial synced).
 */
enum mp_err mp_epw_copy(struct mp_epw_job *job, struct mp_error *err);

/*
 * mkdemo --sparse: the pack of plan (its tensors' and slices' digests in
 * *d, d->slice malloc'd and taken over) with its data a hole, checked by
 * mp_ep_open()'s default checks, and its manifest without pack_sha256.
 */
enum mp_err mp_epw_write_sparse(struct mp_epw_plan *p, struct mp_epw_digests *d,
				const struct mp_epw_opts *o, struct mp_epw_result *res,
				struct mp_error *err);

#endif
