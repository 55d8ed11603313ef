/*
 * seal.h - per-chunk SHA-256 digests of a whole pack file (PACK.seal).
 *
 * A seal lets every byte a reader gets be checked when it is read, without
 * hashing the pack at mount time.  It lists one SHA-256 for each chunk of
 * the pack file, covering the header, the index, every payload byte and all
 * padding: nothing is left out.  It is bound to one pack by the pack's size,
 * its index digest and (unless unanchored) the manifest's expert_pack.sha256,
 * and it carries its own digest, the "seal digest", which commands print and
 * a signature covers (sign.h).
 *
 * Chunk layout.  Chunks follow the pack's structure, so that a chunk never
 * holds bytes of two roles: a damaged byte fails the reads of one role of
 * one expert and nothing else.  With a chunk size C (a power of two), the
 * file is cut, in file order, into
 *
 *   head   [0, offset of the first object): header, index, padding
 *   then for each object, in index order (which is file order):
 *     its roles        in the order they lie in the object (the Kimi
 *                      format's up, gate, down; SGLang's gate, up, down),
 *                      each cut into pieces of C bytes from the role's
 *                      first byte (the last may be shorter)
 *     gap              the padding after the object, up to the next
 *                      object or the end of the file (often empty)
 *
 * and every region is cut into pieces of C bytes from its own start.  An
 * empty region has no chunk.  The layout is computed from the validated
 * index; the seal stores only C and the chunk count, which must agree.
 *
 * The reference loader reads one Kimi-K3 object (11.96 MB: up and gate
 * 3.61 MB, down 4.73 MB) as four O_DIRECT reads of about 3 MB.  With C =
 * 2 MiB each of those reads touches chunks totalling at most 1.8 times its
 * length, and a K3 pack has 7 chunks an object (577,024 in all, an 18.5 MB
 * table).  1 MiB would need 13 chunks an object and a 34 MB table, over
 * MP_SEAL_MAX_TABLE.  mp_seal_pick_chunk_size() makes that choice.
 *
 * File format (all integers little-endian):
 *
 *   0    16  magic          "MOEPACKSEALv1" and three NUL bytes
 *   16   4   version        1
 *   20   4   header_size    128
 *   24   4   flags          bit 0: unanchored; other bits must be 0
 *   28   4   reserved       0
 *   32   8   chunk_size     power of two, MP_SEAL_MIN_CHUNK..MP_SEAL_MAX_CHUNK
 *   40   8   chunk_count    1..MP_SEAL_MAX_TABLE / 32
 *   48   8   pack_size      the pack file's size in bytes
 *   56   32  pack_sha256    anchored: SHA-256 of the whole pack file, the
 *                           manifest's expert_pack.sha256 (checked against
 *                           the file while sealing); unanchored: 32 zero
 *                           bytes, none recorded (seals made by `moepack
 *                           seal --unanchored` before 0.2.0 hold the file's
 *                           SHA-256 here, which is still accepted).  So
 *                           `moepack build` and `moepack seal --unanchored`
 *                           write the same seal for the same bytes.
 *   88   32  index_sha256   the pack's index digest
 *   120  8   reserved       0
 *   128  32 * chunk_count   the chunk digests, in chunk order
 *   end  32  seal digest    SHA-256 of every byte before it
 *
 * A seal file's size is therefore exactly 128 + 32 * chunk_count + 32.
 *
 * Nothing here knows about FUSE.  Functions that can fail return an mp_err
 * and fill an mp_error naming the field or chunk at fault; none prints.
 */
#ifndef MOEPACK_SEAL_H
#define MOEPACK_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pack/digest.h"
#include "base/cancel.h"
#include "base/errors.h"
#include "pack/pack.h"

#define MP_SEAL_MAGIC "MOEPACKSEALv1" /* followed by three NUL bytes */
#define MP_SEAL_MAGIC_LEN 16
#define MP_SEAL_VERSION 1
#define MP_SEAL_HEADER_SIZE 128
#define MP_SEAL_SUFFIX ".seal"
#define MP_SEAL_FLAG_UNANCHORED 1u
#define MP_SEAL_MIN_CHUNK (64u << 10)
#define MP_SEAL_MAX_CHUNK (1u << 30)
#define MP_SEAL_PREFERRED_CHUNK (1u << 20) /* the smallest size tried first */
#define MP_SEAL_MAX_TABLE (32u << 20)      /* bytes of chunk digests at most */
#define MP_SEAL_MAX_CHUNKS (MP_SEAL_MAX_TABLE / MP_SHA256_LEN)

/* Which part of the pack a chunk covers. */
enum mp_seal_part { MP_SEAL_HEAD, MP_SEAL_ROLE, MP_SEAL_GAP };

/* One chunk: its byte range and what it holds. */
struct mp_seal_chunk {
	uint64_t offset, len;
	enum mp_seal_part part;
	uint64_t object;    /* MP_SEAL_ROLE, MP_SEAL_GAP: the object (before which,
	                       for the gap after it) */
	enum mp_role role;  /* MP_SEAL_ROLE only */
};

/*
 * The chunk layout of one pack.  Computed, never read from a file; the
 * object offsets are borrowed from the caller (an mp_pack's object_offset,
 * or a builder's layout) and must outlive the layout.
 */
struct mp_seal_layout {
	uint64_t file_size;
	uint64_t chunk_size;
	uint64_t object_count;
	const uint64_t *object_offset;       /* borrowed, ascending */
	/* by position in an object: the i-th role there is order[i], of
	 * role_bytes[i] bytes in role_chunks[i] chunks */
	enum mp_role order[MP_ROLE_COUNT];
	uint64_t role_bytes[MP_ROLE_COUNT];
	uint64_t role_chunks[MP_ROLE_COUNT];
	uint64_t *object_first;              /* object_count + 1 entries: first chunk
	                                        of each object's first role; the
	                                        last is chunk_count */
	uint64_t head_chunks;
	uint64_t chunk_count;
};

/*
 * Compute the layout for chunk size `chunk_size`.  object_offset holds
 * object_count ascending offsets, each object being role_bytes[0] +
 * role_bytes[1] + role_bytes[2] bytes, in that order, that end at or before
 * the next object (or file_size).  The roles are taken to be up, gate,
 * down (the Kimi layout); mp_seal_layout_of_pack() sets the pack's own.  MP_E_USAGE for a chunk size that is not a power
 * of two in range; MP_E_SEAL_LIMIT when the table would pass
 * MP_SEAL_MAX_TABLE; MP_E_NOMEM.
 */
enum mp_err mp_seal_layout_init(struct mp_seal_layout *l, uint64_t file_size,
				uint64_t object_count, const uint64_t *object_offset,
				const uint64_t role_bytes[MP_ROLE_COUNT],
				uint64_t chunk_size, struct mp_error *err);
/* The same from a validated pack, its roles in its own order (m.order). */
enum mp_err mp_seal_layout_of_pack(struct mp_seal_layout *l, const struct mp_pack *pack,
				   uint64_t chunk_size, struct mp_error *err);
/* The same with a table of at most max_chunks chunks instead of a seal
 * file's MP_SEAL_MAX_CHUNKS: for a seal made in memory (entryseal.h). */
enum mp_err mp_seal_layout_of_pack_max(struct mp_seal_layout *l, const struct mp_pack *pack,
				       uint64_t chunk_size, uint64_t max_chunks,
				       struct mp_error *err);
void mp_seal_layout_free(struct mp_seal_layout *l);

/*
 * The smallest power of two from MP_SEAL_PREFERRED_CHUNK up whose table
 * fits MP_SEAL_MAX_TABLE for this pack (no allocation).  0 when none does.
 */
uint64_t mp_seal_pick_chunk_size(uint64_t file_size, uint64_t object_count,
				 const uint64_t *object_offset,
				 const uint64_t role_bytes[MP_ROLE_COUNT]);

/* Chunk number `chunk` (< chunk_count).  O(log objects): a binary search
 * of object_first, as gaps make the chunks of objects differ in number. */
void mp_seal_chunk_get(const struct mp_seal_layout *l, uint64_t chunk,
		       struct mp_seal_chunk *out);
/* The chunk holding byte `pos` (< file_size).  O(log objects). */
uint64_t mp_seal_chunk_at(const struct mp_seal_layout *l, uint64_t pos);
/* The length of the layout's longest chunk (at most chunk_size: smaller
 * when every role, the head and every gap are).  O(objects). */
uint64_t mp_seal_layout_longest(const struct mp_seal_layout *l);

/* A seal file, parsed and checked against its own digest. */
struct mp_seal {
	uint32_t flags;
	uint64_t chunk_size;
	uint64_t chunk_count;
	uint64_t pack_size;
	unsigned char pack_sha256[MP_SHA256_LEN];
	unsigned char index_sha256[MP_SHA256_LEN];
	unsigned char (*digests)[MP_SHA256_LEN]; /* chunk_count entries */
	unsigned char seal_digest[MP_SHA256_LEN];
};

static inline bool mp_seal_unanchored(const struct mp_seal *s)
{
	return (s->flags & MP_SEAL_FLAG_UNANCHORED) != 0;
}

/* The seal records a whole-file SHA-256 (every anchored seal, and an
 * unanchored one from before 0.2.0): pack_sha256 is not all zeros. */
bool mp_seal_has_pack_sha256(const struct mp_seal *s);

/*
 * Read and parse PATH (opened without blocking, regular file only, size
 * checked against the header before anything is allocated).  Refusals
 * (MP_E_SEAL_FORMAT) name the field: magic, version, header_size, flags,
 * reserved, chunk_size, chunk_count, file size vs chunk_count, seal digest.
 * MP_E_SEAL_IO when it cannot be opened or read.
 */
enum mp_err mp_seal_read(struct mp_seal **out, const char *path, struct mp_error *err);
/* The same from bytes in memory (the fuzz target's entry point). */
enum mp_err mp_seal_parse(struct mp_seal **out, const unsigned char *buf, size_t len,
			  const char *what, struct mp_error *err);
void mp_seal_free(struct mp_seal *s);

/*
 * Is this seal the one for this pack?  Checks, in order: pack size, index
 * digest, anchoring (a manifest with expert_pack.sha256 needs an anchored
 * seal with that pack_sha256; one without needs an unanchored seal), then
 * chunk count against the layout of `l` (computed with s->chunk_size).
 * MP_E_SEAL_MISMATCH naming what differs.
 */
enum mp_err mp_seal_bind(const struct mp_seal *s, const struct mp_pack *pack,
			 const struct mp_seal_layout *l, struct mp_error *err);

/* True when digest, the SHA-256 of chunk's bytes, is the one sealed for it
 * (false for a chunk the seal does not have): the one comparison of every
 * check against a seal. */
bool mp_seal_digest_ok(const struct mp_seal *s, uint64_t chunk,
		       const unsigned char digest[MP_SHA256_LEN]);

/*
 * Hash every chunk of fd on `jobs` threads (0: one per online CPU), and,
 * when pack_sha256 is not NULL, the whole-file SHA-256 in the same pass
 * over the bytes.  digests must hold l->chunk_count entries.  progress may
 * be NULL.  MP_E_PACK_IO naming the byte on a short or failed read.
 * Without pack_sha256, chunks in a hole of the file (SEEK_DATA finds no
 * data in them) are not read: a hole is zeros, and they get the digest of
 * zeros (the checks below do the same).  With it every byte is read, as
 * the whole-file digest must be computed over them.
 */
enum mp_err mp_seal_hash_file(int fd, const char *what, const struct mp_seal_layout *l,
			      unsigned jobs, mp_progress_fn progress, void *progress_arg,
			      unsigned char (*digests)[MP_SHA256_LEN],
			      unsigned char pack_sha256[MP_SHA256_LEN], struct mp_error *err);

/*
 * Check every chunk of fd against s on `jobs` threads.  For each chunk that
 * differs (or cannot be read) bad(chunk, arg) is called, from one thread at
 * a time, in no particular order.  Returns MP_OK when every chunk matched,
 * MP_E_SEAL_CHUNK when one or more did not (err names the first and the
 * count), MP_E_PACK_IO only when the file cannot be read at all.
 */
typedef void (*mp_seal_bad_fn)(uint64_t chunk, void *arg);
enum mp_err mp_seal_check_file(int fd, const char *what, const struct mp_seal *s,
			       const struct mp_seal_layout *l, unsigned jobs,
			       mp_progress_fn progress, void *progress_arg,
			       mp_seal_bad_fn bad, void *bad_arg, struct mp_error *err);
/* The same, stopped by a stop asked through cancel (may be NULL) before
 * the next run of chunks: MP_E_INTERRUPTED naming `what` (a build's check
 * of the part of PACK.partial it resumes). */
enum mp_err mp_seal_check_file_until(int fd, const char *what, const struct mp_seal *s,
				     const struct mp_seal_layout *l, unsigned jobs,
				     mp_progress_fn progress, void *progress_arg,
				     mp_seal_bad_fn bad, void *bad_arg,
				     const struct mp_cancel *cancel, struct mp_error *err);

/* The same, with roles_only: the chunks of roles alone (head and gaps
 * unread). */
enum mp_err mp_seal_check_part(int fd, const char *what, const struct mp_seal *s,
			       const struct mp_seal_layout *l, unsigned jobs, bool roles_only,
			       mp_progress_fn progress, void *progress_arg,
			       mp_seal_bad_fn bad, void *bad_arg, struct mp_error *err);

/*
 * Encode a seal (header, digests, trailer) and write it to PATH whole
 * through a private temporary (mp_output_write_atomic(), MP_TMP_PRIVATE).
 * Fills s->seal_digest.  MP_E_SEAL_IO.
 */
enum mp_err mp_seal_write(struct mp_seal *s, const char *path, struct mp_error *err);

/*
 * The bytes of a seal file for s (fills s->seal_digest), malloc'd, with
 * *len its size; NULL when out of memory or chunk_count is out of range.
 */
unsigned char *mp_seal_encode(struct mp_seal *s, size_t *len);

/*
 * "layer L expert E role R" / "header and index" / "padding after layer L
 * expert E" for a chunk, into buf (for messages and the daemon's log).
 */
void mp_seal_chunk_describe(const struct mp_pack *pack, const struct mp_seal_layout *l,
			    uint64_t chunk, char *buf, size_t size);

#endif
