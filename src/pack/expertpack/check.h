/*
 * check.h - the phases of mp_ep_open(), internal to src/pack/expertpack/.
 *
 * open.c opens the files (the runtime's steps 1 and 2) and calls every
 * phase, in this order, from one place; each phase returns the first
 * failure it finds, or MP_OK:
 *
 *   header.c   mp_epcheck_header()   steps 3 and 4: "complete", the header
 *   index.c    mp_epcheck_index()    step 5: every entry read in turn
 *   header.c   mp_epcheck_expect()   steps 6 and 7: the caller's dimensions
 *                                    and digests against the header
 *   entries.c  mp_epcheck_entries()  step 8: the entries by key
 *   layout.c   mp_epcheck_layout()   steps 9 to 12: stride, size, layout
 *   full.c     mp_epcheck_full()     step 13 and every role's checksum
 *   strict.c   mp_epcheck_strict()   the stricter checks (each entry's in
 *                                    entry.c, which only strict.c calls)
 *   full.c     mp_epcheck_full_report()  a role's checksum that missed
 *   source.c   mp_epcheck_source()   the source GGUF
 *   digest.c   mp_epcheck_digest_wait()  the index digest, made meanwhile
 *
 * What several phases use lies below them all, in check.c (the warnings,
 * message helpers, the streamed read of the index) and digest.c (the index
 * digest's thread): neither calls a phase, and no phase calls open.c or
 * another phase, so the files' calls have no cycle (tests/layers.py).
 * moepack-pack(5) lists every check in this order.
 */
#ifndef MOEPACK_EPCHECK_H
#define MOEPACK_EPCHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/digest.h"
#include "pack/expertpack/format.h"
#include "pack/expertpack/expertpack.h"

struct mp_epdigest;

#define MP_EP_NONE UINT64_MAX
#define MP_EP_CANON_LEN 40 /* "blk.4294967295.ffn_gate_exps.weight" and a NUL */

/* A key (layer, expert, role) as the reference prints it: "(0, 3, 2)". */
#define MP_EP_KEY "(%u, %u, %u)"

/* The state of one mp_ep_open(). */
struct mp_epcheck {
	struct mp_ep *ep;
	const struct mp_ep_opts *o;
	json_t *root;            /* the manifest */
	bool surrogates;         /* it had lone \udcXX escapes (mjson.h) */
	uint64_t entries_in_file; /* entries wholly inside the file */
	unsigned char *chunk;    /* mp_epcheck_stream()'s buffer */
	struct mp_epdigest *digest; /* the index digest being made, or NULL */
	/* per slot (object * 3 + role id), while validating */
	uint64_t *where;         /* the entry's position in the index, or NONE */
	uint64_t *offset;        /* its pack_offset */
	uint64_t outside;        /* first entry outside the layers x experts, or NONE */
	struct mp_ep_entry outside_entry;
	/* what mp_epcheck_full() found and mp_epcheck_full_report() reports
	 * after the stricter checks */
	uint64_t bad_digest_slot; /* first role whose bytes miss its checksum, or NONE */
	unsigned char bad_digest[32];
};

/* Steps 3 and 4: the manifest's "complete", then the header read and
 * checked; fills ep's geometry and c->entries_in_file. */
enum mp_err mp_epcheck_header(struct mp_epcheck *c, struct mp_error *err);
/* Steps 6 and 7: the header's dimensions, then its digests, against the
 * caller's expectations (opts.expect_*). */
enum mp_err mp_epcheck_expect(const struct mp_epcheck *c, struct mp_error *err);
/* Step 5: read every entry the file holds (role, rank, text); then
 * index_truncated if the index does not fit in the file. */
enum mp_err mp_epcheck_index(struct mp_epcheck *c, struct mp_error *err);
/* Step 8, after steps 6 and 7: the per-slot arrays allocated (the whole
 * index lies in the file by now), then every entry by its key; fills ep->role,
 * ep->generation, c->where, c->offset and ep->role_bytes. */
enum mp_err mp_epcheck_entries(struct mp_epcheck *c, struct mp_error *err);
/* Steps 9 to 12: entries at all, object_stride, the file size, the layout. */
enum mp_err mp_epcheck_layout(struct mp_epcheck *c, struct mp_error *err);
/* Whether the manifest records a pack_sha256: the key there and not null
 * (SGLang's runtime takes a null one as it takes none). */
bool mp_epcheck_has_pack_sha256(const struct mp_epcheck *c);
/* Step 13 with opts.full: pack_sha256 against the whole file, and every
 * role's digest (kept for mp_epcheck_full_report()), in one read. */
enum mp_err mp_epcheck_full(struct mp_epcheck *c, struct mp_error *err);
/* The first role whose bytes did not match its checksum, if any. */
enum mp_err mp_epcheck_full_report(struct mp_epcheck *c, struct mp_error *err);
/* The stricter checks: the manifest's other keys, the index digest, the
 * header against the manifest, the tensors, each entry's own fields. */
enum mp_err mp_epcheck_strict(struct mp_epcheck *c, struct mp_error *err);
/*
 * The manifest's tensors, as the stricter checks use them: every item's
 * name and category, and the source range and digest of the routed ones.
 */
struct mp_eptensor {
	const char *name; /* borrowed from the manifest */
	bool routed;      /* category "routed_expert" */
	bool non_routed;  /* category "non_routed" (any other: neither) */
	uint64_t offset, nbytes;
	unsigned char sha256[32];
};
struct mp_eptensors {
	size_t n;
	struct mp_eptensor *t;
	json_t *by_name;  /* name -> index into t */
	uint64_t *canon;  /* layer * 3 + role -> the index of its routed tensor's
	                     canonical name (mp_ep_tensor_name()), or NONE */
	char (*canon_name)[MP_EP_CANON_LEN]; /* layer * 3 + role -> that name */
};
/* The stricter checks of each entry (after those of the manifest). */
enum mp_err mp_epcheck_strict_entries(struct mp_epcheck *c, const struct mp_eptensors *t,
				      struct mp_error *err);

/* With opts.source_path: the source's size, digests (full) and samples. */
enum mp_err mp_epcheck_source(struct mp_epcheck *c, struct mp_error *err);

/*
 * Call fn for entries [first, first + count) of the index, read in large
 * chunks.  Stops at fn's first failure.
 */
typedef enum mp_err (*mp_epcheck_entry_fn)(struct mp_epcheck *c, uint64_t i,
					   const unsigned char *raw, void *arg,
					   struct mp_error *err);
enum mp_err mp_epcheck_stream(struct mp_epcheck *c, uint64_t first, uint64_t count,
			      mp_epcheck_entry_fn fn, void *arg, struct mp_error *err);

/*
 * The SHA-256 of the index entries into ep->index_digest, made on a second
 * thread once the index is known to lie in the file: _start() sets it
 * going, _wait() joins it and reports its failure (a read error).  _wait()
 * must be called before c->ep is freed; with nothing started it does
 * nothing.
 */
enum mp_err mp_epcheck_digest_start(struct mp_epcheck *c, struct mp_error *err);
enum mp_err mp_epcheck_digest_wait(struct mp_epcheck *c, struct mp_error *err);

/* Append a warning to the pack (dropped beyond MP_MAX_WARNINGS). */
void mp_epcheck_warn(struct mp_epcheck *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Decimal text of v, for sums that may pass 2^64. */
const char *mp_epcheck_u128(unsigned __int128 v, char buf[40]);

/* The text of a field (before its first NUL) equals s. */
bool mp_epcheck_text_is(const unsigned char *field, size_t len, const char *s);

#endif
