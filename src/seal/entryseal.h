/*
 * entryseal.h - a seal made from the pack's own index (-o verify=entries).
 *
 * Some formats record in their index the SHA-256 of every role's bytes
 * (SGLANG-EXPERTPACK-v1's per-entry checksum), and the manifest binds the
 * index by its digest, which mp_pack_open() checks.  Those digests are then
 * a seal already: this builds the struct mp_seal that mp_sealcheck (every
 * read from storage checked) takes, with no seal file.
 *
 * The chunk size is the smallest power of two that holds a whole role, so
 * that each role is one chunk whose digest is the index's.  The head
 * (header, index, padding up to the first object) and any gap between
 * objects have no recorded digest: they are hashed here, once, from the
 * file the validation just read, so that later reads of them are checked
 * against the bytes the mount validated; a chunk of them that is a hole of
 * the file (SEEK_DATA) is zeros, not read.  The seal lives in memory, so
 * its table is not bound by a seal file's MP_SEAL_MAX_CHUNKS: it has a
 * chunk for every role, whatever their number, and up to
 * MP_ENTRY_SEAL_MAX_EXTRA more for the head and the gaps.
 */
#ifndef MOEPACK_ENTRYSEAL_H
#define MOEPACK_ENTRYSEAL_H

#include "base/errors.h"
#include "pack/pack.h"
#include "seal/seal.h"

/* Chunks of the head and gaps at most (a 136 MiB table, 256 GiB of head
 * when roles are 64 KiB or less, 32 TiB of it for 8 MiB chunks). */
#define MP_ENTRY_SEAL_MAX_EXTRA (1ull << 22)

/* Whether the pack's format records a SHA-256 for every role. */
bool mp_entry_seal_possible(const struct mp_pack *pack);

/*
 * The largest role a mount checks under -o verify=entries.  A role is
 * checked whole on every fill from storage (its digest is of all its
 * bytes), so each request in flight may hold two whole roles and read and
 * hash them for one page: 4 times DeepSeek-V4-Flash's 4,456,448 bytes.
 */
#define MP_ENTRY_SEAL_MOUNT_ROLE_MAX (16u << 20)

/*
 * Whether a mount may check this pack's roles by their index entries:
 * MP_E_USAGE, naming the role size and the bound, when a role is larger
 * than MP_ENTRY_SEAL_MOUNT_ROLE_MAX.  (`moepack verify --entries` reads
 * roles in bounded pieces and has no such bound.)
 */
enum mp_err mp_entry_seal_mountable(const struct mp_pack *pack, struct mp_error *err);

/*
 * Build the seal and its layout (free with mp_seal_free() and
 * mp_seal_layout_free()).  Reads the head and gaps from pack->fd.
 * MP_E_USAGE when the format records no role digests or a role is larger
 * than MP_SEAL_MAX_CHUNK; MP_E_SEAL_LIMIT when the head and gaps need more
 * than MP_ENTRY_SEAL_MAX_EXTRA chunks; MP_E_PACK_IO when a read fails;
 * MP_E_NOMEM.
 * The seal is flagged unanchored: it proves the bytes are the ones the
 * index (and so the manifest) records, not the whole file's digest.
 */
enum mp_err mp_entry_seal_make(struct mp_seal **out, struct mp_seal_layout *l,
			       const struct mp_pack *pack, struct mp_error *err);

/*
 * Read every role once, on `jobs` threads (0: one per CPU), and check
 * it against the SHA-256 its index entry records (the head and gaps are
 * not read: they have no recorded digest): what a format's
 * full check adds to the whole-file digest, for a caller that had that
 * digest from another read (the payload scan's).  MP_E_SEAL_CHUNK when any
 * role differs, err naming the first in file order and the count; the
 * codes of mp_entry_seal_make() otherwise, or MP_E_PACK_IO.
 */
enum mp_err mp_entry_seal_check(const struct mp_pack *pack, unsigned jobs,
				mp_progress_fn progress, void *progress_arg,
				struct mp_error *err);

#endif
