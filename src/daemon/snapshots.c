/*
 * snapshots.c - the status.json and metrics snapshots the mount serves.
 *
 * One snapshot (namespace/snapshot.h renders it from the counters and the
 * mount's facts) is current at a time; every read of status.json or
 * metrics is served from it (reply.c), the watcher renders a new one once
 * per MP_FS_STATUS_MS (watch.c) and -o metrics_file writes one out
 * (metricsfile.c).  The files' ctime says which one they serve, and moves
 * only once the kernel's pages of the old one are dropped.
 */
#include "config.h"

#include "daemon/snapshots.h"

/* The pieces of a snapshot that live in fs, as snapshot.h wants them. */
static void snap_source(const struct mp_fs *fs, struct mp_snap_source *src,
			struct mp_snap_moment *m)
{
	*src = (struct mp_snap_source){
		.stats = &fs->stats,
		.metrics = &fs->metrics,
		.status = &fs->status,
		.scan = &fs->scan,
		.seal = fs->seal,
		.started = &fs->started,
	};
	*m = (struct mp_snap_moment){
		.lease = atomic_load(&fs->lease),
		.lease_reason = fs->lease_reason,
		.nwarnings = fs->nwarnings,
		.warnings = (const char (*)[MP_MSG_MAX])fs->warnings,
		.file_writes = atomic_load(&fs->metrics_writes),
		.file_write_errors = atomic_load(&fs->metrics_write_errors),
	};
}

_Static_assert(MP_STATUS_REMOTE_MIRRORS >= MP_REMOTE_STATS_MIRRORS,
	       "status.json shows every mirror of a mount");

/* The fill of a pack from mirrors, as status.json and the metrics show it. */
static void remote_status(const struct mp_fs *fs, const struct mp_remote_stats *s,
			  struct mp_status_remote *out)
{
	*out = (struct mp_status_remote){
		.source = fs->remote_source, .cache_path = s->pack_path,
		.fill = s->fill, .complete = s->complete, .pack_size = s->pack_size,
		.chunks = s->chunk_count, .chunks_local = s->chunks_local,
		.bytes_local = s->bytes_local, .chunks_fetched = s->chunks_fetched,
		.chunks_refetched = s->chunks_refetched, .chunks_kept = s->chunks_kept,
		.bytes_fetched = s->bytes_fetched, .demand_waits = s->demand_waits,
		.demand_failed = s->demand_failed, .demand_p50 = s->demand_p50,
		.demand_p99 = s->demand_p99, .nmirrors = (unsigned)s->nmirrors,
	};
	for (size_t i = 0; i < s->nmirrors; i++) {
		const struct mp_remote_mirror_stats *m = &s->mirrors[i];

		out->mirrors[i] = (struct mp_status_remote_mirror){
			.source = m->source, .bytes = m->bytes, .failures = m->failures,
			.chunks_good = m->chunks_good, .chunks_bad = m->chunks_bad,
			.dropped = m->dropped, .liar = m->liar};
	}
}

/*
 * Make a new snapshot the current one; false with *err when it cannot be
 * rendered.  The files' ctime stays until mp_fs_snap_settle() has dropped the
 * kernel's pages of the old one.
 */
bool mp_fs_snap_refresh(struct mp_fs *fs, struct mp_error *err)
{
	struct mp_snap_source src;
	struct mp_snap_moment m;
	struct mp_status_snap *snap;
	struct mp_remote_stats rs;
	struct mp_status_remote remote;

	snap_source(fs, &src, &m);
	if (fs->remote) {
		mp_remote_stats(fs->remote, &rs);
		remote_status(fs, &rs, &remote);
		m.remote = &remote;
	}
	mp_pack_state_record(&fs->ps, &m.change);
	snap = mp_snap_render(&src, &m, err);
	if (!snap)
		return false;
	mp_snap_slot_set(&fs->snaps, snap);
	return true;
}

/*
 * The files say which snapshot they serve: the kernel's cached pages of
 * older ones (files opened without an OPEN request keep their cache) are
 * dropped first, and only then does the ctime move to the current one, so
 * a reader that waits for a ctime later than its reads never gets old
 * pages.
 */
void mp_fs_snap_settle(struct mp_fs *fs)
{
	struct mp_status_snap *snap = mp_snap_slot_get(&fs->snaps);
	long long ns;

	if (!snap)
		return;
	ns = mp_snap_ns(snap);
	mp_snap_put(snap);
	fuse_lowlevel_notify_inval_inode(fs->se, MP_INO_STATUS, 0, 0);
	fuse_lowlevel_notify_inval_inode(fs->se, fs->tree.metrics_ino, 0, 0);
	mp_snap_slot_settle(&fs->snaps, ns);
}

/* A new snapshot, served at once (mp_fs_snap_settle()). */
void mp_fs_snap_publish(struct mp_fs *fs)
{
	struct mp_error err = {0};

	if (mp_fs_snap_refresh(fs, &err))
		mp_fs_snap_settle(fs);
}
