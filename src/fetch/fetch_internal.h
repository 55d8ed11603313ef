/*
 * fetch_internal.h - what the files of one fetch share (run.c, mirrors.c,
 * local.c, head.c, engine.c); nothing outside src/fetch/ may use it.
 */
#ifndef MOEPACK_FETCH_INTERNAL_H
#define MOEPACK_FETCH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "fetch/fetch.h"
#include "fetch/hashq.h"
#include "fetch/plan.h"
#include "fetch/source.h"
#include "fetch/xfer.h"
#include "pack/pack.h"
#include "seal/seal.h"

struct fetch_mirror {
	struct mp_fetch_source src;
	struct mp_fetch_mirror_report *rep;  /* in the result */
	bool usable;                         /* not refused, not dropped */
	unsigned in_flight;
	unsigned fails_in_row;
	unsigned backoff_level;
	double not_before;                   /* monotonic s: backing off */
};

/* A file fetched whole (the sidecars), malloc'd; NULL: the mirror has none. */
struct fetch_blob {
	unsigned char *data;
	size_t len;
};

/*
 * How a mount from mirrors (remote.c) steers the engine; a plain fetch
 * has none.  Called from the engine's thread only.
 *   next: the next run to ask for, chunks marked in flight in the plan;
 *         demand runs (*demand true) whenever called, the background's
 *         only with `room` (a connection free); false: none now.
 *   chunk: chunk c passed (good) or must be asked for again.
 *   stuck: no usable mirror will send chunk c (every one lied about it).
 */
struct fetch;
struct fetch_driver {
	bool (*next)(void *arg, struct fetch *f, bool room, struct mp_fetch_run *r,
		     bool *demand);
	void (*chunk)(void *arg, uint64_t c, bool good);
	void (*stuck)(void *arg, uint64_t c);
	void *arg;
};

struct fetch {
	const struct mp_fetch_opts *o;
	const struct fetch_driver *driver;   /* NULL: a plain fetch */
	struct mp_fetch_result *res;
	struct mp_fetch_net net;
	size_t nmirrors;
	struct fetch_mirror mirrors[MP_FETCH_MAX_MIRRORS];
	/* from the first mirror that answered and passed the root of trust */
	struct fetch_mirror *origin;
	struct fetch_blob manifest, seal_raw, statement, sig;
	struct mp_seal *seal;
	/* local files */
	char *out, *partial, *state, *lock, *manifest_out;
	int fd, state_fd, lock_fd;
	int direct_fd;           /* the partial again, O_DIRECT; -1: none */
	bool resumed;
	unsigned char *record;   /* bit per chunk: passed (this run or one before) */
	uint64_t record_len;
	/* after the head */
	struct mp_pack *pack;
	struct mp_seal_layout layout;
	bool have_layout;
	struct mp_fetch_plan plan;
	uint64_t *bad_mask;   /* by chunk: mirrors that sent it wrong */
	struct mp_fetch_hashq *hq;
	CURLM *multi;            /* the transfers; hashing threads wake it */
	void *reqs;              /* engine.c's requests in flight */
	double t0, last_progress;
	bool paused_mid;         /* the test hook's "transfer" point passed */
};

double mp_fetch_now(void);
void mp_fetch_note(struct fetch *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A mirror that answers 429/503 this many times in a row (no good reply
 * between) is dropped: a busy mirror is waited for, never for ever. */
#define MP_FETCH_MAX_BACKOFFS 8
/* The longest wait one Retry-After may ask for, in seconds. */
#define MP_FETCH_MAX_RETRY_AFTER 60

/* mirrors.c: step 1, the sidecars and sizes of every mirror. */
enum mp_err mp_fetch_mirrors_open(struct fetch *f, struct mp_error *err);
/* A small file from beside the pack on mirror m (suffix ".seal"); absent
 * files leave b empty and return MP_OK when `optional`. */
enum mp_err mp_fetch_get_blob(struct fetch *f, struct fetch_mirror *m, const char *suffix,
			      size_t cap, bool optional, struct fetch_blob *b,
			      struct mp_error *err);
void mp_fetch_blob_free(struct fetch_blob *b);
/* Perform x, a blocking request to m, and judge it (xfer.h); a 429/503
 * is waited out as its Retry-After says (mp_fetch_back_off) and the
 * request made again, until MP_FETCH_MAX_BACKOFFS in a row, then
 * MP_FETCH_BAD.  A stop asked meanwhile: MP_FETCH_BAD, err
 * MP_E_INTERRUPTED. */
enum mp_fetch_verdict mp_fetch_perform(struct fetch *f, struct fetch_mirror *m,
				       struct mp_fetch_xfer *x, const char *who,
				       struct mp_error *err);

/* local.c: step 3. */
enum mp_err mp_fetch_local_open(struct fetch *f, struct mp_error *err);
/* Record chunk c as passed (a hint for a resumed run, which checks again). */
void mp_fetch_record_chunk(struct fetch *f, uint64_t c);
/* Whether the record from an earlier run names chunk c. */
bool mp_fetch_record_has(struct fetch *f, uint64_t c);
void mp_fetch_local_close(struct fetch *f);

/* head.c: step 4, and the plan. */
enum mp_err mp_fetch_head(struct fetch *f, struct mp_error *err);
/* A run of chunks from mirror m into buf, blocking (the head's). */
enum mp_err mp_fetch_get_range(struct fetch *f, struct fetch_mirror *m, uint64_t offset,
			       uint64_t len, unsigned char *buf, struct mp_error *err);

/* The manifest's text with its pack path (whichever key the format
 * keeps it under) replaced by path; *out malloc'd. */
enum mp_err mp_fetch_manifest_with_path(const struct fetch *f, const char *path, char **out,
					size_t *out_len, struct mp_error *err);

/* run.c: the root of trust for the seal and files adopted (step 2);
 * MP_E_FETCH_TRUST without one, MP_E_SIGNATURE when it refuses them. */
enum mp_err mp_fetch_trust(struct fetch *f, struct mp_error *err);
/* The test hook MOEPACK_TEST_FETCH_PAUSE=point (moepack(1)): at `point`,
 * say so in a note and wait (at most ten minutes) for a signal; then
 * MP_E_INTERRUPTED when one asked for a stop. */
enum mp_err mp_fetch_test_pause(struct fetch *f, const char *point, struct mp_error *err);

/* resume.c: chunks the record names, hashed again from the file. */
enum mp_err mp_fetch_resume_check(struct fetch *f, struct mp_error *err);

/* run.c: what a fetch and a mount from mirrors (remote.c) share. */
/* The mirrors parsed, the local paths made (from o->out). */
enum mp_err mp_fetch_setup(struct fetch *f, struct mp_error *err);
/* curl's multi handle and the hashing threads, before the engine. */
enum mp_err mp_fetch_transfer_start(struct fetch *f, struct mp_error *err);
/* Every chunk passed: the sidecars beside OUT, OUT.partial renamed to OUT
 * (descriptors open on it stay valid), opened again and checked. */
enum mp_err mp_fetch_finish(struct fetch *f, struct mp_error *err);
/* Everything f holds, freed (f itself not). */
void mp_fetch_release(struct fetch *f);

/* engine.c: step 5. */
enum mp_err mp_fetch_engine(struct fetch *f, struct mp_error *err);
/* The engine in steps, for a caller with a loop of its own (remote.c):
 * begin once, a turn at a time (each waits at most wait_ms for curl),
 * abandon what is in flight at the end. */
enum mp_err mp_fetch_engine_begin(struct fetch *f, struct mp_error *err);
enum mp_err mp_fetch_engine_turn(struct fetch *f, unsigned *in_flight, int wait_ms,
				 struct mp_error *err);
void mp_fetch_engine_abandon(struct fetch *f);
/* Mirrors not refused or dropped. */
unsigned mp_fetch_usable_mirrors(const struct fetch *f);
/* Mirror m failed once: counted, dropped after MP_FETCH_DROP_AFTER. */
void mp_fetch_mirror_failed(struct fetch *f, struct fetch_mirror *m, const char *why);
/* mp_fetch_xfer_judge(), but a redirect loop named as one. */
enum mp_fetch_verdict mp_fetch_judge(struct mp_fetch_xfer *x, CURLcode res, const char *who,
				     struct mp_error *err);
/* Mirror m no longer used, with one note saying why. */
void mp_fetch_mirror_drop(struct fetch *f, struct fetch_mirror *m, const char *why);
/* Mirror m said 429/503 (x its reply): m->not_before set from the
 * Retry-After (capped at MP_FETCH_MAX_RETRY_AFTER; none: 1, 2, 4... 32 s)
 * and the back-off counted; a reply that comes while m already backs off
 * (a request sent before) only extends the wait.  The seconds to wait;
 * -1 when m has backed off MP_FETCH_MAX_BACKOFFS times in a row (the
 * caller drops it). */
double mp_fetch_back_off(struct fetch_mirror *m, struct mp_fetch_xfer *x);
/* Drop m for backing off MP_FETCH_MAX_BACKOFFS times; last: the last reply. */
void mp_fetch_mirror_busy(struct fetch *f, struct fetch_mirror *m, const char *last);

#endif
