/*
 * loaderbench - the reference loader's hot path, for `make bench`.
 *
 *   loaderbench [-t THREADS] [-k SPLITS] [-n OBJECTS] [-s SEED] [-d] [-H] LIST
 *
 * SGLang's expert store, on a GPU cache miss, reads one whole expert object
 * into a page-aligned buffer: `stage_slots` reads at once (THREADS, 16),
 * each object as SPLITS concurrent preads (read_splits: 1 in the published
 * launch, 4 the class default), with O_DIRECT (-d).  This program does
 * exactly that over OBJECTS distinct objects picked at random (SEED) from
 * LIST ("PATH OFFSET LENGTH" per line, one line an object), and prints one
 * line of key=value pairs:
 *
 *   mbps      bytes read / wall time, 10^6 bytes per second
 *   p50_ms, p99_ms, max_ms
 *             the time of each object, from its first pread to its last
 *             byte (and its digest, with -H)
 *   cached_delta
 *             growth of /proc/meminfo's Cached during the run, bytes
 *   sum       a digest of the bytes read, independent of the order the
 *             threads finish in: two runs over the same objects of two
 *             files with the same bytes print the same sum
 *
 * -H hashes each object with SHA-256 in the thread that read it: the
 * ceiling of a reader that checks every byte it gets from storage.
 *
 * Exit status 0, or 1 with one line on stderr (2: bad usage).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_DIRECT */
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "benchutil.h"

#define MAX_THREADS 256u
#define MAX_SPLITS 16u
#define LINE_MAX_LEN 8192

struct object {
	char *path;
	uint64_t offset, length;
	int fd;
};

struct shared {
	struct object *objects;
	size_t count;
	size_t *picks;       /* the objects to read, in order */
	size_t npicks;
	atomic_size_t next;  /* the next pick to take */
	unsigned splits;
	bool hash;
	double *latency;     /* seconds, one a pick */
	atomic_uint_fast64_t bytes, sum;
	atomic_bool failed;
	char err[512];
	pthread_mutex_t err_lock;
};

/* One reader (a stage slot) and its split threads. */
struct reader {
	struct shared *s;
	pthread_t thread;
	pthread_t split_thread[MAX_SPLITS];
	pthread_barrier_t start, end;
	unsigned char *buf;
	size_t pick;         /* the pick being read; SIZE_MAX: stop */
	int split_err[MAX_SPLITS];
};

struct split_arg {
	struct reader *r;
	unsigned index;
};

static void set_error(struct shared *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_error(struct shared *s, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->err_lock);
	if (!atomic_exchange(&s->failed, true)) {
		va_start(ap, fmt);
		vsnprintf(s->err, sizeof s->err, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&s->err_lock);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Read split i of the current pick; 0 or an errno (EIO: a short file). */
static int read_split(struct reader *r, unsigned i)
{
	const struct object *o = &r->s->objects[r->s->picks[r->pick]];
	uint64_t at, n, done = 0;

	part_bounds(o->length, r->s->splits, i, &at, &n);
	/* O_DIRECT wants whole pages: the tail is read past the object */
	n = round_up(n, PAGE);
	while (done < n) {
		ssize_t got = pread(o->fd, r->buf + at + done, n - done,
				    (off_t)(o->offset + at + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return errno;
		if (got == 0)
			return at + done >= o->length ? 0 : EIO;
		done += (uint64_t)got;
	}
	return 0;
}

static void *split_main(void *arg)
{
	struct split_arg *a = arg;
	struct reader *r = a->r;

	for (;;) {
		pthread_barrier_wait(&r->start);
		if (r->pick == SIZE_MAX)
			return NULL;
		r->split_err[a->index] = read_split(r, a->index);
		pthread_barrier_wait(&r->end);
	}
}

/* An order-independent digest of one object's bytes: FNV-1a over words. */
static uint64_t object_sum(const unsigned char *p, uint64_t len, size_t pick_object)
{
	uint64_t h = 1469598103934665603ull ^ pick_object;

	for (uint64_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * 1099511628211ull;
	}
	for (uint64_t i = len / 8 * 8; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static bool sha256(const unsigned char *p, uint64_t len, unsigned char out[32])
{
	unsigned int n = 0;

	return EVP_Digest(p, (size_t)len, out, &n, EVP_sha256(), NULL) == 1;
}

/* One object: every split at once, then the digest under -H. */
static void read_object(struct reader *r)
{
	struct shared *s = r->s;
	size_t obj = s->picks[r->pick];
	const struct object *o = &s->objects[obj];
	unsigned char digest[32];
	double t0 = now();

	pthread_barrier_wait(&r->start);
	r->split_err[0] = read_split(r, 0);
	pthread_barrier_wait(&r->end);
	for (unsigned i = 0; i < s->splits; i++)
		if (r->split_err[i]) {
			set_error(s, "pread %s at %" PRIu64 ": %s", o->path, o->offset,
				  strerror(r->split_err[i]));
			return;
		}
	if (s->hash && !sha256(r->buf, o->length, digest)) {
		set_error(s, "SHA-256 failed");
		return;
	}
	s->latency[r->pick] = now() - t0;
	atomic_fetch_add(&s->bytes, o->length);
	atomic_fetch_add(&s->sum, object_sum(r->buf, o->length, obj));
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct shared *s = r->s;

	for (;;) {
		size_t pick = atomic_fetch_add(&s->next, 1);

		r->pick = pick < s->npicks && !atomic_load(&s->failed) ? pick : SIZE_MAX;
		if (r->pick == SIZE_MAX)
			break;
		read_object(r);
	}
	/* let the split threads see the stop */
	pthread_barrier_wait(&r->start);
	return NULL;
}

static int parse_u64(const char *t, uint64_t *out)
{
	char *end;

	if (*t < '0' || *t > '9')
		return -1;
	errno = 0;
	*out = strtoull(t, &end, 10);
	return errno || *end ? -1 : 0;
}

/* "PATH OFFSET LENGTH": the last two fields are numbers, PATH may hold spaces. */
static int parse_line(char *line, struct object *o)
{
	char *sp2 = strrchr(line, ' '), *sp1;

	if (!sp2)
		return -1;
	*sp2 = '\0';
	sp1 = strrchr(line, ' ');
	if (!sp1)
		return -1;
	*sp1 = '\0';
	if (parse_u64(sp1 + 1, &o->offset) || parse_u64(sp2 + 1, &o->length) ||
	    o->length == 0 || !*line)
		return -1;
	o->path = strdup(line);
	return o->path ? 0 : -1;
}

static int load(const char *path, struct shared *s)
{
	FILE *f = fopen(path, "r");
	char line[LINE_MAX_LEN];
	size_t cap = 0;

	if (!f) {
		fprintf(stderr, "loaderbench: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!*line)
			continue;
		if (s->count == cap) {
			struct object *n;

			cap = cap ? cap * 2 : 256;
			n = realloc(s->objects, cap * sizeof *n);
			if (!n)
				break;
			s->objects = n;
		}
		if (parse_line(line, &s->objects[s->count]) != 0) {
			fprintf(stderr, "loaderbench: %s: bad line %zu\n", path, s->count + 1);
			fclose(f);
			return -1;
		}
		s->count++;
	}
	fclose(f);
	if (s->count == 0) {
		fprintf(stderr, "loaderbench: %s: no objects\n", path);
		return -1;
	}
	return 0;
}

/* Each object its own descriptor (objects of one file share none: cheap). */
static int open_objects(struct shared *s, bool direct)
{
	for (size_t i = 0; i < s->count; i++) {
		struct object *o = &s->objects[i];

		o->fd = open(o->path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
		if (o->fd < 0) {
			fprintf(stderr, "loaderbench: cannot open %s%s: %s\n", o->path,
				direct ? " with O_DIRECT" : "", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* npicks distinct objects, a partial Fisher-Yates shuffle. */
static int pick_objects(struct shared *s, size_t n, uint64_t seed)
{
	size_t *all = malloc(s->count * sizeof *all);

	if (!all)
		return -1;
	for (size_t i = 0; i < s->count; i++)
		all[i] = i;
	if (n > s->count)
		n = s->count;
	for (size_t i = 0; i < n; i++) {
		size_t j = i + (size_t)(splitmix64(&seed) % (s->count - i)), t = all[i];

		all[i] = all[j];
		all[j] = t;
	}
	s->picks = all;
	s->npicks = n;
	return 0;
}

static long long meminfo_cached(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Cached: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int start_reader(struct shared *s, struct reader *r, struct split_arg *args)
{
	uint64_t max = 0;

	for (size_t i = 0; i < s->count; i++)
		if (s->objects[i].length > max)
			max = s->objects[i].length;
	r->s = s;
	if (posix_memalign((void **)&r->buf, PAGE, round_up(max, PAGE) + PAGE) != 0)
		return ENOMEM;
	pthread_barrier_init(&r->start, NULL, s->splits);
	pthread_barrier_init(&r->end, NULL, s->splits);
	for (unsigned i = 1; i < s->splits; i++) {
		args[i] = (struct split_arg){ r, i };
		if (pthread_create(&r->split_thread[i], NULL, split_main, &args[i]) != 0)
			return EAGAIN;
	}
	return pthread_create(&r->thread, NULL, reader_main, r);
}

static void usage(void)
{
	fputs("usage: loaderbench [-t THREADS] [-k SPLITS] [-n OBJECTS] [-s SEED] [-d] [-H] "
	      "LIST\n", stderr);
	exit(2);
}

static uint64_t option(const char *t, uint64_t min, uint64_t max)
{
	uint64_t v;

	if (parse_u64(t, &v) || v < min || v > max)
		usage();
	return v;
}

static void report(struct shared *s, double seconds, long long cached0)
{
	long long cached1 = meminfo_cached();
	double *lat = s->latency;
	size_t n = s->npicks;

	qsort(lat, n, sizeof *lat, cmp_double);
	printf("mbps=%.1f bytes=%" PRIu64 " seconds=%.4f objects=%zu p50_ms=%.2f "
	       "p99_ms=%.2f max_ms=%.2f cached_delta=%lld sum=%016" PRIx64 "\n",
	       (double)atomic_load(&s->bytes) / seconds / 1e6, (uint64_t)atomic_load(&s->bytes),
	       seconds, n, lat[n / 2] * 1e3, lat[(size_t)((double)(n - 1) * 0.99)] * 1e3,
	       lat[n - 1] * 1e3, cached0 < 0 || cached1 < 0 ? -1 : cached1 - cached0,
	       (uint64_t)atomic_load(&s->sum));
}

int main(int argc, char **argv)
{
	struct shared s = { .splits = 1, .err_lock = PTHREAD_MUTEX_INITIALIZER };
	unsigned threads = 16;
	uint64_t objects = 200, seed = 1;
	bool direct = false;
	struct reader *readers;
	struct split_arg (*args)[MAX_SPLITS];
	long long cached0;
	double t0;
	int opt;

	while ((opt = getopt(argc, argv, "t:k:n:s:dH")) != -1) {
		switch (opt) {
		case 't': threads = (unsigned)option(optarg, 1, MAX_THREADS); break;
		case 'k': s.splits = (unsigned)option(optarg, 1, MAX_SPLITS); break;
		case 'n': objects = option(optarg, 1, UINT32_MAX); break;
		case 's': seed = option(optarg, 0, UINT64_MAX); break;
		case 'd': direct = true; break;
		case 'H': s.hash = true; break;
		default: usage();
		}
	}
	if (optind != argc - 1)
		usage();
	if (load(argv[optind], &s) != 0 || open_objects(&s, direct) != 0 ||
	    pick_objects(&s, (size_t)objects, seed) != 0)
		return 1;
	s.latency = calloc(s.npicks, sizeof *s.latency);
	readers = calloc(threads, sizeof *readers);
	args = calloc(threads, sizeof *args);
	if (!s.latency || !readers || !args) {
		fprintf(stderr, "loaderbench: out of memory\n");
		return 1;
	}
	cached0 = meminfo_cached();
	t0 = now();
	for (unsigned i = 0; i < threads; i++)
		if (start_reader(&s, &readers[i], args[i]) != 0) {
			fprintf(stderr, "loaderbench: cannot start reader %u\n", i + 1);
			return 1;
		}
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(readers[i].thread, NULL);
		for (unsigned k = 1; k < s.splits; k++)
			pthread_join(readers[i].split_thread[k], NULL);
	}
	if (atomic_load(&s.failed)) {
		fprintf(stderr, "loaderbench: %s\n", s.err);
		return 1;
	}
	report(&s, now() - t0, cached0);
	return 0;
}
