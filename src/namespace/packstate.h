/*
 * packstate.h - the pack-changed state of a mount.
 *
 * The kernel keeps every file's pages for the whole mount, so a pack that
 * changes under it must put the mount in a state where every read of pack
 * bytes fails, for good.  This is that state: what the validated pack
 * looked like, the rule that says whether a stat of the open pack is still
 * it, and the record of the change once there is one (for status.json, the
 * metrics and the log).  No FUSE, no threads of its own: the FUSE layer
 * calls it from its reads, its watcher and its lease thread.
 *
 * Concurrency: mp_pack_state_check() is lock-free while nothing moves (a
 * sequence lock over the ctime, the one field of the reference that may
 * move); `lock` guards the reference and the record otherwise.  `changed`
 * is set once and never cleared.
 */
#ifndef MOEPACK_PACKSTATE_H
#define MOEPACK_PACKSTATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "namespace/stats.h"

/* What identifies the validated bytes of the open pack. */
struct mp_pack_id {
	uint64_t size;
	struct timespec mtime, ctime;
	nlink_t nlink;
};

/* What a stat of the open pack says against the reference. */
enum mp_pack_verdict {
	MP_PACK_SAME,      /* size, mtime and ctime as validated */
	MP_PACK_RELINKED,  /* only the link count (and so the ctime) moved */
	MP_PACK_CHANGED,   /* its bytes may not be the validated ones */
};

/*
 * The rule: renaming another file over the pack, or unlinking it, only
 * drops a link of the open file (and so moves its ctime), its bytes are
 * the validated ones.  Any other move of size, mtime or ctime is a change.
 */
enum mp_pack_verdict mp_pack_compare(const struct mp_pack_id *valid, const struct stat *st);

/* The read lease on the pack, as status.json and the metrics report it. */
enum mp_lease {
	MP_LEASE_NONE,      /* not tried (yet) */
	MP_LEASE_HELD,      /* every writer must wait for us */
	MP_LEASE_BROKEN,    /* a writer came: pack changed, lease given back */
	MP_LEASE_FALLBACK,  /* none could be taken: the stat checks */
};

/* status.json's word for a lease state: "held", "broken", "fallback", "none". */
const char *mp_lease_name(int lease);

/*
 * Whether a read lease on a file of this file system type (statfs's
 * f_type) sees every writer.  Local file systems do; overlayfs does not
 * (a write to the upper file underneath neither breaks nor waits for it),
 * nor does FUSE (the writer may be the server, or another mount), and NFS
 * and other network file systems refuse leases or keep them local.  False
 * with the file system's name (or its magic number) in name.
 */
bool mp_lease_fs_sees_writers(long f_type, char *name, size_t len);

struct mp_pack_state {
	pthread_mutex_t lock;          /* guards `valid` and `change` */
	struct mp_pack_id valid;       /* as validated (ctime, nlink may move) */
	atomic_uint valid_seq;         /* odd while the ctime atomics move */
	_Atomic int64_t valid_ctime_sec, valid_ctime_nsec;
	struct mp_status_change change;
	atomic_bool changed;
};

/* `id` is what the pack looked like when validated.  False: no lock. */
bool mp_pack_state_init(struct mp_pack_state *ps, const struct mp_pack_id *id);
void mp_pack_state_destroy(struct mp_pack_state *ps);

/* True once the pack changed (and for ever after). */
bool mp_pack_state_changed(const struct mp_pack_state *ps);

/*
 * Compare a stat of the open pack with the reference and enter the
 * pack-changed state if mp_pack_compare() says so; a relinked pack's ctime
 * and link count become the reference.  True while unchanged.
 */
bool mp_pack_state_check(struct mp_pack_state *ps, const struct stat *st);

/*
 * Enter the pack-changed state with `st` as the new values (NULL: unknown,
 * the reference's are recorded), as told by a lease break when
 * `lease_break`.  True when this call entered it, false when it was in it
 * already (the record is the first change's).
 */
bool mp_pack_state_enter(struct mp_pack_state *ps, const struct stat *st, bool lease_break);

/* A copy of the record (changed false while unchanged). */
void mp_pack_state_record(struct mp_pack_state *ps, struct mp_status_change *out);

#endif
