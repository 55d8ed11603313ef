/*
 * stats.h - read counters of a mounted pack and the status.json report.
 *
 * Counters are fixed-size arrays of relaxed atomics allocated once at mount
 * (per layer: reads and bytes; per object: reads), so counting is lock-free
 * from any number of threads and memory does not grow while mounted.
 * Pure code: no FUSE.
 */
#ifndef MOEPACK_STATS_H
#define MOEPACK_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/errors.h"
#include "pack/pack.h"
#include "pack/storage.h"

struct mp_stats {
	uint64_t layer_count;
	uint64_t num_experts;
	_Atomic uint64_t *layer_reads;  /* layer_count */
	_Atomic uint64_t *layer_bytes;  /* layer_count */
	_Atomic uint64_t *object_reads; /* layer_count * num_experts */
	_Atomic uint64_t pack_reads;    /* reads of the whole-pack file */
	_Atomic uint64_t pack_bytes;
	_Atomic uint64_t read_errors;   /* reads answered with an error */
	_Atomic uint64_t splice_replies; /* pack bytes handed over as an fd */
	_Atomic uint64_t copy_replies;   /* small pack reads copied instead */
};

/* Allocate zeroed counters; MP_E_NOMEM on failure. */
enum mp_err mp_stats_init(struct mp_stats *stats, uint64_t layer_count,
			  uint64_t num_experts, struct mp_error *err);
void mp_stats_free(struct mp_stats *stats);

/* One read of `bytes` bytes from a role or object file of `object`. */
void mp_stats_count_object(struct mp_stats *stats, uint64_t object, uint64_t bytes);
/* One read of `bytes` bytes from the whole-pack file. */
void mp_stats_count_pack(struct mp_stats *stats, uint64_t bytes);
/* One read answered with an error. */
void mp_stats_count_error(struct mp_stats *stats);
/* How a read of pack bytes was answered: spliced from the fd, or copied. */
void mp_stats_count_reply(struct mp_stats *stats, bool spliced);

/*
 * What changed in the open pack since it was validated (pack_state
 * "changed" in status.json).  Times are CLOCK_REALTIME.
 */
struct mp_status_change {
	bool changed;
	bool lease_break;             /* a writer broke the lease: new_* are the
	                                 values before it wrote */
	uint64_t old_size, new_size;
	struct timespec old_mtime, new_mtime;
	struct timespec old_ctime, new_ctime;
	struct timespec detected_at;
};

/* -o verify=seal: the seal and its counters (relaxed atomics, read as they are). */
struct mp_status_seal {
	uint64_t chunk_size, chunk_count;
	const char *seal_digest;      /* hex; NULL: from_index */
	bool from_index;              /* verify=entries: the index's role digests */
	bool anchored;                /* proven in this mount: a trusted signature
	                                 or the full digest checked */
	bool anchored_claim;          /* what the seal says of itself */
	bool trusted;                 /* -o trust= checked the signature */
	const _Atomic uint64_t *checked, *checked_ahead, *failed, *bytes_hashed;
	const _Atomic uint64_t *bytes_served;
	/* the cache of checked chunks, as the snapshot found it */
	size_t cache_budget, cache_bytes;
	uint64_t cache_hits, cache_misses;
};

/* A pack from its mirrors (moepackfs SOURCE ... -o cache=DIR): the fill,
 * as the daemon read it for one snapshot.  Room for every mirror a mount
 * may have (fetch.h's MP_FETCH_MAX_MIRRORS; the daemon asserts it). */
#define MP_STATUS_REMOTE_MIRRORS 64
struct mp_status_remote {
	const char *source;           /* SOURCE as given */
	const char *cache_path;       /* DIR/NAME.pack.partial, then DIR/NAME.pack */
	bool fill, complete;          /* -o fill not off; the pack in place */
	uint64_t pack_size, chunks, chunks_local, bytes_local;
	uint64_t chunks_fetched, chunks_refetched, chunks_kept, bytes_fetched;
	uint64_t demand_waits, demand_failed;   /* readers that waited; of those, EIO */
	double demand_p50, demand_p99;          /* seconds, of the waits that ended well */
	unsigned nmirrors;
	struct mp_status_remote_mirror {
		const char *source;
		uint64_t bytes, failures, chunks_good, chunks_bad;
		bool dropped, liar;
	} mirrors[MP_STATUS_REMOTE_MIRRORS];
};

/* Warnings of the daemon itself (read-ahead, mount point), after the pack's. */
#define MP_STATUS_DAEMON_WARNINGS 4

/* The facts status.json reports besides the counters. */
struct mp_status_info {
	const char *pack_path;        /* resolved path of the pack */
	const char *manifest_path;
	const char *mountpoint;
	const char *verify;           /* "index", "full", "payload", "full+payload" */
	bool full_digest_checked;
	bool dequant;                 /* -o dequant: the .f32 files are there */
	const char *index_sha256;
	uint64_t inode_generation;    /* the FUSE generation of every inode */
	time_t mounted_at;
	const uint32_t *layer_ids;    /* stats->layer_count real layer ids */
	unsigned nwarnings;
	const char (*warnings)[MP_MSG_MAX];
	unsigned hottest;             /* how many hottest experts to list */
	/* How the mount talks to the kernel (set when FUSE init is done). */
	unsigned max_request;         /* largest read request, bytes */
	long readahead_kb;            /* the kernel's read-ahead window, -1: unknown */
	bool splice_write;            /* libfuse may splice replies */
	unsigned max_threads;         /* threads serving requests at most */
	unsigned max_background;      /* requests in flight the kernel may send */
	const struct mp_storage *storage; /* how pack bytes are read (NULL: unknown) */
	bool export_support;          /* NFS export (lookup of ".") enabled */
	unsigned ndaemon_warnings;
	const char (*daemon_warnings)[MP_MSG_MAX];
	const struct mp_status_change *change; /* NULL: the pack is unchanged */
	/* The read lease: "held", "broken" or "fallback" (with the reason). */
	const char *lease;
	const char *lease_reason;
	const struct mp_status_seal *seal;     /* NULL: not verify=seal or entries */
	const struct mp_status_remote *remote; /* NULL: a local pack */
	size_t max_len;               /* longest report, 0: no limit */
};

/* Each path in status.json is cut (with "...") to this many bytes. */
#define MP_STATUS_PATH_MAX 1024

#define MP_STATUS_HOTTEST_MAX 64

/*
 * Render status.json: validation result, digests, mount time, totals,
 * reads and bytes per layer, and the `info->hottest` most read experts (most
 * reads first, ties by layer then expert).  *out is a NUL-terminated,
 * malloc'd buffer of *len bytes (the NUL not counted) for the caller to free.
 * Paths and warnings go through mp_text_escape() (any bytes, valid JSON) and
 * are cut at MP_STATUS_PATH_MAX and MP_MSG_MAX.  When the report would
 * exceed info->max_len, a short report with "truncated": true and the
 * totals takes its place, so *len <= max_len whatever the inputs.
 */
enum mp_err mp_stats_render(const struct mp_stats *stats,
			    const struct mp_status_info *info, char **out,
			    size_t *len, struct mp_error *err);

/*
 * status.json's room for everything but its layers (about 10 KiB at Kimi
 * K3 scale), and for each layer's entry.
 */
#define MP_STATUS_FILE_SIZE (64u << 10)
#define MP_STATUS_LAYER_MAX 128u

/*
 * How long status.json of a mount of layer_count layers may grow (the
 * caller's info->max_len): room for the entry of every layer, so that a
 * valid pack, whatever its layers (up to the index's 65,536), gets the whole
 * report.
 */
size_t mp_stats_max_len(uint64_t layer_count);

/* "2025-01-31T12:00:00Z" into buf (at least 21 bytes). */
void mp_iso8601_utc(time_t t, char *buf, size_t len);
/* "2025-01-31T12:00:00.123456789Z" into buf (at least 31 bytes). */
void mp_iso8601_utc_ns(const struct timespec *t, char *buf, size_t len);

#endif
