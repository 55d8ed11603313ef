/* metrics.c - sharded read counters and the Prometheus text report. */
#include "config.h"

#include "namespace/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/text.h"
#include "pack/digest.h"

static const char *const file_names[MP_MF_COUNT] = {
	[MP_MF_ROLE] = "role",
	[MP_MF_OBJECT] = "object",
	[MP_MF_PACK] = "pack",
	[MP_MF_F32] = "f32",
	[MP_MF_MANIFEST] = "manifest",
	[MP_MF_CLIENT_MANIFEST] = "client_manifest",
	[MP_MF_STATUS] = "status",
	[MP_MF_METRICS] = "metrics",
};

/*
 * The shard of the calling thread: threads' stacks lie at least a few MiB
 * apart (glibc's default is 8 MiB), so the stack address over 1 MiB,
 * mixed, spreads the FUSE threads over the shards without any per-thread
 * state.  Two threads in one shard are still counted right, only slower.
 */
static struct mp_metrics_shard *my_shard(struct mp_metrics *m)
{
	char here;
	uint64_t x = (uint64_t)(uintptr_t)&here >> 20;

	x ^= x >> 7;
	x *= 0x9e3779b97f4a7c15ull;
	return &m->shard[(x >> 59) % MP_METRICS_SHARDS].s;
}

static void add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static uint64_t load(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

void mp_metrics_count_read(struct mp_metrics *m, enum mp_metrics_file kind,
			   enum mp_role role, bool direct, uint64_t bytes)
{
	struct mp_metrics_shard *s = my_shard(m);

	if ((unsigned)kind >= MP_MF_COUNT)
		return;
	add(&s->reads[kind][direct], 1);
	add(&s->bytes[kind][direct], bytes);
	if (kind == MP_MF_ROLE && (unsigned)role < MP_ROLE_COUNT) {
		add(&s->role_reads[role], 1);
		add(&s->role_bytes[role], bytes);
	}
}

void mp_metrics_count_error(struct mp_metrics *m, int errnum)
{
	unsigned i = errnum > 0 && errnum < MP_METRICS_ERRNO_MAX ? (unsigned)errnum
								 : MP_METRICS_ERRNO_MAX;

	add(&m->errors[i], 1);
}

static uint64_t sum(const struct mp_metrics *m, size_t offset)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < MP_METRICS_SHARDS; i++)
		total += load((const _Atomic uint64_t *)(const void *)
			      ((const char *)&m->shard[i].s + offset));
	return total;
}

#define SUM(m, field) sum((m), offsetof(struct mp_metrics_shard, field))

uint64_t mp_metrics_reads(const struct mp_metrics *m, enum mp_metrics_file kind,
			  int direct)
{
	if (direct < 0)
		return SUM(m, reads[kind][0]) + SUM(m, reads[kind][1]);
	return direct ? SUM(m, reads[kind][1]) : SUM(m, reads[kind][0]);
}

uint64_t mp_metrics_bytes(const struct mp_metrics *m, enum mp_metrics_file kind,
			  int direct)
{
	if (direct < 0)
		return SUM(m, bytes[kind][0]) + SUM(m, bytes[kind][1]);
	return direct ? SUM(m, bytes[kind][1]) : SUM(m, bytes[kind][0]);
}

/* ---- the text report ------------------------------------------------------ */

struct out {
	char *buf;
	size_t cap, len;
	size_t max;           /* grows up to max bytes of text; 0: buf is fixed */
	bool full;            /* past max (or cap when fixed), or out of memory */
	bool nomem;
	const char *mount;    /* mountpoint="...",pack="...": on every sample */
};

/* Room for n more bytes and the NUL, doubling; false when past o->max. */
static bool grow(struct out *o, size_t n)
{
	size_t want = o->len + n + 1, cap = o->cap ? o->cap : 16384;
	char *bigger;

	if (!o->max || n > o->max - o->len)
		return false;
	while (cap < want)
		cap *= 2;
	if (cap > o->max + 1)
		cap = o->max + 1;
	bigger = realloc(o->buf, cap);
	if (!bigger) {
		o->nomem = true;
		return false;
	}
	o->buf = bigger;
	o->cap = cap;
	return true;
}

static void emit(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void emit(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf ? o->buf + o->len : NULL, o->buf ? o->cap - o->len : 0, fmt, ap);
	va_end(ap);
	if (n >= 0 && o->buf && (size_t)n < o->cap - o->len) {
		o->len += (size_t)n;
		return;
	}
	if (n < 0 || !grow(o, (size_t)n)) {
		o->full = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	o->len += (size_t)n;
}

/* HELP and TYPE of a family: names and help texts are constants here. */
static void family(struct out *o, const char *name, const char *type, const char *help)
{
	emit(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(struct out *o, const char *name, uint64_t v)
{
	emit(o, "%s{%s} %" PRIu64 "\n", name, o->mount, v);
}

/* A family of one sample without labels. */
static void series(struct out *o, const char *name, const char *type, const char *help,
		   uint64_t v)
{
	family(o, name, type, help);
	sample(o, name, v);
}

static void sample_f(struct out *o, const char *name, double v)
{
	emit(o, "%s{%s} %.3f\n", name, o->mount, v);
}

/* A label value: \, " and newline escaped as the format wants. */
static void label_value(char *dst, size_t cap, const char *s)
{
	size_t j = 0;

	for (; s && *s && j + 3 < cap; s++) {
		if (*s == '\\' || *s == '"') {
			dst[j++] = '\\';
			dst[j++] = *s;
		} else if (*s == '\n') {
			dst[j++] = '\\';
			dst[j++] = 'n';
		} else {
			dst[j++] = *s;
		}
	}
	dst[j] = '\0';
}

/*
 * A path as a label value: escaped as every path we print (control bytes
 * and bytes that are not UTF-8 as \xNN, which a label must not hold raw),
 * then as a label value; one longer than MP_METRICS_LABEL_MAX is cut (at
 * a character boundary) and ends in "..." and 16 hex digits of its
 * SHA-256, so that two long paths that share a beginning still label two
 * mounts apart.
 */
static void path_label(char *dst, size_t cap, const char *path)
{
	char shown[4 * MP_METRICS_LABEL_MAX + 64];
	size_t n = path ? strlen(path) : 0;

	mp_text_escape(shown, sizeof shown, path ? path : "", n, 0);
	if (strlen(shown) > MP_METRICS_LABEL_MAX) {
		unsigned char d[MP_SHA256_LEN];
		char hex[MP_SHA256_HEX];

		size_t cut = MP_METRICS_LABEL_MAX - 19;

		/* at a character boundary: a label must stay UTF-8 (shown is) */
		while (cut > 0 && ((unsigned char)shown[cut] & 0xc0) == 0x80)
			cut--;
		mp_sha256_buf(path, n, d);
		mp_sha256_hex(d, hex);
		snprintf(shown + cut, 20, "...%.16s", hex);
	}
	label_value(dst, cap, shown);
}

/* The labels of every sample: which mount, of which pack. */
static void mount_labels(char *buf, size_t cap, const struct mp_metrics_info *info)
{
	char mnt[2 * MP_METRICS_LABEL_MAX + 8], pack[2 * MP_METRICS_LABEL_MAX + 8];

	path_label(mnt, sizeof mnt, info->mountpoint);
	path_label(pack, sizeof pack, info->pack);
	snprintf(buf, cap, "mountpoint=\"%s\",pack=\"%s\"", mnt, pack);
}

static void sample_l(struct out *o, const char *name, const char *label,
		     const char *value, uint64_t v)
{
	char esc[128];

	label_value(esc, sizeof esc, value);
	emit(o, "%s{%s,%s=\"%s\"} %" PRIu64 "\n", name, o->mount, label, esc, v);
}

static void render_state(struct out *o, const struct mp_metrics_info *info)
{
	char verify[64];

	label_value(verify, sizeof verify, info->verify ? info->verify : "");
	family(o, "moepackfs_info", "gauge",
	       "Constant 1; labels: the package version, the -o verify mode and "
	       "whether -o dequant is on.");
	emit(o, "moepackfs_info{%s,version=\"%s\",verify=\"%s\",dequant=\"%s\"} 1\n",
	     o->mount, PACKAGE_VERSION, verify, info->dequant ? "true" : "false");
	series(o, "moepackfs_validation_ok", "gauge",
	       "1 while the validation the mount was made on holds for the bytes "
	       "served, 0 once it failed.",
	       info->validation_ok ? 1 : 0);
	series(o, "moepackfs_pack_changed", "gauge",
	       "1 once the pack file changed under the mount (every read of pack "
	       "bytes then fails with EIO), else 0.",
	       info->pack_changed ? 1 : 0);
	family(o, "moepackfs_pack_state_change_time_seconds", "gauge",
	       "Unix time of the last change of the pack state: the mount, or "
	       "when the change of the pack was detected.");
	sample_f(o, "moepackfs_pack_state_change_time_seconds", info->state_changed_at);
	family(o, "moepackfs_start_time_seconds", "gauge",
	       "Unix time the pack was mounted.");
	sample_f(o, "moepackfs_start_time_seconds", info->start_time);
	family(o, "moepackfs_uptime_seconds", "gauge", "Seconds since the pack was mounted.");
	sample_f(o, "moepackfs_uptime_seconds", info->uptime);
	series(o, "moepackfs_resident_memory_bytes", "gauge",
	       "Resident set size of the daemon (0: unknown).",
	       info->rss_bytes);
}

static void render_reads(struct out *o, const struct mp_metrics *m)
{
	static const char *const mode[2] = {"buffered", "direct"};

	family(o, "moepackfs_reads_total", "counter",
	       "Read requests, by kind of file and by mode: direct when the reader "
	       "opened the file with O_DIRECT, else buffered (page cache fills, "
	       "read-ahead, mmap faults).");
	for (unsigned k = 0; k < MP_MF_COUNT; k++)
		for (int d = 0; d < 2; d++)
			emit(o, "moepackfs_reads_total{%s,file=\"%s\",mode=\"%s\"} %" PRIu64
			     "\n", o->mount, file_names[k], mode[d], mp_metrics_reads(m, k, d));
	family(o, "moepackfs_read_bytes_total", "counter",
	       "Bytes asked for by read requests (the part inside the file), by "
	       "kind of file and by mode.");
	for (unsigned k = 0; k < MP_MF_COUNT; k++)
		for (int d = 0; d < 2; d++)
			emit(o, "moepackfs_read_bytes_total{%s,file=\"%s\",mode=\"%s\"} %" PRIu64
			     "\n", o->mount, file_names[k], mode[d], mp_metrics_bytes(m, k, d));
	family(o, "moepackfs_role_reads_total", "counter",
	       "Read requests of role files (up, gate, down), by role.");
	for (unsigned r = 0; r < MP_ROLE_COUNT; r++)
		sample_l(o, "moepackfs_role_reads_total", "role", mp_role_name(r),
			 SUM(m, role_reads[r]));
	family(o, "moepackfs_role_read_bytes_total", "counter",
	       "Bytes asked for by read requests of role files, by role.");
	for (unsigned r = 0; r < MP_ROLE_COUNT; r++)
		sample_l(o, "moepackfs_role_read_bytes_total", "role", mp_role_name(r),
			 SUM(m, role_bytes[r]));
}

static void render_layers(struct out *o, const struct mp_stats *stats,
			  const struct mp_metrics_info *info, bool brief)
{
	family(o, "moepackfs_metrics_truncated", "gauge",
	       "1 when the per-layer series are left out of this report, which would "
	       "otherwise be too long (moepackfs(1) METRICS), else 0.");
	sample(o, "moepackfs_metrics_truncated", brief ? 1 : 0);
	if (brief)
		return;
	family(o, "moepackfs_layer_reads_total", "counter",
	       "Read requests of role, object and .f32 files, by layer id.");
	for (uint64_t i = 0; i < stats->layer_count; i++)
		emit(o, "moepackfs_layer_reads_total{%s,layer=\"%" PRIu32 "\"} %" PRIu64 "\n",
		     o->mount, info->layer_ids[i], load(&stats->layer_reads[i]));
	family(o, "moepackfs_layer_read_bytes_total", "counter",
	       "Pack bytes read for role, object and .f32 files (for .f32, the "
	       "quantized bytes decoded), by layer id.");
	for (uint64_t i = 0; i < stats->layer_count; i++)
		emit(o, "moepackfs_layer_read_bytes_total{%s,layer=\"%" PRIu32 "\"} %" PRIu64
		     "\n", o->mount, info->layer_ids[i], load(&stats->layer_bytes[i]));
}

static const char *errno_name(int e, char *buf, size_t len)
{
	const char *name = e < MP_METRICS_ERRNO_MAX ? strerrorname_np(e) : NULL;

	if (e >= MP_METRICS_ERRNO_MAX)
		return "other";
	if (!name) {
		snprintf(buf, len, "%d", e);
		return buf;
	}
	return name;
}

static void render_errors(struct out *o, const struct mp_stats *stats,
			  const struct mp_metrics *m)
{
	family(o, "moepackfs_read_errors_total", "counter",
	       "Read requests answered with an error, by errno name (EIO and "
	       "ENOMEM always, others once seen).");
	for (int e = 1; e <= MP_METRICS_ERRNO_MAX; e++) {
		uint64_t v = load(&m->errors[e < MP_METRICS_ERRNO_MAX ? e
						 : MP_METRICS_ERRNO_MAX]);
		char num[16];

		if (v || e == EIO || e == ENOMEM)
			sample_l(o, "moepackfs_read_errors_total", "errno",
				 errno_name(e, num, sizeof num), v);
	}
	family(o, "moepackfs_replies_total", "counter",
	       "Replies with pack bytes: spliced from the pack's page cache, or "
	       "copied (small reads, .f32 files).");
	sample_l(o, "moepackfs_replies_total", "method", "splice",
		 load(&stats->splice_replies));
	sample_l(o, "moepackfs_replies_total", "method", "copy",
		 load(&stats->copy_replies));
}

static void render_scan(struct out *o, const struct mp_metrics_scan *scan)
{
	struct mp_metrics_scan none = {0};

	if (!scan)
		scan = &none;
	series(o, "moepackfs_payload_scan_enabled", "gauge",
	       "1 when the payload scan (-o verify=payload) ran before mounting.",
	       scan->ran ? 1 : 0);
	series(o, "moepackfs_payload_scan_experts_total", "counter",
	       "Experts the payload scan checked.",
	       scan->experts);
	series(o, "moepackfs_payload_scan_roles_total", "counter",
	       "Roles the payload scan checked.",
	       scan->roles);
	series(o, "moepackfs_payload_scan_blocks_total", "counter",
	       "Super-blocks whose scales the payload scan decoded.",
	       scan->blocks);
	series(o, "moepackfs_payload_scan_read_bytes_total", "counter",
	       "Bytes the payload scan read.",
	       scan->bytes_read);
	series(o, "moepackfs_payload_scan_problems_total", "counter",
	       "Problems the payload scan found (a mount refuses any, so 0).",
	       scan->problems);
}

/* The seal check's series (-o verify=seal only), documented in
 * moepackfs(1) METRICS. */
static void render_seal(struct out *o, const struct mp_metrics_seal *seal)
{
	if (!seal->enabled)
		return;
	series(o, "moepackfs_seal_chunks", "gauge",
	       "Chunks listed in the pack's seal.",
	       seal->chunks);
	series(o, "moepackfs_seal_chunks_checked_total", "counter",
	       "Chunks read from storage and hashed, good or bad (every fill).",
	       seal->checked);
	series(o, "moepackfs_seal_chunks_checked_ahead_total", "counter",
	       "Of those, chunks checked ahead of a sequential reader (-o seal_ahead).",
	       seal->checked_ahead);
	series(o, "moepackfs_seal_chunks_failed_total", "counter",
	       "Chunks whose bytes differ from their sealed digest.",
	       seal->failed);
	series(o, "moepackfs_seal_hashed_bytes_total", "counter",
	       "Bytes hashed to check chunks against the seal.",
	       seal->bytes_hashed);
	series(o, "moepackfs_seal_served_bytes_total", "counter",
	       "Pack bytes served under the seal, every one of them checked.",
	       seal->bytes_served);
	series(o, "moepackfs_seal_cache_bytes", "gauge",
	       "Bytes held by the cache of checked chunks (-o seal_cache_mb).",
	       seal->cache_bytes);
	series(o, "moepackfs_seal_cache_hits_total", "counter",
	       "Chunks a request took from the cache, checked by another one.",
	       seal->cache_hits);
	series(o, "moepackfs_seal_cache_misses_total", "counter",
	       "Chunks a request had to read from storage and check itself.",
	       seal->cache_misses);
}

/* Reads of the pack from storage (moepackfs(1) METRICS). */
static void render_storage(struct out *o, const struct mp_metrics_storage *st)
{
	if (!st->known)
		return;
	series(o, "moepackfs_storage_direct", "gauge",
	       "1 when O_DIRECT readers are served by O_DIRECT reads of the pack, "
	       "0 when they fall back to buffered reads.",
	       st->direct ? 1 : 0);
	series(o, "moepackfs_storage_uncached", "gauge",
	       "1 when buffered fills read the pack without caching it (RWF_DONTCACHE).",
	       st->uncached ? 1 : 0);
	family(o, "moepackfs_storage_read_bytes_total", "counter",
	       "Pack bytes the daemon read from storage, by way: direct (O_DIRECT), "
	       "uncached (RWF_DONTCACHE) or buffered.");
	for (unsigned m = 0; m < MP_FILL_MODES; m++)
		sample_l(o, "moepackfs_storage_read_bytes_total", "mode", mp_fill_mode_name(m),
			 st->bytes[m]);
}

/* A pack from its mirrors (moepackfs SOURCE ... -o cache=DIR) only. */
static void render_remote(struct out *o, const struct mp_status_remote *r)
{
	if (!r)
		return;
	series(o, "moepackfs_remote_chunks", "gauge", "Chunks of the pack's seal.", r->chunks);
	series(o, "moepackfs_remote_chunks_local", "gauge",
	       "Chunks checked and written into the cache file so far.", r->chunks_local);
	series(o, "moepackfs_remote_bytes_local", "gauge",
	       "Bytes of those chunks (the fill's progress against the pack size).",
	       r->bytes_local);
	series(o, "moepackfs_remote_fill_complete", "gauge",
	       "1 once the cache file is the whole pack, renamed into place.",
	       r->complete ? 1 : 0);
	series(o, "moepackfs_remote_chunks_fetched_total", "counter",
	       "Chunks fetched from mirrors that matched the seal.", r->chunks_fetched);
	series(o, "moepackfs_remote_chunks_refetched_total", "counter",
	       "Chunks asked for again after a mirror sent bytes the seal refused.",
	       r->chunks_refetched);
	series(o, "moepackfs_remote_demand_waits_total", "counter",
	       "Reads that waited for a chunk to be fetched.", r->demand_waits);
	series(o, "moepackfs_remote_demand_failed_total", "counter",
	       "Of those, reads that failed with EIO (no mirror in -o remote_timeout).",
	       r->demand_failed);
	family(o, "moepackfs_remote_demand_wait_seconds", "gauge",
	       "A read's wait for its chunk, p50 and p99 (upper bound of its bucket).");
	emit(o, "moepackfs_remote_demand_wait_seconds{%s,quantile=\"0.5\"} %.6f\n", o->mount,
	     r->demand_p50);
	emit(o, "moepackfs_remote_demand_wait_seconds{%s,quantile=\"0.99\"} %.6f\n", o->mount,
	     r->demand_p99);
	family(o, "moepackfs_remote_mirror_bytes_total", "counter", "Bytes each mirror sent.");
	for (unsigned i = 0; i < r->nmirrors; i++)
		sample_l(o, "moepackfs_remote_mirror_bytes_total", "mirror", r->mirrors[i].source,
			 r->mirrors[i].bytes);
	family(o, "moepackfs_remote_mirror_failures_total", "counter",
	       "Requests to each mirror that failed, and chunks it sent that the seal refused.");
	for (unsigned i = 0; i < r->nmirrors; i++)
		sample_l(o, "moepackfs_remote_mirror_failures_total", "mirror",
			 r->mirrors[i].source, r->mirrors[i].failures + r->mirrors[i].chunks_bad);
}

static void render_file(struct out *o, const struct mp_metrics_info *info)
{
	series(o, "moepackfs_metrics_file_writes_total", "counter",
	       "Rewrites of the -o metrics_file file.",
	       info->file_writes);
	series(o, "moepackfs_metrics_file_write_errors_total", "counter",
	       "Rewrites of the -o metrics_file file that failed.",
	       info->file_write_errors);
}

/* One report into o (brief: without the per-layer series). */
static void render_all(struct out *o, const struct mp_stats *stats, const struct mp_metrics *m,
		       const struct mp_metrics_info *info, bool brief)
{
	render_state(o, info);
	render_reads(o, m);
	render_layers(o, stats, info, brief);
	render_errors(o, stats, m);
	render_scan(o, info->scan);
	render_seal(o, &info->seal);
	render_storage(o, &info->storage);
	render_remote(o, info->remote);
	render_file(o, info);
}

size_t mp_metrics_max_len(uint64_t layer_count)
{
	return MP_METRICS_FIXED_MAX + (size_t)layer_count * 2 * MP_METRICS_LAYER_LINE_MAX;
}

enum mp_err mp_metrics_render(const struct mp_stats *stats, const struct mp_metrics *m,
			      const struct mp_metrics_info *info, size_t max_len, char **text,
			      size_t *len, struct mp_error *err)
{
	char mount[4 * MP_METRICS_LABEL_MAX + 64];
	struct out o = {.max = max_len, .mount = mount};

	*text = NULL;
	*len = 0;
	mount_labels(mount, sizeof mount, info);
	render_all(&o, stats, m, info, false);
	if (o.full && !o.nomem) {
		o.len = 0;
		o.full = false;
		render_all(&o, stats, m, info, true);
	}
	if (o.full || !o.buf) {
		free(o.buf);
		if (o.nomem)
			return mp_fail(err, MP_E_NOMEM, "out of memory: rendering the metrics");
		return mp_fail(err, MP_E_NOMEM, "metrics do not fit in %zu bytes", max_len);
	}
	*text = o.buf;
	*len = o.len;
	return MP_OK;
}

size_t mp_metrics_expert_reads(const struct mp_stats *stats, uint64_t layer_index,
			       char *buf, size_t cap)
{
	struct out o = {.buf = buf, .cap = cap};

	if (cap == 0 || layer_index >= stats->layer_count)
		return 0;
	buf[0] = '\0';
	for (uint64_t e = 0; e < stats->num_experts; e++)
		emit(&o, "%s%" PRIu64, e ? " " : "",
		     load(&stats->object_reads[layer_index * stats->num_experts + e]));
	return o.full ? 0 : o.len;
}

uint64_t mp_metrics_rss_bytes(void)
{
	unsigned long long size = 0, resident = 0;
	long page = sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/proc/self/statm", "re");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%llu %llu", &size, &resident);
	fclose(f);
	if (n != 2 || page <= 0)
		return 0;
	return (uint64_t)resident * (uint64_t)page;
}
