/*
 * top_sample.h - one look at a moepackfs mount, for `moepack top`.
 *
 * Everything comes from what the mount exposes: status.json (state,
 * validation, totals, per-layer counts; its change time is when the
 * snapshot was made, which times the rates), metrics (errors by errno,
 * direct and buffered bytes) and the user.moepack.expert_reads attribute of
 * each layer directory (per-expert read requests).  What the mount says is
 * untrusted: every file and attribute is read with a bound, every table
 * has one, and a value that is not what the daemon writes is refused with
 * a message that names the file and the field.
 */
#ifndef MOEPACK_CLI_TOP_SAMPLE_H
#define MOEPACK_CLI_TOP_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most layers a pack holds (an SGLang index entry's layer is 16 bits) */
#define TOP_MAX_LAYERS 65536u
#define TOP_MAX_EXPERTS 4096
#define TOP_MAX_ERRNOS 16
/* Room for a text field of status.json: longer text is cut at a character
 * boundary and ends in "...". */
#define TOP_FIELD_MAX 128
/* Room for a reason ("status.json: ...") or a note. */
#define TOP_WHY_MAX 512

struct top_errno {
	char name[24];
	uint64_t count;
};

struct top_sample {
	/* status.json's text fields as the mount gave them (valid UTF-8,
	 * not escaped: the printers escape), "?" when missing */
	char validation[TOP_FIELD_MAX], pack_state[TOP_FIELD_MAX];
	char verify[TOP_FIELD_MAX], mounted_at[TOP_FIELD_MAX];
	double at;                  /* status.json's ctime: the snapshot's time */
	double uptime;              /* from metrics; 0 without */
	uint64_t reads, bytes, errors, direct_bytes, buffered_bytes;
	unsigned nlayers;           /* sorted by id, no id twice */
	uint32_t *layer_id;         /* nlayers each, malloc'd (NULL: none) */
	uint64_t *layer_reads, *layer_bytes;
	unsigned nexperts;          /* per layer; 0 without per-expert counts */
	uint64_t *expert_reads;     /* nlayers x nexperts, or NULL */
	/* why there are no per-expert counts ("" when there are, or when the
	 * mount has no such attributes at all) */
	char experts_note[TOP_WHY_MAX];
	unsigned nerrnos;
	struct top_errno errnos[TOP_MAX_ERRNOS];
	/* a pack mounted from its mirrors: status.json's "remote" (the fill) */
	bool remote, fill_complete;
	uint64_t fill_chunks, fill_local, fill_bytes_local, fill_size, fill_refetched;
	uint64_t fill_waits, fill_failed;
};

/* How a look at the mount went. */
enum top_state {
	TOP_OK,      /* the sample holds what the mount says */
	TOP_GONE,    /* status.json cannot be opened or read (errno) */
	TOP_DENIED,  /* status.json is there, but not for this user (EACCES) */
	TOP_INVALID, /* status.json was read but is not what moepackfs writes */
};

/*
 * Fill *s (which must hold no expert_reads) from the mount at path mount.
 * On TOP_GONE, TOP_DENIED and TOP_INVALID, why says what failed as "status.json: ..."
 * (the caller names the mount), and *s holds nothing to free.  Missing
 * metrics or attributes are no failure: an older mount has none.
 */
enum top_state top_sample_read(const char *mount, struct top_sample *s, char *why,
			       size_t why_len);

/* Release what a sample holds (layers and per-expert counts); it is then
 * empty. */
void top_sample_free(struct top_sample *s);

#endif
