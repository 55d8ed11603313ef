/*
 * hashq.h - chunks checked against the seal on worker threads, so that
 * hashing never holds up the transfers.
 *
 * The main loop hands over a job: a buffer holding a run of whole chunks
 * (from a mirror, or read back from the local file on resume).  A worker
 * hashes each chunk, compares it with the seal, and, for a job that
 * writes, pwrite()s each chunk that passed at its offset of the partial
 * pack: no byte reaches the file before its chunk's digest matched.  The
 * finished job comes back through a queue the main loop drains; wake()
 * is called after each one is queued (the fetch wakes curl's poll).
 */
#ifndef MOEPACK_FETCH_HASHQ_H
#define MOEPACK_FETCH_HASHQ_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bufpool.h"
#include "base/errors.h"
#include "seal/seal.h"

struct mp_fetch_job {
	struct mp_fetch_job *next;
	uint64_t first, count;     /* chunks */
	uint64_t offset, len;      /* bytes of the file buf holds */
	unsigned char *buf;        /* owned by the job */
	struct mp_bufpool *pool;   /* buf's, given back to it; NULL: malloc'd */
	int mirror;                /* where it came from; -1: the local file */
	bool write;                /* write the chunks that pass */
	unsigned char *ok;         /* count flags, set by the worker */
	uint64_t passed, failed;
	enum mp_err rc;            /* a write that failed */
	struct mp_error err;
};

struct mp_fetch_hashq;

/* A job for chunks [first, first + count) at bytes [offset, offset+len),
 * with a buffer of len bytes; NULL when out of memory. */
struct mp_fetch_job *mp_fetch_job_new(uint64_t first, uint64_t count, uint64_t offset,
				      uint64_t len, int mirror, bool write);
void mp_fetch_job_free(struct mp_fetch_job *j);

/*
 * Start `threads` workers (at least 1) checking against seal, chunk c
 * being bytes [bound[c], bound[c + 1]); writing to fd (path in
 * messages).  seal, bound and fd must outlive the queue.
 */
enum mp_err mp_fetch_hashq_start(struct mp_fetch_hashq **out, unsigned threads,
				 const struct mp_seal *seal, const uint64_t *bound, int fd,
				 const char *path, void (*wake)(void *), void *wake_arg,
				 struct mp_error *err);
/*
 * Keep the buffers of jobs made by mp_fetch_hashq_job() for reuse: up to
 * `keep` free buffers of `size` bytes (a fresh 16 MiB buffer costs a page
 * fault and a cleared page for every 4 KiB of it).  Call once, before
 * such jobs; the buffers are freed by mp_fetch_hashq_stop().  MP_E_NOMEM.
 */
enum mp_err mp_fetch_hashq_pool(struct mp_fetch_hashq *q, uint64_t size, unsigned keep,
				struct mp_error *err);
/*
 * Write through dfd, the partial pack opened again with O_DIRECT, where
 * a chunk starts on a page boundary of the file and of its buffer: its
 * whole pages go direct, its tail (and any chunk off a boundary)
 * through fd.  A direct write the file system refuses (EINVAL) turns
 * direct writing off and the chunk is written through fd; any other
 * failure is fd's to report.  dfd -1: every write through fd.  Call
 * before the first job that writes; dfd must outlive the queue.
 */
void mp_fetch_hashq_direct(struct mp_fetch_hashq *q, int dfd);
/* mp_fetch_job_new(), its buffer from the queue's pool when it has one
 * and len fits. */
struct mp_fetch_job *mp_fetch_hashq_job(struct mp_fetch_hashq *q, uint64_t first,
					uint64_t count, uint64_t offset, uint64_t len,
					int mirror, bool write);
/* Queue a job (the queue owns it until it comes back). */
void mp_fetch_hashq_push(struct mp_fetch_hashq *q, struct mp_fetch_job *j);
/* A finished job, or NULL when none is; wait: block until one is, NULL
 * only when nothing is queued or being hashed. */
struct mp_fetch_job *mp_fetch_hashq_pop(struct mp_fetch_hashq *q, bool wait);
/* Jobs queued or being hashed, not yet popped. */
unsigned mp_fetch_hashq_busy(struct mp_fetch_hashq *q);
/* Stop the workers (after the jobs queued) and free what is left. */
void mp_fetch_hashq_stop(struct mp_fetch_hashq *q);

#endif
