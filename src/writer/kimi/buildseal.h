/*
 * buildseal.h - the seal of a pack being built.
 *
 * The builder hashes every byte it writes, from the buffer it writes, into
 * the seal's chunk digests (seal.h's layout over the builder's mp_layout).
 * Those digests serve twice:
 *
 *  - --resume: the digests of the chunks done are recorded beside
 *    PACK.partial (PACK.partial.digests, 32 bytes a chunk in chunk order,
 *    made durable before the state that vouches for them), and a resumed
 *    build checks the done part of PACK.partial against them on all cores
 *    before going on; a chunk that differs is copied again;
 *  - PACK.seal, written from them once the pack is in place: no second
 *    read of the pack.
 */
#ifndef MOEPACK_BUILDSEAL_H
#define MOEPACK_BUILDSEAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "writer/kimi/layout.h"
#include "pack/digest.h"
#include "base/errors.h"
#include "seal/seal.h"

struct mp_build_seal {
	struct mp_seal_layout l;
	uint64_t *offsets;                       /* object offsets, l borrows them */
	unsigned char (*digests)[MP_SHA256_LEN]; /* l.chunk_count entries */
	struct mp_sha256 *h;                     /* the chunk being hashed */
	uint64_t chunk;                          /* its number */
	uint64_t pos;                            /* the next byte it expects */
	uint64_t chunk_end;                      /* where that chunk ends */
	uint64_t saved;                          /* chunks durable in the record */
	int fd;                                  /* the record, or -1 */
};

/* The layout for l (chunk size from mp_seal_pick_chunk_size), digests
 * unset, hashing at byte 0.  MP_E_SEAL_LIMIT, MP_E_NOMEM. */
enum mp_err mp_build_seal_init(struct mp_build_seal *s, const struct mp_layout *l,
			       struct mp_error *err);
void mp_build_seal_free(struct mp_build_seal *s);

/* Go on hashing at pos, the first byte of a chunk. */
void mp_build_seal_seek(struct mp_build_seal *s, uint64_t pos);
/* The n bytes at s->pos, as written. */
void mp_build_seal_feed(struct mp_build_seal *s, const void *buf, size_t n);
/* Chunks that lie wholly before object `object` (all of them for
 * object == object_count). */
uint64_t mp_build_seal_chunks_before(const struct mp_build_seal *s, uint64_t object);

/*
 * The record of chunk digests beside PACK.partial: created (O_EXCL) for a
 * new build, or opened as the file `expect` for a resumed one, never
 * through a link (mp_open_output).  *st gets its identity.
 */
enum mp_err mp_build_seal_open_record(struct mp_build_seal *s, const char *path,
				      const struct stat *expect, struct stat *st,
				      struct mp_error *err);
/* Read the first `chunks` digests from the record (resume). */
enum mp_err mp_build_seal_load(struct mp_build_seal *s, const char *path, uint64_t chunks,
			       struct mp_error *err);
/* Write digests [saved, chunks) to the record and make them durable. */
enum mp_err mp_build_seal_save(struct mp_build_seal *s, const char *path, uint64_t chunks,
			       struct mp_error *err);

/* Chunks from `from` on are to be written to the record again (their
 * digests changed: copied again on resume). */
void mp_build_seal_unsave(struct mp_build_seal *s, uint64_t from);

/*
 * Check the chunks before object `objects` of fd against the digests
 * loaded, on every core (mp_seal_check_file over the layout of that much
 * of the file).  bad(chunk, arg) is called for each chunk that differs or
 * cannot be read.  MP_OK or MP_E_SEAL_CHUNK (some differ; err counts
 * them) or MP_E_NOMEM / MP_E_PACK_IO; MP_E_INTERRUPTED when a stop was
 * asked through cancel (may be NULL).
 */
enum mp_err mp_build_seal_check(const struct mp_build_seal *s, int fd, const char *what,
				uint64_t objects, mp_seal_bad_fn bad, void *bad_arg,
				const struct mp_cancel *cancel, struct mp_error *err);

/*
 * Write PACK.seal from the digests (every chunk hashed): anchored to
 * pack_sha256 when it is not NULL (the manifest then records it),
 * unanchored otherwise.  seal_hex gets the seal digest.  MP_E_SEAL_IO.
 */
enum mp_err mp_build_seal_write(struct mp_build_seal *s, const char *path,
				const unsigned char index_sha256[MP_SHA256_LEN],
				const unsigned char *pack_sha256, char seal_hex[MP_SHA256_HEX],
				struct mp_error *err);

#endif
