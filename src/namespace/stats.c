/* stats.c - lock-free read counters and the status.json report. */
#include "config.h"

#include "namespace/stats.h"

#include "base/jsonstr.h"
#include "base/text.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum mp_err mp_stats_init(struct mp_stats *stats, uint64_t layer_count,
			  uint64_t num_experts, struct mp_error *err)
{
	uint64_t objects, total;

	memset(stats, 0, sizeof *stats);
	if (num_experts != 0 && layer_count > UINT64_MAX / num_experts)
		return mp_fail(err, MP_E_NOMEM, "out of memory: %" PRIu64
			       " x %" PRIu64 " read counters", layer_count,
			       num_experts);
	objects = layer_count * num_experts;
	total = 2 * layer_count + objects;
	if (total < objects || total > SIZE_MAX / sizeof(_Atomic uint64_t))
		return mp_fail(err, MP_E_NOMEM, "out of memory: %" PRIu64
			       " read counters", total);

	/* One block: calloc's zero bytes are valid zero atomics on Linux. */
	stats->layer_reads = calloc(total ? total : 1, sizeof(_Atomic uint64_t));
	if (!stats->layer_reads)
		return mp_fail(err, MP_E_NOMEM, "out of memory: %" PRIu64
			       " read counters", total);
	stats->layer_bytes = stats->layer_reads + layer_count;
	stats->object_reads = stats->layer_bytes + layer_count;
	stats->layer_count = layer_count;
	stats->num_experts = num_experts;
	return MP_OK;
}

void mp_stats_free(struct mp_stats *stats)
{
	free(stats->layer_reads);
	memset(stats, 0, sizeof *stats);
}

void mp_stats_count_object(struct mp_stats *stats, uint64_t object, uint64_t bytes)
{
	uint64_t layer = object / stats->num_experts;

	atomic_fetch_add_explicit(&stats->object_reads[object], 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&stats->layer_reads[layer], 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&stats->layer_bytes[layer], bytes,
				  memory_order_relaxed);
}

void mp_stats_count_pack(struct mp_stats *stats, uint64_t bytes)
{
	atomic_fetch_add_explicit(&stats->pack_reads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&stats->pack_bytes, bytes, memory_order_relaxed);
}

void mp_stats_count_error(struct mp_stats *stats)
{
	atomic_fetch_add_explicit(&stats->read_errors, 1, memory_order_relaxed);
}

void mp_stats_count_reply(struct mp_stats *stats, bool spliced)
{
	atomic_fetch_add_explicit(spliced ? &stats->splice_replies : &stats->copy_replies,
				  1, memory_order_relaxed);
}

void mp_iso8601_utc(time_t t, char *buf, size_t len)
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, len, "%s", "1970-01-01T00:00:00Z");
}

void mp_iso8601_utc_ns(const struct timespec *t, char *buf, size_t len)
{
	char sec[32];

	mp_iso8601_utc(t->tv_sec, sec, sizeof sec);
	/* "...:SS" then ".nnnnnnnnnZ" in place of the "Z" */
	snprintf(buf, len, "%.*s.%09ldZ", (int)strlen(sec) - 1, sec,
		 t->tv_nsec >= 0 && t->tv_nsec < 1000000000L ? t->tv_nsec : 0L);
}

static uint64_t load(const _Atomic uint64_t *counter)
{
	return atomic_load_explicit(counter, memory_order_relaxed);
}

struct hot {
	uint64_t object;
	uint64_t reads;
};

/* Keep hot[0..*n) sorted by reads descending, then object ascending. */
static void consider(struct hot *hot, unsigned *n, unsigned cap, uint64_t object,
		     uint64_t reads)
{
	unsigned i;

	if (reads == 0 || cap == 0)
		return;
	if (*n == cap && hot[cap - 1].reads >= reads)
		return; /* objects arrive in ascending order: ties keep the first */
	i = *n < cap ? (*n)++ : cap - 1;
	while (i > 0 && hot[i - 1].reads < reads) {
		hot[i] = hot[i - 1];
		i--;
	}
	hot[i].object = object;
	hot[i].reads = reads;
}

/* json_object_set_new that remembers a failure instead of checking each. */
static void put(json_t *obj, const char *key, json_t *value, bool *ok)
{
	if (!value || json_object_set_new(obj, key, value) != 0)
		*ok = false;
}

static void append(json_t *arr, json_t *value, bool *ok)
{
	if (!value || json_array_append_new(arr, value) != 0)
		*ok = false;
}

static json_t *jint(uint64_t v)
{
	/* Counters stay far below 2^63 in practice; clamp rather than wrap. */
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *jstr(const char *s)
{
	return json_string(s ? s : "");
}

static json_t *render_layers(const struct mp_stats *stats,
			     const struct mp_status_info *info, uint64_t *reads,
			     uint64_t *bytes, bool *ok)
{
	json_t *layers = json_array();

	if (!layers) {
		*ok = false;
		return NULL;
	}
	for (uint64_t i = 0; i < stats->layer_count; i++) {
		json_t *row = json_object();
		uint64_t r = load(&stats->layer_reads[i]);
		uint64_t b = load(&stats->layer_bytes[i]);

		if (!row) {
			*ok = false;
			break;
		}
		put(row, "layer", jint(info->layer_ids[i]), ok);
		put(row, "reads", jint(r), ok);
		put(row, "bytes", jint(b), ok);
		append(layers, row, ok);
		*reads += r;
		*bytes += b;
	}
	return layers;
}

static json_t *render_hottest(const struct mp_stats *stats,
			      const struct mp_status_info *info, bool *ok)
{
	struct hot hot[MP_STATUS_HOTTEST_MAX];
	unsigned n = 0, cap = info->hottest;
	uint64_t objects = stats->layer_count * stats->num_experts;
	json_t *arr = json_array();

	if (!arr) {
		*ok = false;
		return NULL;
	}
	if (cap > MP_STATUS_HOTTEST_MAX)
		cap = MP_STATUS_HOTTEST_MAX;
	for (uint64_t o = 0; o < objects; o++)
		consider(hot, &n, cap, o, load(&stats->object_reads[o]));
	for (unsigned i = 0; i < n; i++) {
		json_t *row = json_object();

		if (!row) {
			*ok = false;
			break;
		}
		put(row, "layer",
		    jint(info->layer_ids[hot[i].object / stats->num_experts]), ok);
		put(row, "expert", jint(hot[i].object % stats->num_experts), ok);
		put(row, "reads", jint(hot[i].reads), ok);
		append(arr, row, ok);
	}
	return arr;
}

/* Untrusted bytes (non-UTF-8 paths, odd warnings) as a bounded JSON string. */
static json_t *jtext(const char *s, size_t cap)
{
	char buf[MP_STATUS_PATH_MAX > MP_MSG_MAX ? MP_STATUS_PATH_MAX : MP_MSG_MAX];

	if (cap > sizeof buf)
		cap = sizeof buf;
	s = s ? s : "";
	mp_text_escape(buf, cap, s, strlen(s), 0);
	return json_string(buf);
}

static json_t *jtime(const struct timespec *t)
{
	char buf[40];

	mp_iso8601_utc_ns(t, buf, sizeof buf);
	return json_string(buf);
}

static json_t *render_change(const struct mp_status_change *c, bool *ok)
{
	json_t *obj;

	if (!c || !c->changed)
		return json_null();
	obj = json_object();
	if (!obj) {
		*ok = false;
		return NULL;
	}
	/* "lease": a writer opened (or truncated) the pack, before it wrote */
	put(obj, "cause", jstr(c->lease_break ? "lease" : "stat"), ok);
	put(obj, "old_size", jint(c->old_size), ok);
	put(obj, "new_size", jint(c->new_size), ok);
	put(obj, "old_mtime", jtime(&c->old_mtime), ok);
	put(obj, "new_mtime", jtime(&c->new_mtime), ok);
	put(obj, "old_ctime", jtime(&c->old_ctime), ok);
	put(obj, "new_ctime", jtime(&c->new_ctime), ok);
	put(obj, "detected_at", jtime(&c->detected_at), ok);
	return obj;
}

static json_t *render_lease(const struct mp_status_info *info, bool *ok)
{
	json_t *obj = json_object();

	if (!obj) {
		*ok = false;
		return NULL;
	}
	put(obj, "state", jstr(info->lease ? info->lease : "none"), ok);
	put(obj, "reason", info->lease_reason && info->lease_reason[0]
		? jtext(info->lease_reason, MP_MSG_MAX) : json_null(), ok);
	return obj;
}

static json_t *render_seal(const struct mp_status_seal *s, bool *ok)
{
	json_t *obj;

	if (!s)
		return json_null();
	obj = json_object();
	if (!obj) {
		*ok = false;
		return NULL;
	}
	put(obj, "from", jstr(s->from_index ? "index" : "seal"), ok);
	put(obj, "seal_digest", s->seal_digest ? jtext(s->seal_digest, 128) : json_null(), ok);
	put(obj, "anchored", json_boolean(s->anchored), ok);
	put(obj, "anchored_claim", json_boolean(s->anchored_claim), ok);
	put(obj, "trusted", json_boolean(s->trusted), ok);
	put(obj, "chunk_size", jint(s->chunk_size), ok);
	put(obj, "chunks", jint(s->chunk_count), ok);
	put(obj, "chunks_checked", jint(load(s->checked)), ok);
	put(obj, "chunks_checked_ahead", jint(load(s->checked_ahead)), ok);
	put(obj, "chunks_failed", jint(load(s->failed)), ok);
	put(obj, "bytes_hashed", jint(load(s->bytes_hashed)), ok);
	put(obj, "bytes_served", jint(s->bytes_served ? load(s->bytes_served) : 0), ok);
	put(obj, "cache_budget", jint(s->cache_budget), ok);
	put(obj, "cache_bytes", jint(s->cache_bytes), ok);
	put(obj, "cache_hits", jint(s->cache_hits), ok);
	put(obj, "cache_misses", jint(s->cache_misses), ok);
	return obj;
}

static json_t *render_remote_mirror(const struct mp_status_remote_mirror *m, bool *ok)
{
	json_t *obj = json_object();

	if (!obj) {
		*ok = false;
		return NULL;
	}
	put(obj, "source", jtext(m->source, MP_STATUS_PATH_MAX), ok);
	put(obj, "bytes", jint(m->bytes), ok);
	put(obj, "failures", jint(m->failures), ok);
	put(obj, "chunks_good", jint(m->chunks_good), ok);
	put(obj, "chunks_bad", jint(m->chunks_bad), ok);
	put(obj, "dropped", json_boolean(m->dropped), ok);
	put(obj, "liar", json_boolean(m->liar), ok);
	return obj;
}

/* A pack from its mirrors: the fill, the readers' waits, each mirror. */
static json_t *render_remote(const struct mp_status_remote *r, bool *ok)
{
	json_t *obj, *mirrors;

	if (!r)
		return json_null();
	obj = json_object();
	mirrors = json_array();
	if (!obj || !mirrors) {
		json_decref(obj);
		json_decref(mirrors);
		*ok = false;
		return NULL;
	}
	put(obj, "source", jtext(r->source, MP_STATUS_PATH_MAX), ok);
	put(obj, "cache", jtext(r->cache_path, MP_STATUS_PATH_MAX), ok);
	put(obj, "fill", json_boolean(r->fill), ok);
	put(obj, "complete", json_boolean(r->complete), ok);
	put(obj, "chunks", jint(r->chunks), ok);
	put(obj, "chunks_local", jint(r->chunks_local), ok);
	put(obj, "bytes_local", jint(r->bytes_local), ok);
	put(obj, "pack_size", jint(r->pack_size), ok);
	put(obj, "chunks_fetched", jint(r->chunks_fetched), ok);
	put(obj, "chunks_refetched", jint(r->chunks_refetched), ok);
	put(obj, "chunks_kept", jint(r->chunks_kept), ok);
	put(obj, "bytes_fetched", jint(r->bytes_fetched), ok);
	put(obj, "demand_waits", jint(r->demand_waits), ok);
	put(obj, "demand_failed", jint(r->demand_failed), ok);
	put(obj, "demand_wait_p50_seconds", json_real(r->demand_p50), ok);
	put(obj, "demand_wait_p99_seconds", json_real(r->demand_p99), ok);
	for (unsigned i = 0; i < r->nmirrors && i < MP_STATUS_REMOTE_MIRRORS; i++)
		if (json_array_append_new(mirrors, render_remote_mirror(&r->mirrors[i], ok)))
			*ok = false;
	put(obj, "mirrors", mirrors, ok);
	return obj;
}

/* How pack bytes come from storage: which ways work, and bytes read each way. */
static json_t *render_storage(const struct mp_storage *st, bool *ok)
{
	json_t *obj, *bytes;

	if (!st)
		return json_null();
	obj = json_object();
	bytes = json_object();
	if (!obj || !bytes) {
		json_decref(obj);
		json_decref(bytes);
		*ok = false;
		return NULL;
	}
	put(obj, "direct", json_boolean(st->direct_fd >= 0), ok);
	put(obj, "direct_fallback", st->direct_why[0] ? jtext(st->direct_why, MP_MSG_MAX)
						     : json_null(), ok);
	put(obj, "uncached", json_boolean(st->uncached), ok);
	put(obj, "uncached_fallback", st->uncached_why[0]
		? jtext(st->uncached_why, MP_MSG_MAX) : json_null(), ok);
	for (unsigned m = 0; m < MP_FILL_MODES; m++)
		put(bytes, mp_fill_mode_name(m), jint(load(&st->bytes[m])), ok);
	put(obj, "bytes_read", bytes, ok);
	return obj;
}

static void put_totals(json_t *root, const struct mp_stats *stats, uint64_t reads,
		       uint64_t bytes, bool *ok)
{
	json_t *totals = json_object();

	if (!totals) {
		*ok = false;
		return;
	}
	put(totals, "reads", jint(reads), ok);
	put(totals, "bytes", jint(bytes), ok);
	put(totals, "pack_file_reads", jint(load(&stats->pack_reads)), ok);
	put(totals, "pack_file_bytes", jint(load(&stats->pack_bytes)), ok);
	put(totals, "read_errors", jint(load(&stats->read_errors)), ok);
	put(totals, "splice_replies", jint(load(&stats->splice_replies)), ok);
	put(totals, "copy_replies", jint(load(&stats->copy_replies)), ok);
	put(root, "counters", totals, ok);
}

/* The pack's warnings, then the daemon's. */
static json_t *render_warnings(const struct mp_status_info *info, bool *ok)
{
	json_t *warnings = json_array();

	if (!warnings)
		*ok = false;
	for (unsigned i = 0; *ok && i < info->nwarnings; i++)
		append(warnings, jtext(info->warnings[i], MP_MSG_MAX), ok);
	for (unsigned i = 0; *ok && i < info->ndaemon_warnings &&
			     i < MP_STATUS_DAEMON_WARNINGS; i++)
		append(warnings, jtext(info->daemon_warnings[i], MP_MSG_MAX), ok);
	return warnings;
}

static json_t *render_fuse(const struct mp_status_info *info, bool *ok)
{
	json_t *fuse = json_object();

	if (!fuse) {
		*ok = false;
		return NULL;
	}
	put(fuse, "max_request", jint(info->max_request), ok);
	put(fuse, "readahead_kb", info->readahead_kb < 0
		? json_null() : jint((uint64_t)info->readahead_kb), ok);
	put(fuse, "splice_write", json_boolean(info->splice_write), ok);
	put(fuse, "max_threads", jint(info->max_threads), ok);
	put(fuse, "max_background", jint(info->max_background), ok);
	put(fuse, "export_support", json_boolean(info->export_support), ok);
	return fuse;
}

/* The head of the report: validation, the pack's state, what was checked. */
static void put_state(json_t *root, const struct mp_status_info *info, bool brief,
		      size_t full_len, bool *ok)
{
	bool changed = info->change && info->change->changed;
	char gen[24];

	/* A u64 does not survive every JSON reader as a number: give text. */
	snprintf(gen, sizeof gen, "%" PRIu64, info->inode_generation);
	put(root, "validation", jstr("ok"), ok);
	if (brief) {
		char reason[128];

		snprintf(reason, sizeof reason,
			 "the full report (%zu bytes) does not fit in %zu bytes",
			 full_len, info->max_len);
		put(root, "truncated", json_true(), ok);
		put(root, "truncated_reason", jstr(reason), ok);
	}
	put(root, "pack_state", jstr(changed ? "changed" : "ok"), ok);
	put(root, "pack_change", render_change(info->change, ok), ok);
	put(root, "lease", render_lease(info, ok), ok);
	put(root, "seal", render_seal(info->seal, ok), ok);
	put(root, "remote", render_remote(info->remote, ok), ok);
	put(root, "verify", jstr(info->verify), ok);
	put(root, "full_digest_checked", json_boolean(info->full_digest_checked), ok);
	put(root, "dequant", json_boolean(info->dequant), ok);
	put(root, "index_sha256", jtext(info->index_sha256, 128), ok);
	put(root, "generation", jstr(gen), ok);
}

static void put_paths(json_t *root, const struct mp_status_info *info, bool *ok)
{
	put(root, "pack", jtext(info->pack_path, MP_STATUS_PATH_MAX), ok);
	put(root, "manifest", jtext(info->manifest_path, MP_STATUS_PATH_MAX), ok);
	put(root, "mountpoint", jtext(info->mountpoint, MP_STATUS_PATH_MAX), ok);
}

/*
 * The report as JSON text, or NULL when out of memory.  `brief`: without
 * the parts that grow with the pack (layers, hottest experts, paths,
 * warnings), marked "truncated".
 */
static char *render_text(const struct mp_stats *stats, const struct mp_status_info *info,
			 bool brief, size_t full_len)
{
	char when[32];
	uint64_t reads = 0, bytes = 0;
	bool ok = true;
	json_t *root = json_object(), *fuse = render_fuse(info, &ok);
	json_t *layers, *hottest = NULL, *warnings = NULL;
	char *text = NULL;

	mp_iso8601_utc(info->mounted_at, when, sizeof when);
	/* The sums over layers are wanted by the brief report too. */
	layers = render_layers(stats, info, &reads, &bytes, &ok);
	if (!brief) {
		hottest = render_hottest(stats, info, &ok);
		warnings = render_warnings(info, &ok);
	}
	if (!root)
		ok = false;
	if (ok) {
		put_state(root, info, brief, full_len, &ok);
		if (!brief)
			put_paths(root, info, &ok);
		put(root, "mounted_at", jstr(when), &ok);
		if (!brief)
			put(root, "warnings", json_incref(warnings), &ok);
		put_totals(root, stats, reads, bytes, &ok);
		put(root, "fuse", json_incref(fuse), &ok);
		put(root, "storage", render_storage(info->storage, &ok), &ok);
		if (!brief) {
			put(root, "layers", json_incref(layers), &ok);
			put(root, "hottest_experts", json_incref(hottest), &ok);
		}
	}
	if (ok)
		text = mp_json_dump_line(root, JSON_INDENT(2));
	json_decref(root);
	json_decref(warnings);
	json_decref(fuse);
	json_decref(layers);
	json_decref(hottest);
	return text;
}

size_t mp_stats_max_len(uint64_t layer_count)
{
	return MP_STATUS_FILE_SIZE + (size_t)layer_count * MP_STATUS_LAYER_MAX;
}

enum mp_err mp_stats_render(const struct mp_stats *stats,
			    const struct mp_status_info *info, char **out,
			    size_t *len, struct mp_error *err)
{
	char *text;

	*out = NULL;
	*len = 0;
	text = render_text(stats, info, false, 0);
	if (text && info->max_len && strlen(text) > info->max_len) {
		size_t full = strlen(text);

		free(text);
		text = render_text(stats, info, true, full);
		/* Nothing in the brief report grows: only a tiny limit fails. */
		if (text && strlen(text) > info->max_len) {
			free(text);
			return mp_fail(err, MP_E_NOMEM, "status.json does not fit in %zu "
				       "bytes", info->max_len);
		}
	}
	if (!text)
		return mp_fail(err, MP_E_NOMEM, "out of memory: rendering status.json");
	*len = strlen(text);
	*out = text;
	return MP_OK;
}
