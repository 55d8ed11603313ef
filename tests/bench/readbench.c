/*
 * readbench - the measuring half of `make bench`.
 *
 * One program for both sides of every comparison: run.sh hands it the same
 * list of byte ranges once as files of a moepackfs mount and once as ranges
 * of the pack file itself, so the only difference between the two figures
 * is the filesystem in between.
 *
 *   readbench seq [-b BYTES] LIST
 *   readbench odirect [-t READERS] [-p PARTS] [-n OBJECTS] [-s SEED] [-d] LIST
 *   readbench mmap LIST
 *   readbench run [-n RUNS] [-a SHELL-CMD] [-O FILE] -- COMMAND [ARG...]
 *
 * LIST holds one range per line, "PATH OFFSET LENGTH"; PATH may contain
 * spaces because the last two fields are the numbers.  Every mode prints a
 * single line of key=value pairs on stdout and exits 0, or prints one line
 * on stderr and exits 1 (2 for bad usage).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_DIRECT, wait4 */
#endif

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

#define MiB (1024u * 1024u)
#define ERR_MAX 512

struct rb_error {
	char msg[ERR_MAX];
};

static int fail(struct rb_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct rb_error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

struct range {
	char *path;
	uint64_t offset;
	uint64_t length;
};

struct range_list {
	struct range *ranges;
	size_t count;
};

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void free_ranges(struct range_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		free(list->ranges[i].path);
	free(list->ranges);
	list->ranges = NULL;
	list->count = 0;
}

/* Cut the last whitespace-separated field off line; NULL if there is none. */
static char *pop_field(char *line)
{
	size_t len = strlen(line);

	while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t'))
		line[--len] = '\0';
	while (len > 0 && line[len - 1] != ' ' && line[len - 1] != '\t')
		len--;
	if (line[len] == '\0')
		return NULL;
	return line + len;
}

static int parse_u64(const char *text, uint64_t *out)
{
	char *end;

	if (text == NULL || *text < '0' || *text > '9')
		return -1;
	errno = 0;
	unsigned long long value = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = value;
	return 0;
}

static int parse_range_line(char *line, struct range *out)
{
	char *length = pop_field(line);

	if (length == NULL)
		return -1;
	length[-1] = '\0';
	char *offset = pop_field(line);
	if (offset == NULL || offset == line)
		return -1;
	offset[-1] = '\0';
	if (parse_u64(length, &out->length) != 0 || parse_u64(offset, &out->offset) != 0)
		return -1;
	size_t path_len = strlen(line);
	while (path_len > 0 && (line[path_len - 1] == ' ' || line[path_len - 1] == '\t'))
		line[--path_len] = '\0';
	if (path_len == 0 || out->length == 0)
		return -1;
	out->path = strdup(line);
	return out->path == NULL ? -1 : 0;
}

static int load_ranges(const char *list_path, struct range_list *list, struct rb_error *err)
{
	FILE *in = fopen(list_path, "r");
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t got;
	unsigned long lineno = 0;

	if (in == NULL)
		return fail(err, "cannot open range list %s: %s", list_path, strerror(errno));
	list->ranges = NULL;
	list->count = 0;
	while ((got = getline(&line, &cap, in)) >= 0) {
		lineno++;
		if (got > 0 && line[got - 1] == '\n')
			line[got - 1] = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
		if (list->count == alloc) {
			size_t grown = alloc ? alloc * 2 : 256;
			struct range *bigger = realloc(list->ranges, grown * sizeof(*bigger));
			if (bigger == NULL) {
				fail(err, "out of memory reading %s", list_path);
				goto bad;
			}
			list->ranges = bigger;
			alloc = grown;
		}
		if (parse_range_line(line, &list->ranges[list->count]) != 0) {
			fail(err, "%s:%lu: expected \"PATH OFFSET LENGTH\" with LENGTH > 0",
			     list_path, lineno);
			goto bad;
		}
		list->count++;
	}
	if (ferror(in)) {
		fail(err, "cannot read range list %s: %s", list_path, strerror(errno));
		goto bad;
	}
	free(line);
	fclose(in);
	if (list->count == 0)
		return fail(err, "range list %s is empty", list_path);
	return 0;
bad:
	free(line);
	fclose(in);
	free_ranges(list);
	return -1;
}

static uint64_t total_length(const struct range_list *list)
{
	uint64_t total = 0;

	for (size_t i = 0; i < list->count; i++)
		total += list->ranges[i].length;
	return total;
}

/* Read exactly len bytes at offset; a file shorter than its range is an error. */
static int pread_full(int fd, void *buf, uint64_t len, uint64_t offset, const char *path,
		      struct rb_error *err)
{
	uint64_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(err, "pread %s at %" PRIu64 ": %s", path, offset + done,
				    strerror(errno));
		if (n == 0)
			return fail(err, "short read: %s ends at %" PRIu64 ", before its range does",
				    path, offset + done);
		done += (uint64_t)n;
	}
	return 0;
}

static void print_rate(const char *mode, uint64_t bytes, double seconds)
{
	printf("mode=%s bytes=%" PRIu64 " seconds=%.6f MBps=%.1f", mode, bytes, seconds,
	       seconds > 0 ? (double)bytes / 1e6 / seconds : 0.0);
}

/* --- seq: one reader, block-sized preads through every range in order --- */

static int run_seq(const struct range_list *list, uint64_t block, struct rb_error *err)
{
	void *buf = NULL;
	int rc = 0;

	if (posix_memalign(&buf, PAGE, round_up(block, PAGE)) != 0)
		return fail(err, "out of memory for a %" PRIu64 "-byte buffer", block);
	double start = now_seconds();
	for (size_t i = 0; i < list->count && rc == 0; i++) {
		const struct range *r = &list->ranges[i];
		int fd = open(r->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = fail(err, "cannot open %s: %s", r->path, strerror(errno));
			break;
		}
		for (uint64_t pos = 0; pos < r->length && rc == 0; pos += block) {
			uint64_t want = r->length - pos < block ? r->length - pos : block;
			rc = pread_full(fd, buf, want, r->offset + pos, r->path, err);
		}
		close(fd);
	}
	double seconds = now_seconds() - start;
	free(buf);
	if (rc != 0)
		return rc;
	print_rate("seq", total_length(list), seconds);
	printf(" block=%" PRIu64 " ranges=%zu\n", block, list->count);
	return 0;
}

/* --- odirect: SGLang loader style, each object read as P concurrent parts --- */

/*
 * A reader is a group of `parts` threads that load one object together, the
 * way the loader splits an expert into concurrent preads and waits for all of
 * them before moving on.  Every thread of a group draws the same sequence of
 * objects from the same seed, so they agree on the object without talking;
 * the group's barrier keeps them on the same one.
 */
struct od_shared {
	const struct range_list *list;
	const int *fds;           /* one per range */
	unsigned parts;
	uint64_t objects_per_reader;
	uint64_t seed;
	bool direct;
	/* Threads wait here until main has started all of them (go) or
	 * could not (abort): a missing thread would hang its group. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool go, abort;
};

struct od_thread {
	struct od_shared *shared;
	pthread_barrier_t *group;
	unsigned reader;
	unsigned part;
	pthread_t thread;
	uint64_t bytes;
	bool failed;
	struct rb_error err;
};

static void *od_worker(void *arg)
{
	struct od_thread *t = arg;
	struct od_shared *s = t->shared;
	uint64_t rng = s->seed ^ (0x5851f42d4c957f2dull * (t->reader + 1));
	uint64_t max_part = 0, begin, len;
	void *buf = NULL;

	for (size_t i = 0; i < s->list->count; i++) {
		part_bounds(s->list->ranges[i].length, s->parts, t->part, &begin, &len);
		if (len > max_part)
			max_part = len;
	}
	if (posix_memalign(&buf, PAGE, round_up(max_part, PAGE) + PAGE) != 0) {
		t->failed = true;
		fail(&t->err, "out of memory for a %" PRIu64 "-byte buffer", max_part);
	}
	pthread_mutex_lock(&s->lock);
	while (!s->go && !s->abort)
		pthread_cond_wait(&s->wake, &s->lock);
	bool abort = s->abort;
	pthread_mutex_unlock(&s->lock);
	for (uint64_t n = 0; !abort && n < s->objects_per_reader; n++) {
		size_t pick = (size_t)(splitmix64(&rng) % s->list->count);
		const struct range *r = &s->list->ranges[pick];

		/* A failed thread keeps meeting its group so the others finish. */
		pthread_barrier_wait(t->group);
		if (t->failed)
			continue;
		part_bounds(r->length, s->parts, t->part, &begin, &len);
		if (len == 0)
			continue;
		/* O_DIRECT wants whole pages; a range's tail is rounded up, the
		 * extra bytes come from past the range and are not counted. */
		uint64_t ask = s->direct ? round_up(len, PAGE) : len;
		uint64_t done = 0;
		while (done < len) {
			ssize_t got = pread(s->fds[pick], (char *)buf + done, ask - done,
					    (off_t)(r->offset + begin + done));
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				t->failed = true;
				fail(&t->err, "pread %s at %" PRIu64 ": %s", r->path,
				     r->offset + begin + done,
				     got < 0 ? strerror(errno) : "unexpected end of file");
				break;
			}
			done += (uint64_t)got;
		}
		t->bytes += done < len ? done : len;
	}
	free(buf);
	return NULL;
}

static int cmp_range_path(const void *a, const void *b)
{
	const struct range *x = *(const struct range *const *)a;
	const struct range *y = *(const struct range *const *)b;

	return strcmp(x->path, y->path);
}

/*
 * One descriptor per distinct path (the native list names the pack hundreds
 * of times): by_range[i] is range i's descriptor, unique[] owns them.
 */
struct fd_table {
	int *by_range;
	int *unique;
	size_t nunique;
};

static void close_all(struct fd_table *fds)
{
	for (size_t i = 0; i < fds->nunique; i++)
		close(fds->unique[i]);
	free(fds->by_range);
	free(fds->unique);
	memset(fds, 0, sizeof(*fds));
}

static int open_all(const struct range_list *list, int flags, struct fd_table *fds,
		    struct rb_error *err)
{
	const struct range **by_path = malloc(list->count * sizeof(*by_path));

	fds->by_range = malloc(list->count * sizeof(*fds->by_range));
	fds->unique = malloc(list->count * sizeof(*fds->unique));
	fds->nunique = 0;
	if (by_path == NULL || fds->by_range == NULL || fds->unique == NULL) {
		free(by_path);
		close_all(fds);
		return fail(err, "out of memory");
	}
	for (size_t i = 0; i < list->count; i++)
		by_path[i] = &list->ranges[i];
	qsort(by_path, list->count, sizeof(*by_path), cmp_range_path);
	for (size_t k = 0; k < list->count; k++) {
		const struct range *r = by_path[k];
		size_t i = (size_t)(r - list->ranges);
		if (k > 0 && strcmp(r->path, by_path[k - 1]->path) == 0) {
			fds->by_range[i] = fds->by_range[by_path[k - 1] - list->ranges];
			continue;
		}
		int fd = open(r->path, flags | O_CLOEXEC);
		if (fd < 0) {
			fail(err, "cannot open %s%s: %s", r->path,
			     (flags & O_DIRECT) ? " with O_DIRECT" : "", strerror(errno));
			free(by_path);
			close_all(fds);
			return -1;
		}
		fds->by_range[i] = fd;
		fds->unique[fds->nunique++] = fd;
	}
	free(by_path);
	return 0;
}

static void release_threads(struct od_shared *shared, bool go)
{
	pthread_mutex_lock(&shared->lock);
	if (go)
		shared->go = true;
	else
		shared->abort = true;
	pthread_cond_broadcast(&shared->wake);
	pthread_mutex_unlock(&shared->lock);
}

static int run_odirect(const struct range_list *list, unsigned readers, unsigned parts,
		       uint64_t objects, uint64_t seed, bool direct, struct rb_error *err)
{
	size_t nthreads = (size_t)readers * parts, started = 0;
	struct fd_table fds;
	pthread_barrier_t *groups = calloc(readers, sizeof(*groups));
	struct od_thread *threads = calloc(nthreads, sizeof(*threads));
	struct od_shared shared = {
		.list = list, .parts = parts, .objects_per_reader = objects,
		.seed = seed, .direct = direct,
		.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
	};
	int rc = 0;

	if (groups == NULL || threads == NULL) {
		free(groups);
		free(threads);
		return fail(err, "out of memory for %zu threads", nthreads);
	}
	if (open_all(list, O_RDONLY | (direct ? O_DIRECT : 0), &fds, err) != 0) {
		free(groups);
		free(threads);
		return -1;
	}
	shared.fds = fds.by_range;
	for (unsigned g = 0; g < readers; g++)
		pthread_barrier_init(&groups[g], NULL, parts);
	for (; started < nthreads; started++) {
		struct od_thread *t = &threads[started];
		t->shared = &shared;
		t->reader = (unsigned)(started / parts);
		t->part = (unsigned)(started % parts);
		t->group = &groups[started / parts];
		int e = pthread_create(&t->thread, NULL, od_worker, t);
		if (e != 0) {
			rc = fail(err, "cannot start thread %zu of %zu: %s", started + 1,
				  nthreads, strerror(e));
			break;
		}
	}
	double t0 = now_seconds();
	release_threads(&shared, rc == 0);
	uint64_t bytes = 0;
	for (size_t i = 0; i < started; i++) {
		pthread_join(threads[i].thread, NULL);
		bytes += threads[i].bytes;
	}
	double seconds = now_seconds() - t0;
	for (size_t i = 0; i < started && rc == 0; i++)
		if (threads[i].failed) {
			*err = threads[i].err;
			rc = -1;
		}
	for (unsigned g = 0; g < readers; g++)
		pthread_barrier_destroy(&groups[g]);
	if (rc == 0) {
		print_rate(direct ? "odirect" : "buffered", bytes, seconds);
		printf(" readers=%u parts=%u objects=%" PRIu64 " seed=%" PRIu64 "\n", readers,
		       parts, (uint64_t)readers * objects, seed);
	}
	close_all(&fds);
	free(groups);
	free(threads);
	return rc;
}

/* --- mmap: map each range and add up every 64-bit word --- */

/*
 * Sum as little-endian u64 words from the start of the range, the tail
 * zero-padded, so that the same bytes give the same sum whatever the
 * mapping's alignment.  Four lanes let the compiler keep several loads in
 * flight; the page faults, not the adds, are what is being measured.
 */
static uint64_t sum_words(const unsigned char *p, uint64_t len)
{
	uint64_t lane[4] = { 0, 0, 0, 0 }, w;
	uint64_t i = 0;

	for (; i + 32 <= len; i += 32)
		for (unsigned k = 0; k < 4; k++) {
			memcpy(&w, p + i + 8 * k, 8);
			lane[k] += w;
		}
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		lane[0] += w;
	}
	if (i < len) {
		w = 0;
		memcpy(&w, p + i, len - i);
		lane[0] += w;
	}
	return lane[0] + lane[1] + lane[2] + lane[3];
}

static int run_mmap(const struct range_list *list, struct rb_error *err)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t sum = 0;
	int rc = 0;

	if (page <= 0)
		page = PAGE;
	double start = now_seconds();
	for (size_t i = 0; i < list->count && rc == 0; i++) {
		const struct range *r = &list->ranges[i];
		uint64_t skew = r->offset % (uint64_t)page;
		int fd = open(r->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = fail(err, "cannot open %s: %s", r->path, strerror(errno));
			break;
		}
		struct stat st;
		if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < r->offset + r->length) {
			/* Touching a page past EOF would be SIGBUS, not a message. */
			rc = fail(err, "%s is shorter than its range %" PRIu64 "+%" PRIu64,
				  r->path, r->offset, r->length);
			close(fd);
			break;
		}
		void *map = mmap(NULL, r->length + skew, PROT_READ, MAP_SHARED, fd,
				 (off_t)(r->offset - skew));
		close(fd);
		if (map == MAP_FAILED) {
			rc = fail(err, "mmap %s at %" PRIu64 ": %s", r->path, r->offset,
				  strerror(errno));
			break;
		}
		sum += sum_words((const unsigned char *)map + skew, r->length);
		munmap(map, r->length + skew);
	}
	double seconds = now_seconds() - start;
	if (rc != 0)
		return rc;
	print_rate("mmap", total_length(list), seconds);
	printf(" ranges=%zu sum=0x%016" PRIx64 "\n", list->count, sum);
	return 0;
}

/* --- run: median wall time and peak RSS of a command --- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int run_after(const char *shell_cmd, struct rb_error *err)
{
	int status = system(shell_cmd);

	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fail(err, "after-command failed (status %d): %s", status, shell_cmd);
	return 0;
}

static int run_command(char **argv, unsigned runs, const char *after, const char *out_path,
		       struct rb_error *err)
{
	double *wall = calloc(runs, sizeof(*wall));
	long maxrss_kb = 0;

	if (wall == NULL)
		return fail(err, "out of memory");
	fflush(stdout);
	for (unsigned n = 0; n < runs; n++) {
		double t0 = now_seconds();
		pid_t pid = fork();
		if (pid < 0) {
			free(wall);
			return fail(err, "fork: %s", strerror(errno));
		}
		if (pid == 0) {
			const char *target = out_path ? out_path : "/dev/null";
			int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) {
				fprintf(stderr, "readbench: cannot open %s: %s\n", target,
					strerror(errno));
				_exit(127);
			}
			close(fd);
			execvp(argv[0], argv);
			fprintf(stderr, "readbench: cannot run %s: %s\n", argv[0], strerror(errno));
			_exit(127);
		}
		int status;
		struct rusage usage;
		pid_t got;
		while ((got = wait4(pid, &status, 0, &usage)) < 0 && errno == EINTR)
			;
		wall[n] = now_seconds() - t0;
		if (got < 0) {
			free(wall);
			return fail(err, "wait4: %s", strerror(errno));
		}
		if (WIFSIGNALED(status)) {
			free(wall);
			return fail(err, "%s killed by signal %d", argv[0], WTERMSIG(status));
		}
		if (WEXITSTATUS(status) != 0) {
			free(wall);
			return fail(err, "%s exited with status %d", argv[0],
				    WEXITSTATUS(status));
		}
		if (usage.ru_maxrss > maxrss_kb)
			maxrss_kb = usage.ru_maxrss;
		if (after != NULL && run_after(after, err) != 0) {
			free(wall);
			return -1;
		}
	}
	qsort(wall, runs, sizeof(*wall), cmp_double);
	double median = runs % 2 ? wall[runs / 2] : (wall[runs / 2 - 1] + wall[runs / 2]) / 2;
	printf("mode=run runs=%u median_seconds=%.6f min_seconds=%.6f max_seconds=%.6f "
	       "maxrss_kb=%ld\n", runs, median, wall[0], wall[runs - 1], maxrss_kb);
	free(wall);
	return 0;
}

/* --- main --- */

static void usage(void)
{
	fputs("usage: readbench seq [-b BYTES] LIST\n"
	      "       readbench odirect [-t READERS] [-p PARTS] [-n OBJECTS] [-s SEED] [-d] LIST\n"
	      "       readbench mmap LIST\n"
	      "       readbench run [-n RUNS] [-a SHELL-CMD] [-O FILE] -- COMMAND [ARG...]\n",
	      stderr);
	exit(2);
}

static uint64_t option_u64(const char *name, const char *text, uint64_t min, uint64_t max)
{
	uint64_t value;

	if (parse_u64(text, &value) != 0 || value < min || value > max) {
		fprintf(stderr, "readbench: option -%s wants an integer in %" PRIu64 "..%" PRIu64
			", not '%s'\n", name, min, max, text);
		exit(2);
	}
	return value;
}

int main(int argc, char **argv)
{
	struct rb_error err = { "" };
	struct range_list list = { NULL, 0 };
	uint64_t block = MiB, objects = 64, seed = 1, runs = 5;
	unsigned readers = 2, parts = 4;
	bool direct = false;
	const char *after = NULL, *out_path = NULL;
	int opt, rc;

	if (argc < 2)
		usage();
	const char *mode = argv[1];
	argc--;
	argv++;
	while ((opt = getopt(argc, argv, "+b:t:p:n:s:da:O:")) != -1) {
		switch (opt) {
		case 'b': block = option_u64("b", optarg, 512, 1024ull * MiB); break;
		case 't': readers = (unsigned)option_u64("t", optarg, 1, 256); break;
		case 'p': parts = (unsigned)option_u64("p", optarg, 1, 64); break;
		case 'n':
			objects = runs = option_u64("n", optarg, 1, UINT32_MAX);
			break;
		case 's': seed = option_u64("s", optarg, 0, UINT64_MAX); break;
		case 'd': direct = true; break;
		case 'a': after = optarg; break;
		case 'O': out_path = optarg; break;
		default: usage();
		}
	}
	if (strcmp(mode, "run") == 0) {
		if (optind >= argc)
			usage();
		rc = run_command(argv + optind, (unsigned)runs, after, out_path, &err);
	} else {
		if (optind != argc - 1)
			usage();
		if (load_ranges(argv[optind], &list, &err) != 0) {
			fprintf(stderr, "readbench: %s\n", err.msg);
			return 1;
		}
		if (strcmp(mode, "seq") == 0)
			rc = run_seq(&list, block, &err);
		else if (strcmp(mode, "odirect") == 0)
			rc = run_odirect(&list, readers, parts, objects, seed, direct, &err);
		else if (strcmp(mode, "mmap") == 0)
			rc = run_mmap(&list, &err);
		else
			usage();
		free_ranges(&list);
	}
	if (rc != 0) {
		fprintf(stderr, "readbench %s: %s\n", mode, err.msg);
		return 1;
	}
	return 0;
}
