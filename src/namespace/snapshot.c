/* snapshot.c - the status.json and metrics snapshots of a mount (snapshot.h). */
#include "config.h"

#include "namespace/snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "namespace/packstate.h"

static double ts_seconds(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

static struct mp_metrics_seal seal_counters(struct mp_sealcheck *seal)
{
	const struct mp_sealcheck_counters *c = &seal->count;
	struct mp_metrics_seal ms = {
		.enabled = true,
		.chunks = seal->layout->chunk_count,
		.checked = atomic_load_explicit(&c->checked, memory_order_relaxed),
		.checked_ahead = atomic_load_explicit(&c->checked_ahead, memory_order_relaxed),
		.failed = atomic_load_explicit(&c->failed, memory_order_relaxed),
		.bytes_hashed = atomic_load_explicit(&c->bytes_hashed, memory_order_relaxed),
		.bytes_served = atomic_load_explicit(&c->bytes_served, memory_order_relaxed),
	};
	size_t bytes;

	mp_chunkcache_stats(&seal->cache, &bytes, &ms.cache_hits, &ms.cache_misses);
	ms.cache_bytes = bytes;
	return ms;
}

void mp_snap_metrics_info(const struct mp_snap_source *src, const struct mp_snap_moment *m,
			  struct mp_metrics_info *mi)
{
	const struct mp_status_info *st = src->status;
	const struct mp_status_change *change = &m->change;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	*mi = (struct mp_metrics_info){
		.mountpoint = st->mountpoint,
		.pack = st->pack_path,
		.verify = st->verify,
		.dequant = st->dequant,
		/* a pack that fails validation is never mounted */
		.validation_ok = true,
		.pack_changed = change->changed,
		.state_changed_at = change->changed ? ts_seconds(&change->detected_at)
						    : (double)st->mounted_at,
		.start_time = (double)st->mounted_at,
		.uptime = ts_seconds(&now) - ts_seconds(src->started),
		.rss_bytes = mp_metrics_rss_bytes(),
		.layer_ids = st->layer_ids,
		.scan = src->scan,
		.file_writes = m->file_writes,
		.file_write_errors = m->file_write_errors,
		.remote = m->remote,
	};
	if (mi->uptime < 0)
		mi->uptime = 0;
	if (src->seal)
		mi->seal = seal_counters(src->seal);
	if (st->storage) {
		mi->storage.known = true;
		mi->storage.direct = st->storage->direct_fd >= 0;
		mi->storage.uncached = st->storage->uncached;
		for (unsigned i = 0; i < MP_FILL_MODES; i++)
			mi->storage.bytes[i] = atomic_load_explicit(&st->storage->bytes[i],
								    memory_order_relaxed);
	}
}

/* status.json into a new snapshot, or NULL with *err set. */
static struct mp_status_snap *render_status(const struct mp_snap_source *src,
					    const struct mp_snap_moment *m,
					    struct mp_error *err)
{
	struct mp_status_info info = *src->status;
	struct mp_status_seal seal;
	struct mp_status_snap *snap;
	struct timespec at;
	char *text;
	size_t len;

	/* before any counter is read: whatever happened before `at` is in */
	clock_gettime(CLOCK_REALTIME, &at);
	info.change = &m->change;
	info.lease = mp_lease_name(m->lease);
	info.lease_reason = m->lease_reason;
	info.ndaemon_warnings = m->nwarnings;
	info.daemon_warnings = m->warnings;
	info.max_len = mp_stats_max_len(src->stats->layer_count);
	info.remote = m->remote;
	if (src->seal && info.seal) {
		seal = *info.seal;
		seal.cache_budget = src->seal->cache.budget;
		mp_chunkcache_stats(&src->seal->cache, &seal.cache_bytes, &seal.cache_hits,
				    &seal.cache_misses);
		info.seal = &seal;
	}
	if (mp_stats_render(src->stats, &info, &text, &len, err))
		return NULL;
	snap = calloc(1, sizeof *snap);
	if (!snap) {
		free(text);
		mp_fail(err, MP_E_NOMEM, "out of memory: status.json");
		return NULL;
	}
	atomic_init(&snap->refs, 1);
	snap->at = at;
	snap->text = text;
	snap->text_len = len;
	return snap;
}

struct mp_status_snap *mp_snap_render(const struct mp_snap_source *src,
				      const struct mp_snap_moment *m, struct mp_error *err)
{
	struct mp_status_snap *snap = render_status(src, m, err);
	struct mp_metrics_info mi;

	if (!snap)
		return NULL;
	/* the same moment: counters read right after status.json's */
	mp_snap_metrics_info(src, m, &mi);
	if (mp_metrics_render(src->stats, src->metrics, &mi,
			      mp_metrics_max_len(src->stats->layer_count), &snap->metrics,
			      &snap->metrics_len, err)) {
		mp_snap_put(snap);
		return NULL;
	}
	return snap;
}

void mp_snap_get(struct mp_status_snap *snap)
{
	atomic_fetch_add(&snap->refs, 1);
}

void mp_snap_put(struct mp_status_snap *snap)
{
	if (snap && atomic_fetch_sub(&snap->refs, 1) == 1) {
		free(snap->text);
		free(snap->metrics);
		free(snap);
	}
}

bool mp_snap_slot_init(struct mp_snap_slot *slot)
{
	slot->cur = NULL;
	atomic_init(&slot->ns, 0);
	return pthread_mutex_init(&slot->lock, NULL) == 0;
}

void mp_snap_slot_destroy(struct mp_snap_slot *slot)
{
	mp_snap_put(slot->cur);
	slot->cur = NULL;
	pthread_mutex_destroy(&slot->lock);
}

long long mp_snap_ns(const struct mp_status_snap *snap)
{
	return (long long)snap->at.tv_sec * 1000000000LL + snap->at.tv_nsec;
}

void mp_snap_slot_set(struct mp_snap_slot *slot, struct mp_status_snap *snap)
{
	struct mp_status_snap *old;

	pthread_mutex_lock(&slot->lock);
	old = slot->cur;
	slot->cur = snap;
	if (!old) /* nothing of an older one was ever served */
		atomic_store(&slot->ns, mp_snap_ns(snap));
	pthread_mutex_unlock(&slot->lock);
	mp_snap_put(old);
}

void mp_snap_slot_settle(struct mp_snap_slot *slot, long long ns)
{
	long long seen = atomic_load(&slot->ns);

	while (seen < ns && !atomic_compare_exchange_weak(&slot->ns, &seen, ns))
		;
}

struct mp_status_snap *mp_snap_slot_get(struct mp_snap_slot *slot)
{
	struct mp_status_snap *snap;

	pthread_mutex_lock(&slot->lock);
	snap = slot->cur;
	if (snap)
		mp_snap_get(snap);
	pthread_mutex_unlock(&slot->lock);
	return snap;
}

long long mp_snap_slot_ns(const struct mp_snap_slot *slot)
{
	return atomic_load((atomic_llong *)&slot->ns);
}

void mp_snap_slot_lengths(struct mp_snap_slot *slot, uint64_t *status, uint64_t *metrics)
{
	pthread_mutex_lock(&slot->lock);
	*status = slot->cur ? slot->cur->text_len : 0;
	*metrics = slot->cur ? slot->cur->metrics_len : 0;
	pthread_mutex_unlock(&slot->lock);
}
