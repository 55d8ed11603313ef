/*
 * fetch.h - `moepack fetch`: a sealed pack copied from mirrors, every
 * chunk checked against the trusted seal before it is written.
 *
 * Order of work (mp_fetch_run):
 *   1. From each mirror: the manifest, PACK.seal and, when there,
 *      PACK.statement and PACK.sig, from beside the pack, and the pack's
 *      size.
 *   2. The root of trust, for the mirrors in turn until one's files pass
 *      it: the seal's digest is expect_seal_sha256, or a statement signed
 *      by one of trust_keys names this seal and manifest.  With neither,
 *      MP_E_FETCH_TRUST, unless unverified_origin (then the result says
 *      origin_proven false).  A mirror whose files fail it, or whose
 *      size, manifest or seal differ from those of the first that passed,
 *      is refused (one note) and not used.
 *   3. OUT.lock taken (as `moepack build` takes its lock), OUT.partial
 *      opened without following links and preallocated after a free-space
 *      check; OUT.partial.state records the chunks that passed.  On a
 *      resumed run every chunk the record names is read back and hashed
 *      again; only those that pass are kept.
 *   4. The head (header and index, up to the manifest's data_start) is
 *      fetched and checked first; the pack is then opened as a loader
 *      would (its index gives the seal's chunk layout) and the seal bound
 *      to it.
 *   5. Runs of whole chunks (at most run_bytes) are asked for with
 *      parallel range GETs (connections at once, libcurl's multi
 *      interface); worker threads hash each chunk and write it with
 *      pwrite() only when it matched.  A chunk that fails is asked for
 *      again from another mirror, the mirror that sent it counted; a
 *      mirror that fails MP_FETCH_DROP_AFTER times in a row is dropped
 *      (one note: why).  429/503 back off, Retry-After honoured.
 *   6. When every chunk passed: the sidecars written beside OUT (the
 *      manifest's pack path pointing at OUT), OUT.partial renamed to OUT,
 *      and the pack opened again and, with trust keys, its signature
 *      checked as `moepack verify --trust` would.
 *
 * Nothing here prints: notes (a mirror refused or dropped) and progress
 * go to the caller's callbacks, from the calling thread.
 */
#ifndef MOEPACK_FETCH_FETCH_H
#define MOEPACK_FETCH_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cancel.h"
#include "base/errors.h"
#include "fetch/source.h"

#define MP_FETCH_MAX_MIRRORS 64
#define MP_FETCH_DROP_AFTER 3
#define MP_FETCH_RUN_BYTES (16u << 20)
/* Bytes of runs held at once, in flight and being hashed (two a
 * connection): runs shrink below MP_FETCH_RUN_BYTES to fit (never below a
 * chunk), so that the fetch's memory stays near this whatever the pack's
 * size or the connections. */
#define MP_FETCH_RUN_MEMORY (128u << 20)
/* 16: the fastest of 8, 16 and 32 connections once chunks are written
 * O_DIRECT (8.8 GB from loopback nginx on 2 cores: 740, 801-828 and 763
 * MB/s; tests/bench/HISTORY.md, 2026-12-07); MP_FETCH_RUN_MEMORY keeps
 * the runs of more connections within the same memory. */
#define MP_FETCH_DEFAULT_CONNECTIONS 16
#define MP_FETCH_TEXT_(x) #x
#define MP_FETCH_TEXT(x) MP_FETCH_TEXT_(x)
/* for --help */
#define MP_FETCH_DEFAULT_CONNECTIONS_TEXT MP_FETCH_TEXT(MP_FETCH_DEFAULT_CONNECTIONS)

struct mp_fetch_progress {
	uint64_t done_bytes, total_bytes;
	double seconds;            /* since the pack bytes started */
	uint64_t fetched_bytes;    /* received this run, good or bad */
	unsigned mirrors_active;
	uint64_t refetched_chunks;
};

typedef void (*mp_fetch_note_fn)(const char *line, void *arg);
typedef void (*mp_fetch_progress_fn)(const struct mp_fetch_progress *p, void *arg);

struct mp_fetch_opts {
	const char *const *sources;     /* as given */
	size_t nsources;
	const char *out;                /* the pack to write */
	const char *const *trust_keys;  /* public key files */
	size_t ntrust;
	const char *expect_seal_sha256; /* 64 hex digits, or NULL */
	bool unverified_origin;
	unsigned connections;           /* 0: MP_FETCH_DEFAULT_CONNECTIONS */
	uint64_t run_bytes;             /* 0: MP_FETCH_RUN_BYTES */
	uint64_t low_speed;             /* bytes/s; 0: none */
	long low_speed_time;            /* s */
	uint64_t max_rate;              /* bytes/s over all connections; 0: none */
	unsigned hash_threads;          /* 0: one per online CPU */
	struct mp_fetch_s3_config s3;
	const char *s3_key_id, *s3_secret, *s3_token;
	const char *s3_key_from;        /* where the key came from: messages name it */
	const char *ca_file, *ca_path;  /* the CAs https trusts; NULL: the system's */
	mp_fetch_note_fn note;
	void *note_arg;
	mp_fetch_progress_fn progress;
	void *progress_arg;
	const struct mp_cancel *cancel;
};

/* What each mirror did. */
struct mp_fetch_mirror_report {
	char source[MP_FETCH_URL_MAX];
	bool refused;               /* at step 1 */
	bool dropped;               /* during the transfer */
	char why[MP_MSG_MAX];       /* refused or dropped: why */
	uint64_t bytes;             /* body bytes received */
	uint64_t chunks_good, chunks_bad;
	uint64_t failures;          /* requests that failed (not bad bytes) */
	uint64_t backoffs;          /* 429/503 */
	char http_version[8];       /* of its last reply: "1.1", "2"; "" for file:// */
};

struct mp_fetch_result {
	char *pack_path, *manifest_path;   /* malloc'd */
	uint64_t pack_size, chunk_count;
	uint64_t chunks_kept;              /* resumed: passed again from the local file */
	uint64_t chunks_fetched;           /* passed from a mirror */
	uint64_t chunks_refetched;         /* asked for again after bad bytes */
	uint64_t bytes_fetched;
	double seconds;
	bool origin_proven;
	const char *trusted_by;            /* "signature", "seal digest", "nothing" */
	char seal_sha256[65];
	size_t nmirrors;
	struct mp_fetch_mirror_report mirrors[MP_FETCH_MAX_MIRRORS];
	bool renamed;                      /* OUT is in place */
};

/* Global set-up of libcurl, once per program before any fetch. */
enum mp_err mp_fetch_global_init(struct mp_error *err);
void mp_fetch_global_cleanup(void);

/*
 * Run a fetch; *res is filled as far as it got, also on failure (free it
 * with mp_fetch_result_free).  Codes: MP_E_USAGE, MP_E_FETCH_TRUST,
 * MP_E_SIGNATURE, MP_E_FETCH_MIRROR (no mirror left), MP_E_FETCH_CHUNK,
 * MP_E_BUILD_LOCKED, MP_E_NO_SPACE, MP_E_PACK_IO, MP_E_SEAL_*, the pack's
 * validation codes, MP_E_INTERRUPTED.
 */
enum mp_err mp_fetch_run(const struct mp_fetch_opts *o, struct mp_fetch_result *res,
			 struct mp_error *err);
void mp_fetch_result_free(struct mp_fetch_result *res);

#endif
