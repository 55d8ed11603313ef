/*
 * sealcheck.h - check each chunk of a sealed pack on its first read.
 *
 * The state of every chunk of the seal's layout is one atomic byte:
 * unchecked, checking, good or bad.  A read of a byte range looks at the
 * chunks it touches.  All good: the caller serves the range from the file
 * as it would without a seal (nothing copied, nothing hashed).  Otherwise
 * each unchecked chunk is claimed with a compare-and-swap by exactly one
 * reader, which reads the WHOLE chunk, hashes it and compares the digest
 * with the seal's; its bytes inside the requested range are read straight
 * into the caller's buffer and hashed from there, so the bytes a first read
 * serves are the bytes that were hashed, never a second read of the file.
 * Readers that find a chunk being checked wait for it (a condition
 * variable from a small striped table, keyed by chunk number), so
 * concurrent first reads of one chunk hash it once.  A bad chunk stays bad:
 * every later read touching it is refused.  Chunks are visited in
 * ascending order, so two readers never wait for each other.
 *
 * Memory: the caller's buffer (the request's size) and, for the parts of
 * a chunk outside the request, one scratch buffer of at most
 * MP_SEALCHECK_SCRATCH bytes, freed before returning: bounded by the
 * request, whatever the chunk size.  Nothing here knows about FUSE.
 */
#ifndef MOEPACK_SEALCHECK_H
#define MOEPACK_SEALCHECK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "seal.h"

enum mp_chunk_state {
	MP_CHUNK_UNCHECKED,
	MP_CHUNK_CHECKING,
	MP_CHUNK_GOOD,
	MP_CHUNK_BAD,
};

#define MP_SEALCHECK_STRIPES 64
#define MP_SEALCHECK_SCRATCH (1u << 20)

/* Counters, relaxed atomics (status.json, metrics). */
struct mp_sealcheck_counters {
	_Atomic uint64_t checked;       /* chunks hashed (good or bad) */
	_Atomic uint64_t failed;        /* chunks found bad */
	_Atomic uint64_t bytes_hashed;
};

struct mp_sealcheck {
	const struct mp_seal *seal;
	const struct mp_seal_layout *layout;
	int fd;
	_Atomic uint8_t *state;          /* layout->chunk_count entries */
	pthread_mutex_t lock[MP_SEALCHECK_STRIPES];
	pthread_cond_t done[MP_SEALCHECK_STRIPES];
	struct mp_sealcheck_counters count;
};

/* Everything unchecked.  MP_E_NOMEM (or MP_E_USAGE: the seal and layout disagree). */
enum mp_err mp_sealcheck_init(struct mp_sealcheck *sc, const struct mp_seal *seal,
			      const struct mp_seal_layout *layout, int fd,
			      struct mp_error *err);
void mp_sealcheck_free(struct mp_sealcheck *sc);

enum mp_sealread {
	MP_SEALREAD_GOOD,    /* every chunk good before the call: serve from the file */
	MP_SEALREAD_FILLED,  /* buf holds the range: the bytes to serve */
	MP_SEALREAD_BAD,     /* a chunk of the range failed its check (now or before) */
	MP_SEALREAD_IO,      /* the file could not be read (short read, errno) */
};

/*
 * Check the chunks of [pos, pos + len) (len > 0, within the layout's file
 * size).  buf must hold len bytes; it is written only for
 * MP_SEALREAD_FILLED.  For MP_SEALREAD_BAD, *bad is the first bad chunk
 * and *found_now true when this call found it (the caller logs it once).
 */
enum mp_sealread mp_sealcheck_read(struct mp_sealcheck *sc, uint64_t pos, size_t len,
				   unsigned char *buf, uint64_t *bad, bool *found_now);

/* True when every chunk of [pos, pos + len) is already good (one load each). */
bool mp_sealcheck_all_good(struct mp_sealcheck *sc, uint64_t pos, size_t len);

enum mp_chunk_state mp_sealcheck_state(struct mp_sealcheck *sc, uint64_t chunk);

#endif
