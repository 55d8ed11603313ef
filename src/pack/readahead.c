/*
 * readahead.c - a filling thread and a ring of buffers (see readahead.h).
 *
 * Slots are filled in ring order by the reader and emptied in the same
 * order by the consumer, so each side only waits on the state of the one
 * slot it needs next.  One mutex guards every slot's state: at 4 MiB a
 * slot, a 2 GB pack is about 520 hand-overs, and an uncontended lock is
 * nothing next to hashing megabytes.
 */
#include "config.h"

#include "pack/readahead.h"

#include "base/file.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Buffers start on a page: whole pages for the kernel to copy into. */
#define RING_ALIGN 4096

enum slot_state { SLOT_EMPTY, SLOT_FULL };

struct slot {
	enum slot_state state;
	unsigned char *buf;
	size_t len;
	uint64_t pos;
	enum mp_err rc;           /* a read error ends the ring at this slot */
	struct mp_error err;
};

struct ring {
	uint64_t start, end;
	const char *what;         /* named by a stop: a path, or NULL */
	mp_ring_fill_fn fill;
	void *fill_arg;
	size_t buf_size;
	unsigned nbufs;
	struct slot *slots;
	pthread_mutex_t lock;
	pthread_cond_t filled, emptied;
	bool stop;                /* the consumer gave up: the reader ends */
};

/* pread() as a filling side: the whole piece, retrying short reads. */
struct file_src {
	int fd;
	const char *what;
};

static enum mp_err read_piece(unsigned char *buf, size_t len, uint64_t pos, void *arg,
			      struct mp_error *err)
{
	const struct file_src *f = arg;

	return mp_pread_full(f->fd, buf, len, pos, f->what, NULL, MP_E_PACK_IO, err);
}

static size_t piece(const struct ring *r, uint64_t pos)
{
	return r->end - pos < r->buf_size ? (size_t)(r->end - pos) : r->buf_size;
}

static void *reader(void *arg)
{
	struct ring *r = arg;
	unsigned i = 0;

	for (uint64_t pos = r->start; pos < r->end; i = (i + 1) % r->nbufs) {
		struct slot *s = &r->slots[i];
		size_t len = piece(r, pos);

		bool stop;

		pthread_mutex_lock(&r->lock);
		while (s->state != SLOT_EMPTY && !r->stop)
			pthread_cond_wait(&r->emptied, &r->lock);
		stop = r->stop;
		pthread_mutex_unlock(&r->lock);
		if (stop)
			return NULL;

		/* the slot is the reader's alone until it is marked full */
		s->pos = pos;
		s->len = len;
		memset(&s->err, 0, sizeof s->err);
		s->rc = r->fill(s->buf, len, pos, r->fill_arg, &s->err);

		pthread_mutex_lock(&r->lock);
		s->state = SLOT_FULL;
		pthread_cond_signal(&r->filled);
		pthread_mutex_unlock(&r->lock);
		if (s->rc != MP_OK)
			return NULL;
		pos += len;
	}
	return NULL;
}

static void report(const struct mp_readahead_opts *o, uint64_t done, uint64_t total)
{
	if (o->progress)
		o->progress(done, total, o->progress_arg);
}

/* A stop asked before the piece at pos is consumed. */
static enum mp_err stop_asked(const struct ring *r, const struct mp_readahead_opts *o,
			      uint64_t pos, struct mp_error *err)
{
	return mp_cancel_check(o->cancel, err, "reading %s at byte %llu",
			       r->what ? r->what : "a file", (unsigned long long)pos);
}

/* Without a thread: read and consume in turn from the first slot. */
static enum mp_err run_inline(struct ring *r, const struct mp_readahead_opts *o,
			      mp_readahead_fn fn, void *arg, struct mp_error *err)
{
	unsigned char *buf = r->slots[0].buf;
	enum mp_err rc;

	for (uint64_t pos = r->start; pos < r->end;) {
		size_t len = piece(r, pos);

		if ((rc = stop_asked(r, o, pos, err)) ||
		    (rc = r->fill(buf, len, pos, r->fill_arg, err)) ||
		    (rc = fn(buf, len, pos, arg, err)))
			return rc;
		pos += len;
		report(o, pos - r->start, r->end - r->start);
	}
	return MP_OK;
}

static enum mp_err run_threaded(struct ring *r, pthread_t thread,
				const struct mp_readahead_opts *o,
				mp_readahead_fn fn, void *arg, struct mp_error *err)
{
	enum mp_err rc = MP_OK;
	unsigned i = 0;

	for (uint64_t pos = r->start; pos < r->end; i = (i + 1) % r->nbufs) {
		struct slot *s = &r->slots[i];

		pthread_mutex_lock(&r->lock);
		while (s->state != SLOT_FULL)
			pthread_cond_wait(&r->filled, &r->lock);
		pthread_mutex_unlock(&r->lock);

		if (s->rc != MP_OK) {
			rc = s->rc;
			if (err)
				*err = s->err;
			break;
		}
		if ((rc = stop_asked(r, o, pos, err)))
			break;
		rc = fn(s->buf, s->len, s->pos, arg, err);
		if (rc != MP_OK)
			break;
		pos += s->len;
		pthread_mutex_lock(&r->lock);
		s->state = SLOT_EMPTY;
		pthread_cond_signal(&r->emptied);
		pthread_mutex_unlock(&r->lock);
		report(o, pos - r->start, r->end - r->start);
	}
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_signal(&r->emptied);
	pthread_mutex_unlock(&r->lock);
	pthread_join(thread, NULL);
	return rc;
}

static enum mp_err ring_run(uint64_t start, uint64_t end, const char *what,
			    const struct mp_readahead_opts *opts,
			    mp_ring_fill_fn fill, void *fill_arg,
			    mp_readahead_fn consume, void *consume_arg,
			    struct mp_error *err)
{
	static const struct mp_readahead_opts none;
	const struct mp_readahead_opts *o = opts ? opts : &none;
	struct ring r = {.start = start, .end = end, .what = what, .fill = fill,
			 .fill_arg = fill_arg};
	unsigned char *mem = NULL;
	enum mp_err rc;
	pthread_t thread;
	bool threaded;

	if (start >= end) {
		report(o, 0, 0);
		return MP_OK;
	}
	r.buf_size = o->buf_size ? o->buf_size : MP_READAHEAD_BUF;
	r.nbufs = o->nbufs >= 2 ? o->nbufs : MP_READAHEAD_NBUFS;
	/* one buffer is enough for a range that fits in it: no thread */
	if (end - start <= r.buf_size)
		r.nbufs = 1;
	r.slots = calloc(r.nbufs, sizeof *r.slots);
	if (!r.slots || r.buf_size > SIZE_MAX / r.nbufs ||
	    posix_memalign((void **)&mem, RING_ALIGN, r.buf_size * r.nbufs) != 0) {
		free(r.slots);
		return mp_fail(err, MP_E_NOMEM, "out of memory for a %u x %zu byte ring",
			       r.nbufs, r.buf_size);
	}
	for (unsigned i = 0; i < r.nbufs; i++)
		r.slots[i].buf = mem + (size_t)i * r.buf_size;

	threaded = r.nbufs > 1 && pthread_mutex_init(&r.lock, NULL) == 0;
	if (threaded && pthread_cond_init(&r.filled, NULL) != 0) {
		pthread_mutex_destroy(&r.lock);
		threaded = false;
	}
	if (threaded && pthread_cond_init(&r.emptied, NULL) != 0) {
		pthread_cond_destroy(&r.filled);
		pthread_mutex_destroy(&r.lock);
		threaded = false;
	}
	if (threaded && pthread_create(&thread, NULL, reader, &r) != 0) {
		pthread_cond_destroy(&r.emptied);
		pthread_cond_destroy(&r.filled);
		pthread_mutex_destroy(&r.lock);
		threaded = false;
	}
	if (threaded) {
		rc = run_threaded(&r, thread, o, consume, consume_arg, err);
		pthread_cond_destroy(&r.emptied);
		pthread_cond_destroy(&r.filled);
		pthread_mutex_destroy(&r.lock);
	} else {
		rc = run_inline(&r, o, consume, consume_arg, err);
	}
	free(mem);
	free(r.slots);
	return rc;
}

enum mp_err mp_ring_run(uint64_t start, uint64_t end,
			const struct mp_readahead_opts *opts,
			mp_ring_fill_fn fill, void *fill_arg,
			mp_readahead_fn consume, void *consume_arg,
			struct mp_error *err)
{
	return ring_run(start, end, NULL, opts, fill, fill_arg, consume, consume_arg, err);
}

enum mp_err mp_readahead(int fd, uint64_t start, uint64_t end, const char *what,
			 const struct mp_readahead_opts *opts,
			 mp_readahead_fn fn, void *arg, struct mp_error *err)
{
	struct file_src f = {.fd = fd, .what = what};

	if (start < end)
		posix_fadvise(fd, (off_t)start, (off_t)(end - start),
			      POSIX_FADV_SEQUENTIAL);
	return ring_run(start, end, what, opts, read_piece, &f, fn, arg, err);
}
