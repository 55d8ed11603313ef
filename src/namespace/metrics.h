/*
 * metrics.h - the Prometheus report of a mount: MOUNT/metrics and the file
 * of -o metrics_file.
 *
 * Counting.  The read path calls mp_metrics_count_read() once per read
 * request: a few relaxed atomic additions into one of MP_METRICS_SHARDS
 * cache-line-aligned shards, chosen from the calling thread's stack
 * address, so that concurrent readers do not fight over one cache line and
 * nothing is locked.  Per-layer counts and the reply kinds stay in
 * mp_stats (stats.h), which status.json shares.
 *
 * Rendering.  mp_metrics_render() writes one report in the Prometheus text
 * exposition format 0.0.4: the format that Prometheus scrapes by default,
 * `promtool check metrics` lints and node_exporter's textfile collector
 * reads.  Not OpenMetrics 1.0: there a counter's TYPE line names the family
 * without "_total", which the 0.0.4 parsers of promtool and node_exporter
 * read as an untyped series without help (and promtool rejects); and
 * node_exporter skips a whole file with sample timestamps.  So: HELP and
 * TYPE for every family, counters named *_total, base units (bytes,
 * seconds), no timestamps, no "# EOF", labels only with a bounded set of
 * values (file kind, role, mode, layer, errno name; never an expert).
 * The caller renders it from one status snapshot (daemon/snapshots.c), so
 * status.json and metrics always agree.
 *
 * Pure code: no FUSE, no files written (daemon/metricsfile.c writes -o
 * metrics_file through base/outfile.h).
 */
#ifndef MOEPACK_METRICS_H
#define MOEPACK_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/pack.h"
#include "namespace/stats.h"

/* The kinds of files a read can be for: the label file="..." */
enum mp_metrics_file {
	MP_MF_ROLE,            /* layers/L/E/up, gate, down */
	MP_MF_OBJECT,          /* layers/L/E/object */
	MP_MF_PACK,            /* the whole-pack file */
	MP_MF_F32,             /* up.f32, gate.f32, down.f32 (-o dequant) */
	MP_MF_MANIFEST,        /* manifest.json */
	MP_MF_CLIENT_MANIFEST, /* <pack>.manifest.json */
	MP_MF_STATUS,          /* status.json */
	MP_MF_METRICS,         /* metrics */
	MP_MF_COUNT,
};

#define MP_METRICS_SHARDS 8
/* errno values below this are counted one by one; the rest as "other". */
#define MP_METRICS_ERRNO_MAX 160

struct mp_metrics_shard {
	/* [kind][0: buffered, 1: O_DIRECT] */
	_Atomic uint64_t reads[MP_MF_COUNT][2];
	_Atomic uint64_t bytes[MP_MF_COUNT][2];
	/* role files only, by role */
	_Atomic uint64_t role_reads[MP_ROLE_COUNT];
	_Atomic uint64_t role_bytes[MP_ROLE_COUNT];
};

/* Zero-initialised (memset or static) counters are ready to use. */
struct mp_metrics {
	_Alignas(64) struct {
		struct mp_metrics_shard s;
		char pad[64 - sizeof(struct mp_metrics_shard) % 64];
	} shard[MP_METRICS_SHARDS];
	_Atomic uint64_t errors[MP_METRICS_ERRNO_MAX + 1]; /* last: other */
};

/*
 * One read request for `bytes` bytes (the part of the request inside the
 * file) of a file of `kind`; `role` counts for MP_MF_ROLE only; `direct`
 * when the reader opened the file with O_DIRECT.
 */
void mp_metrics_count_read(struct mp_metrics *m, enum mp_metrics_file kind,
			   enum mp_role role, bool direct, uint64_t bytes);

/* One read request answered with the error errnum (> 0). */
void mp_metrics_count_error(struct mp_metrics *m, int errnum);

/* Sums over the shards (for reports and tests). */
uint64_t mp_metrics_reads(const struct mp_metrics *m, enum mp_metrics_file kind,
			  int direct);  /* direct: 0, 1, or -1 for both */
uint64_t mp_metrics_bytes(const struct mp_metrics *m, enum mp_metrics_file kind,
			  int direct);

/* What the payload scan of -o verify=payload found before mounting. */
struct mp_metrics_scan {
	bool ran;
	uint64_t experts, roles, blocks, bytes_read, problems;
};

/* The seal check's counters (-o verify=seal); nothing is rendered while
 * `enabled` is false. */
struct mp_metrics_seal {
	bool enabled;
	uint64_t chunks, checked, checked_ahead, failed, bytes_hashed, bytes_served;
	uint64_t cache_bytes, cache_hits, cache_misses;
};

/* How pack bytes came from storage (-o verify any). */
struct mp_metrics_storage {
	bool known;
	bool direct, uncached;        /* the ways that work */
	uint64_t bytes[MP_FILL_MODES];
};

/* Paths in labels are cut to this many bytes (a hash keeps them apart). */
#define MP_METRICS_LABEL_MAX 160

/* The facts of one report besides the counters. */
struct mp_metrics_info {
	const char *mountpoint;       /* the labels of every sample: the mount */
	const char *pack;             /* and its pack's resolved path */
	const char *verify;           /* "index", "full", "payload", ... */
	bool dequant;
	bool validation_ok;           /* the validation the mount was made on holds */
	bool pack_changed;            /* pack_state "changed" */
	double state_changed_at;      /* Unix time of the last pack state change
	                                 (the mount, or the change detected) */
	double start_time;            /* Unix time the daemon mounted */
	double uptime;                /* seconds since then */
	uint64_t rss_bytes;           /* resident set size; 0: unknown */
	const uint32_t *layer_ids;    /* stats->layer_count real layer ids */
	const struct mp_metrics_scan *scan;  /* NULL: none */
	struct mp_metrics_seal seal;         /* enabled false: no seal check */
	struct mp_metrics_storage storage;
	uint64_t file_writes;         /* -o metrics_file: rewrites done */
	uint64_t file_write_errors;   /* and failed */
	const struct mp_status_remote *remote; /* NULL: a local pack */
};

/*
 * Render the report into a malloc'd buffer, *text (NUL-terminated, for the
 * caller to free) of *len bytes, as long as the report is.  When it would
 * exceed max_len bytes, a brief one takes its place: the same without the
 * per-layer series, and moepackfs_metrics_truncated 1.  MP_E_NOMEM (and
 * *text NULL) when even that does not fit, or out of memory.
 */
enum mp_err mp_metrics_render(const struct mp_stats *stats, const struct mp_metrics *m,
			      const struct mp_metrics_info *info, size_t max_len, char **text,
			      size_t *len, struct mp_error *err);

/*
 * The report's longest line of a layer: its name, the mount's labels (two
 * paths, each cut to MP_METRICS_LABEL_MAX and then escaped, at most twice
 * as long), the layer id and a count.
 */
#define MP_METRICS_LAYER_LINE_MAX (4 * MP_METRICS_LABEL_MAX + 128)
/* Room for everything but the layers: at most 300 lines as long as that
 * and their HELP text (a whole report of 92 layers with short paths is
 * about 20 KiB). */
#define MP_METRICS_FIXED_MAX (256u << 10)

/*
 * How long a mount of layer_count layers lets its report grow: room for
 * every line of each layer, so that a valid pack, whatever its layers
 * (up to the index's 65,536) and paths, gets the whole report.  MOUNT/metrics
 * is as long as its report (node.h).
 */
size_t mp_metrics_max_len(uint64_t layer_count);

/*
 * Read counts of every expert of one layer (layer index, not id), as
 * decimal numbers separated by single spaces, expert 0 first: the
 * user.moepack.expert_reads attribute of a layer directory, what
 * `moepack top` draws its heat map from.  Returns the length written into
 * buf[cap] (NUL-terminated), or 0 when it does not fit.
 */
size_t mp_metrics_expert_reads(const struct mp_stats *stats, uint64_t layer_index,
			       char *buf, size_t cap);

/* Resident set size of this process from /proc/self/statm, 0 if unknown. */
uint64_t mp_metrics_rss_bytes(void);

#endif
