/* packstate.c - the pack-changed state of a mount (packstate.h). */
#include "config.h"

#include "namespace/packstate.h"

#include <stdio.h>
#include <string.h>

static bool ts_eq(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

enum mp_pack_verdict mp_pack_compare(const struct mp_pack_id *valid, const struct stat *st)
{
	bool same_size = (uint64_t)st->st_size == valid->size;
	bool same_mtime = ts_eq(&st->st_mtim, &valid->mtime);

	if (same_size && same_mtime && ts_eq(&st->st_ctim, &valid->ctime))
		return MP_PACK_SAME;
	if (same_size && same_mtime && st->st_nlink != valid->nlink)
		return MP_PACK_RELINKED;
	return MP_PACK_CHANGED;
}

const char *mp_lease_name(int lease)
{
	switch (lease) {
	case MP_LEASE_HELD:
		return "held";
	case MP_LEASE_BROKEN:
		return "broken";
	case MP_LEASE_FALLBACK:
		return "fallback";
	default:
		return "none";
	}
}

/* A file system by its statfs(2) magic number. */
struct fs_kind {
	unsigned long magic;
	const char *name;
};

/* The statfs(2) magic numbers of local file systems whose leases see every
 * open for writing and every truncate of the file itself. */
static const struct fs_kind local_fs[] = {
	{0xef53, "ext2/ext3/ext4"}, {0x58465342, "xfs"}, {0x9123683e, "btrfs"},
	{0x01021994, "tmpfs"}, {0xf2f52010, "f2fs"}, {0x3153464a, "jfs"},
	{0x52654973, "reiserfs"}, {0x2fc12fc1, "zfs"}, {0xca451a4e, "bcachefs"},
};

/* Others that are named in the message when a pack lies on one. */
static const struct fs_kind known_fs[] = {
	{0x794c7630, "overlayfs"}, {0x65735546, "fuse"}, {0x6969, "nfs"},
	{0xff534d42, "cifs"}, {0xfe534d42, "smb2"}, {0x00c36400, "ceph"},
	{0x01021997, "9p"}, {0x6a656a63, "fakeowner"},
};

static const struct fs_kind *fs_kind_find(const struct fs_kind *t, size_t n,
					  unsigned long magic)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].magic == magic)
			return &t[i];
	return NULL;
}

bool mp_lease_fs_sees_writers(long f_type, char *name, size_t len)
{
	unsigned long magic = (unsigned long)f_type & 0xffffffffu;
	const struct fs_kind *k;

	if (fs_kind_find(local_fs, sizeof local_fs / sizeof local_fs[0], magic))
		return true;
	if ((k = fs_kind_find(known_fs, sizeof known_fs / sizeof known_fs[0], magic)))
		snprintf(name, len, "%s", k->name);
	else
		snprintf(name, len, "a file system of type 0x%lx", magic);
	return false;
}

bool mp_pack_state_init(struct mp_pack_state *ps, const struct mp_pack_id *id)
{
	ps->valid = *id;
	atomic_init(&ps->valid_seq, 0);
	atomic_init(&ps->valid_ctime_sec, (int64_t)id->ctime.tv_sec);
	atomic_init(&ps->valid_ctime_nsec, (int64_t)id->ctime.tv_nsec);
	memset(&ps->change, 0, sizeof ps->change);
	atomic_init(&ps->changed, false);
	return pthread_mutex_init(&ps->lock, NULL) == 0;
}

void mp_pack_state_destroy(struct mp_pack_state *ps)
{
	pthread_mutex_destroy(&ps->lock);
}

bool mp_pack_state_changed(const struct mp_pack_state *ps)
{
	return atomic_load((atomic_bool *)&ps->changed);
}

/* Does st match the reference?  No lock: a sequence lock. */
static bool id_matches(struct mp_pack_state *ps, const struct stat *st)
{
	const struct mp_pack_id *v = &ps->valid; /* size, mtime: never move */
	unsigned s1, s2;
	bool same;

	do {
		s1 = atomic_load_explicit(&ps->valid_seq, memory_order_acquire);
		same = (uint64_t)st->st_size == v->size && ts_eq(&st->st_mtim, &v->mtime) &&
		       (int64_t)st->st_ctim.tv_sec ==
			       atomic_load_explicit(&ps->valid_ctime_sec, memory_order_relaxed) &&
		       (int64_t)st->st_ctim.tv_nsec ==
			       atomic_load_explicit(&ps->valid_ctime_nsec, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&ps->valid_seq, memory_order_relaxed);
	} while ((s1 & 1) || s1 != s2);
	return same;
}

/* Under ps->lock: the new ctime and link count become the reference. */
static void set_valid_ctime(struct mp_pack_state *ps, const struct stat *st)
{
	atomic_fetch_add_explicit(&ps->valid_seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	ps->valid.ctime = st->st_ctim;
	ps->valid.nlink = st->st_nlink;
	atomic_store_explicit(&ps->valid_ctime_sec, (int64_t)st->st_ctim.tv_sec,
			      memory_order_relaxed);
	atomic_store_explicit(&ps->valid_ctime_nsec, (int64_t)st->st_ctim.tv_nsec,
			      memory_order_relaxed);
	atomic_fetch_add_explicit(&ps->valid_seq, 1, memory_order_release);
}

/* Under ps->lock: record what changed and enter the pack-changed state. */
static bool enter_locked(struct mp_pack_state *ps, const struct stat *st, bool lease_break)
{
	const struct mp_pack_id *v = &ps->valid;
	struct mp_status_change *c = &ps->change;

	if (atomic_load(&ps->changed))
		return false;
	c->changed = true;
	c->lease_break = lease_break;
	c->old_size = v->size;
	c->old_mtime = v->mtime;
	c->old_ctime = v->ctime;
	c->new_size = st ? (uint64_t)st->st_size : v->size;
	c->new_mtime = st ? st->st_mtim : v->mtime;
	c->new_ctime = st ? st->st_ctim : v->ctime;
	clock_gettime(CLOCK_REALTIME, &c->detected_at);
	atomic_store(&ps->changed, true);
	return true;
}

bool mp_pack_state_check(struct mp_pack_state *ps, const struct stat *st)
{
	bool unchanged = false;

	if (atomic_load(&ps->changed))
		return false;
	if (id_matches(ps, st))
		return true;
	/* something differs: decide under the lock (rare) */
	pthread_mutex_lock(&ps->lock);
	switch (mp_pack_compare(&ps->valid, st)) {
	case MP_PACK_SAME:
		unchanged = !atomic_load(&ps->changed);
		break;
	case MP_PACK_RELINKED:
		unchanged = !atomic_load(&ps->changed);
		if (unchanged)
			set_valid_ctime(ps, st);
		else
			enter_locked(ps, st, false);
		break;
	case MP_PACK_CHANGED:
		enter_locked(ps, st, false);
		break;
	}
	pthread_mutex_unlock(&ps->lock);
	return unchanged;
}

bool mp_pack_state_enter(struct mp_pack_state *ps, const struct stat *st, bool lease_break)
{
	bool mine;

	pthread_mutex_lock(&ps->lock);
	mine = enter_locked(ps, st, lease_break);
	pthread_mutex_unlock(&ps->lock);
	return mine;
}

void mp_pack_state_record(struct mp_pack_state *ps, struct mp_status_change *out)
{
	pthread_mutex_lock(&ps->lock);
	*out = ps->change;
	pthread_mutex_unlock(&ps->lock);
}
