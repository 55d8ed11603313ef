/*
 * checkbench - the cost of moepackfs's per-read check (`make bench`, row 15).
 *
 *   checkbench THREADS SECONDS PACK
 *
 * THREADS threads run, for SECONDS, the operations the daemon's read path
 * does per read request to decide whether the pack may still be served
 * (read_begin and read_end in src/daemon/reply.c), on shared variables as
 * the daemon has them, so contention between readers is real:
 *
 *   lease   with the read lease held: increment the in-flight counter,
 *           load the changed flag and the lease state, decrement;
 *   stat    without a lease: the same plus fstat() of the pack and the
 *           sequence-lock comparison with the validated identity.
 *
 * Prints one line: "lease_ns=N stat_ns=N" (nanoseconds of CPU per check,
 * all threads together, i.e. wall time x CPUs used / checks).  run.sh
 * divides that by the CPU time per read request of a 16-reader run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static atomic_uint inflight;
static atomic_bool changed;
static _Atomic int lease = 1;
static atomic_uint valid_seq;
static _Atomic int64_t ctime_sec, ctime_nsec;
static struct stat valid;
static atomic_bool stop;
static int pack_fd;
static bool with_stat;

static bool check(void)
{
	struct stat st;
	unsigned s1, s2;
	bool same;

	atomic_fetch_add(&inflight, 1);
	if (atomic_load(&changed))
		goto out;
	if (!with_stat && atomic_load_explicit(&lease, memory_order_relaxed) == 1)
		return true;
	if (fstat(pack_fd, &st) != 0)
		goto out;
	do {
		s1 = atomic_load_explicit(&valid_seq, memory_order_acquire);
		same = st.st_size == valid.st_size &&
		       st.st_mtim.tv_sec == valid.st_mtim.tv_sec &&
		       st.st_mtim.tv_nsec == valid.st_mtim.tv_nsec &&
		       (int64_t)st.st_ctim.tv_sec ==
			       atomic_load_explicit(&ctime_sec, memory_order_relaxed) &&
		       (int64_t)st.st_ctim.tv_nsec ==
			       atomic_load_explicit(&ctime_nsec, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&valid_seq, memory_order_relaxed);
	} while ((s1 & 1) || s1 != s2);
	if (same)
		return true;
out:
	atomic_fetch_sub(&inflight, 1);
	return false;
}

static void *worker(void *arg)
{
	uint64_t *n = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 1000; i++) {
			if (!check()) {
				fprintf(stderr, "checkbench: the check failed\n");
				exit(1);
			}
			atomic_fetch_sub(&inflight, 1);
		}
		*n += 1000;
	}
	return NULL;
}

static double cpu_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU nanoseconds per check with `threads` threads for `seconds`. */
static double run(int threads, double seconds)
{
	pthread_t th[256];
	uint64_t counts[256] = {0}, total = 0;
	struct timespec pause;
	double c0, c1;

	atomic_store(&stop, false);
	c0 = cpu_seconds();
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, &counts[i]) != 0) {
			fprintf(stderr, "checkbench: pthread_create failed\n");
			exit(1);
		}
	pause.tv_sec = (time_t)seconds;
	pause.tv_nsec = (long)((seconds - (double)pause.tv_sec) * 1e9);
	nanosleep(&pause, NULL);
	atomic_store(&stop, true);
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += counts[i];
	}
	c1 = cpu_seconds();
	return total ? (c1 - c0) * 1e9 / (double)total : 0.0;
}

int main(int argc, char **argv)
{
	int threads;
	double seconds, lease_ns, stat_ns;

	if (argc != 4 || (threads = atoi(argv[1])) < 1 || threads > 256 ||
	    (seconds = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: checkbench THREADS SECONDS PACK\n");
		return 2;
	}
	pack_fd = open(argv[3], O_RDONLY | O_CLOEXEC);
	if (pack_fd < 0 || fstat(pack_fd, &valid) != 0) {
		perror(argv[3]);
		return 1;
	}
	atomic_store(&ctime_sec, (int64_t)valid.st_ctim.tv_sec);
	atomic_store(&ctime_nsec, (int64_t)valid.st_ctim.tv_nsec);
	with_stat = false;
	lease_ns = run(threads, seconds);
	with_stat = true;
	stat_ns = run(threads, seconds);
	printf("lease_ns=%.1f stat_ns=%.1f\n", lease_ns, stat_ns);
	return 0;
}
