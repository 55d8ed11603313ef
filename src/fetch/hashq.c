/*
 * hashq.c - the worker threads that check chunks (hashq.h).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/file.h"
#include "fetch/hashq.h"

#define MAX_THREADS 64

struct mp_fetch_hashq {
	pthread_mutex_t lock;
	pthread_cond_t work;   /* a job queued, or stopping */
	pthread_cond_t done;   /* a job finished */
	struct mp_fetch_job *todo, *todo_tail, *finished;
	unsigned busy;         /* pushed, not yet popped */
	bool stop;
	const struct mp_seal *seal;
	const uint64_t *bound;
	int fd;
	atomic_int direct_fd;  /* -1: none, or refused once (EINVAL) */
	const char *path;
	void (*wake)(void *);
	void *wake_arg;
	unsigned nthreads;
	pthread_t threads[MAX_THREADS];
	struct mp_bufpool pool;    /* run buffers kept for reuse */
	bool have_pool;
};

struct mp_fetch_job *mp_fetch_job_new(uint64_t first, uint64_t count, uint64_t offset,
				      uint64_t len, int mirror, bool write)
{
	struct mp_fetch_job *j = calloc(1, sizeof *j);

	if (!j)
		return NULL;
	*j = (struct mp_fetch_job){.first = first, .count = count, .offset = offset,
				   .len = len, .mirror = mirror, .write = write};
	j->buf = malloc(len ? (size_t)len : 1);
	j->ok = calloc((size_t)count, 1);
	if (!j->buf || !j->ok) {
		mp_fetch_job_free(j);
		return NULL;
	}
	return j;
}

struct mp_fetch_job *mp_fetch_hashq_job(struct mp_fetch_hashq *q, uint64_t first,
					uint64_t count, uint64_t offset, uint64_t len,
					int mirror, bool write)
{
	struct mp_fetch_job *j;

	if (!q->have_pool || len > q->pool.size)
		return mp_fetch_job_new(first, count, offset, len, mirror, write);
	if (!(j = calloc(1, sizeof *j)))
		return NULL;
	*j = (struct mp_fetch_job){.first = first, .count = count, .offset = offset,
				   .len = len, .mirror = mirror, .write = write};
	j->buf = mp_bufpool_get(&q->pool);
	j->pool = j->buf ? &q->pool : NULL;
	j->ok = calloc((size_t)count, 1);
	if (!j->buf || !j->ok) {
		mp_fetch_job_free(j);
		return NULL;
	}
	return j;
}

void mp_fetch_job_free(struct mp_fetch_job *j)
{
	if (!j)
		return;
	if (j->pool)
		mp_bufpool_put(j->pool, j->buf);
	else
		free(j->buf);
	free(j->ok);
	free(j);
}

void mp_fetch_hashq_direct(struct mp_fetch_hashq *q, int dfd)
{
	atomic_store(&q->direct_fd, dfd);
}

/* Bytes of n at p, for file offset pos, written direct (whole pages from a
 * page boundary); what is left is the caller's to write through fd. */
static size_t write_direct(struct mp_fetch_hashq *q, const unsigned char *p, size_t n,
			   uint64_t pos)
{
	int dfd = atomic_load(&q->direct_fd);
	size_t want = n - n % MP_BUF_ALIGN, done = 0;

	if (dfd < 0 || pos % MP_BUF_ALIGN || (uintptr_t)p % MP_BUF_ALIGN)
		return 0;
	while (done < want) {
		ssize_t w = pwrite(dfd, p + done, want - done, (off_t)(pos + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EINVAL)
			atomic_store(&q->direct_fd, -1);
		if (w <= 0)
			break;
		done += (size_t)w;
		if (done % MP_BUF_ALIGN)
			break; /* off a page boundary: fd writes the rest */
	}
	return done;
}

/* Hash, compare and (for a writing job) write each chunk of j. */
static void check_job(struct mp_fetch_hashq *q, struct mp_fetch_job *j)
{
	for (uint64_t i = 0; i < j->count; i++) {
		uint64_t c = j->first + i;
		uint64_t at = q->bound[c] - j->offset, n = q->bound[c + 1] - q->bound[c];
		unsigned char d[MP_SHA256_LEN];

		mp_sha256_buf(j->buf + at, (size_t)n, d);
		j->ok[i] = mp_seal_digest_ok(q->seal, c, d);
		if (j->ok[i] && j->write && j->rc == MP_OK) {
			size_t sent = write_direct(q, j->buf + at, (size_t)n, q->bound[c]);

			j->rc = mp_pwrite_full(q->fd, j->buf + at + sent, (size_t)n - sent,
					       q->bound[c] + sent, q->path, &j->err);
		}
		if (j->ok[i] && j->rc == MP_OK)
			j->passed++;
		else
			j->failed++;
	}
}

static void *worker(void *arg)
{
	struct mp_fetch_hashq *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct mp_fetch_job *j;

		while (!q->todo && !q->stop)
			pthread_cond_wait(&q->work, &q->lock);
		if (!q->todo)
			break;
		j = q->todo;
		q->todo = j->next;
		if (!q->todo)
			q->todo_tail = NULL;
		pthread_mutex_unlock(&q->lock);
		check_job(q, j);
		pthread_mutex_lock(&q->lock);
		j->next = q->finished;
		q->finished = j;
		pthread_cond_broadcast(&q->done);
		if (q->wake)
			q->wake(q->wake_arg);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

enum mp_err mp_fetch_hashq_start(struct mp_fetch_hashq **out, unsigned threads,
				 const struct mp_seal *seal, const uint64_t *bound, int fd,
				 const char *path, void (*wake)(void *), void *wake_arg,
				 struct mp_error *err)
{
	struct mp_fetch_hashq *q = calloc(1, sizeof *q);

	if (!q)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->done, NULL);
	q->seal = seal;
	q->bound = bound;
	q->fd = fd;
	atomic_init(&q->direct_fd, -1);
	q->path = path;
	q->wake = wake;
	q->wake_arg = wake_arg;
	threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
	for (; q->nthreads < threads; q->nthreads++)
		if (pthread_create(&q->threads[q->nthreads], NULL, worker, q) != 0)
			break;
	*out = q;
	if (q->nthreads == 0) {
		mp_fetch_hashq_stop(q);
		*out = NULL;
		return mp_fail(err, MP_E_NOMEM, "cannot start a hashing thread");
	}
	return MP_OK;
}

enum mp_err mp_fetch_hashq_pool(struct mp_fetch_hashq *q, uint64_t size, unsigned keep,
				struct mp_error *err)
{
	if (q->have_pool)
		return MP_OK;
	if (size > SIZE_MAX / 2 || !mp_bufpool_init(&q->pool, (size_t)size, keep))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	q->have_pool = true;
	return MP_OK;
}

void mp_fetch_hashq_push(struct mp_fetch_hashq *q, struct mp_fetch_job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->todo_tail)
		q->todo_tail->next = j;
	else
		q->todo = j;
	q->todo_tail = j;
	q->busy++;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
}

struct mp_fetch_job *mp_fetch_hashq_pop(struct mp_fetch_hashq *q, bool wait)
{
	struct mp_fetch_job *j;

	pthread_mutex_lock(&q->lock);
	while (wait && !q->finished && q->busy)
		pthread_cond_wait(&q->done, &q->lock);
	j = q->finished;
	if (j) {
		q->finished = j->next;
		q->busy--;
	}
	pthread_mutex_unlock(&q->lock);
	return j;
}

unsigned mp_fetch_hashq_busy(struct mp_fetch_hashq *q)
{
	unsigned n;

	pthread_mutex_lock(&q->lock);
	n = q->busy;
	pthread_mutex_unlock(&q->lock);
	return n;
}

void mp_fetch_hashq_stop(struct mp_fetch_hashq *q)
{
	struct mp_fetch_job *j;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_broadcast(&q->work);
	pthread_mutex_unlock(&q->lock);
	for (unsigned i = 0; i < q->nthreads; i++)
		pthread_join(q->threads[i], NULL);
	while ((j = q->finished)) {
		q->finished = j->next;
		mp_fetch_job_free(j);
	}
	if (q->have_pool)
		mp_bufpool_destroy(&q->pool);
	pthread_cond_destroy(&q->work);
	pthread_cond_destroy(&q->done);
	pthread_mutex_destroy(&q->lock);
	free(q);
}
