/*
 * remote.h - a pack served from its mirrors while it is fetched: what
 * `moepackfs SOURCE MOUNTPOINT -o cache=DIR` needs below FUSE.
 *
 * mp_remote_open() is steps 1-4 of a fetch (fetch.h): the manifest, seal
 * and signature from the mirrors and the root of trust checked (refused
 * without one, as fetch refuses), OUT.lock taken, OUT.partial preallocated
 * with its record OUT.partial.state, the head fetched and checked against
 * the seal.  The caller then opens OUT.partial itself (a mount validates
 * it as it validates any pack) and checks every read of it against the
 * seal.
 *
 * mp_remote_start() starts the engine's thread: a reader that needs chunk
 * c calls mp_remote_make_local() first, which asks for c ahead of the
 * background fill and waits until c is checked against the seal, written
 * and recorded (readers of one chunk share one request); the background
 * fill (unless opts.fill is false) asks for the rest, the chunks of the
 * objects readers read first (mp_remote_hint()) and then in file order,
 * at most opts.fetch.max_rate bytes/s.  When every chunk is local the
 * sidecars are written beside OUT and OUT.partial renamed to OUT (open
 * descriptors stay valid).  A mirror that fails is dropped as fetch drops
 * it and tried again REVIVE seconds later; a mirror that sent bytes the
 * seal refused never is.
 *
 * The record survives a restart: on a resumed open the chunks it names
 * count as local at once (a reader's check against the seal catches a
 * chunk whose bytes never reached the disk, and mp_remote_refetch() gets
 * it anew), and the engine hashes them again before the fill, fetching
 * what fails.
 *
 * Nothing here prints: notes go to opts.fetch.note, from the engine's
 * thread (or the caller's, during open; or a reader's whose wait failed),
 * so the callback must be thread-safe.
 */
#ifndef MOEPACK_FETCH_REMOTE_H
#define MOEPACK_FETCH_REMOTE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "fetch/fetch.h"
#include "seal/seal.h"

/* -o remote_timeout's default, seconds */
#define MP_REMOTE_TIMEOUT_DEFAULT 30

struct mp_remote_opts {
	struct mp_fetch_opts fetch;    /* sources, out, trust, max_rate (the fill's) */
	unsigned timeout_s;            /* a reader waits at most this for a chunk */
	bool fill;                     /* fetch what no reader asked for */
	/* checked while a reader waits: true ends the wait (EIO), as when
	 * the mount is going away; NULL: never */
	bool (*abandon)(void *arg);
	void *abandon_arg;
};

/* Every mirror a mount may have has its counters */
#define MP_REMOTE_STATS_MIRRORS MP_FETCH_MAX_MIRRORS

struct mp_remote_mirror_stats {
	char source[256];              /* as given, cut to fit */
	uint64_t bytes, failures, chunks_good, chunks_bad;
	bool dropped;                  /* now: not used until tried again */
	bool liar;                     /* sent bytes the seal refused: never again */
};

/* What status.json and the metrics show; a copy, consistent in itself. */
struct mp_remote_stats {
	uint64_t pack_size, chunk_count;
	uint64_t chunks_local, bytes_local;
	uint64_t chunks_fetched, chunks_refetched, chunks_kept;
	uint64_t bytes_fetched;
	uint64_t demand_waits;         /* readers that waited for a chunk */
	uint64_t demand_failed;        /* of those, EIO (timeout, no mirror, stop) */
	double demand_p50, demand_p99; /* seconds a wait took (those that ended well) */
	bool fill, complete;           /* complete: OUT in place */
	char pack_path[4096];          /* OUT.partial, then OUT */
	size_t nmirrors;
	struct mp_remote_mirror_stats mirrors[MP_REMOTE_STATS_MIRRORS];
};

struct mp_remote;

/* Steps 1-4 (above).  The fetch's codes (fetch.h). */
enum mp_err mp_remote_open(struct mp_remote **out, const struct mp_remote_opts *o,
			   struct mp_error *err);
/* OUT.partial, OUT and the manifest path OUT's sidecar will have. */
const char *mp_remote_partial_path(const struct mp_remote *r);
const char *mp_remote_manifest_path(const struct mp_remote *r);
/* The manifest's text with its pack path replaced by path (malloc'd). */
enum mp_err mp_remote_manifest(const struct mp_remote *r, const char *path, char **out,
			       size_t *len, struct mp_error *err);
/* A seal of the caller's own, parsed from the trusted seal's bytes. */
enum mp_err mp_remote_seal_copy(const struct mp_remote *r, struct mp_seal **out,
				struct mp_error *err);
/* What proved the origin: "signature", "seal digest". */
const char *mp_remote_trusted_by(const struct mp_remote *r);

/* The engine's thread (after any fork).  MP_E_NOMEM. */
enum mp_err mp_remote_start(struct mp_remote *r, struct mp_error *err);
/*
 * Chunk c (of the seal) local before it is read: 0 at once when it is;
 * else it is asked for and, with wait, waited for, at most timeout_s: 0,
 * or EIO (no mirror sent it in time, or the mount stops); without wait,
 * EAGAIN.  Any thread.
 */
int mp_remote_make_local(struct mp_remote *r, uint64_t c, bool wait);
/*
 * A reader is reading the object at pack bytes [offset, offset + len): its
 * chunks not local yet are fetched by the fill before any in file order,
 * those of the objects read most so far first (a loader that read part of
 * an expert reads the rest soon).  Cheap once they are local.  Any thread.
 */
void mp_remote_hint(struct mp_remote *r, uint64_t offset, uint64_t len);
/*
 * Chunk c was local but its bytes, read back, did not match the seal (they
 * never reached the disk before a crash, or the file was changed): not
 * local any more, fetched anew and waited for as mp_remote_make_local()
 * waits.  True when it is local again; false when it cannot be (the fill
 * has ended or the mount stops, or no mirror sent it in time).
 */
bool mp_remote_refetch(struct mp_remote *r, uint64_t c);
void mp_remote_stats(struct mp_remote *r, struct mp_remote_stats *s);
/* Stop the engine (requests in flight abandoned) and wake every reader;
 * returns once its thread has ended. */
void mp_remote_stop(struct mp_remote *r);
/* mp_remote_stop(), then everything freed (OUT.lock released). */
void mp_remote_close(struct mp_remote *r);

#endif
