/*
 * expertpack.h - a validated SGLang expert pack (SGLANG-EXPERTPACK-v1).
 *
 * mp_ep_open() opens the pack and its manifest, runs every check of the
 * reference runtime (SGLang's ExpertPackStore) in its order, then the
 * stricter checks of moepack-pack(5), "SGLANG-EXPERTPACK-v1" (most of them
 * those of SGLang's offline validator), and on success returns an immutable
 * mp_ep that answers "where is (layer, expert, role)" in O(1).  Nothing
 * here prints; failures come back as an mp_error whose message starts with
 * its code's summary and names the field, entry or path at fault.
 *
 * Untrusted counts are checked against the file size before anything is
 * allocated from them: the index is streamed, and the per-role arrays below
 * are allocated only once the whole index is known to lie in the file.
 * Sums and products of header fields are computed in 128 bits.
 *
 * The checks run in this order, each phase a file called from open.c
 * alone (check.h has the list): the files (open.c), the header (header.c),
 * the index read (index.c), the caller's expectations (header.c), the
 * entries by key (entries.c), the layout (layout.c), then with opts.full
 * the whole read (full.c), the stricter checks (strict.c, entry.c), a
 * checksum that missed (full.c) and the source (source.c).
 *
 * An mp_ep is read-only after mp_ep_open() returns and may be shared by any
 * number of threads.
 */
#ifndef MOEPACK_EXPERTPACK_H
#define MOEPACK_EXPERTPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/cancel.h"
#include "base/errors.h"
#include "base/progress_fn.h"
#include "pack/digest.h"
#include "pack/expertpack/format.h"
#include "pack/openhook.h"
#include "pack/packfile.h"

/* What the caller expects and asks for.  All zero: the defaults. */
struct mp_ep_opts {
	const char *manifest_path; /* NULL: "<resolved pack>.manifest.json" */
	/* the manifest's bytes instead of the file's (NULL: read it); at
	 * most MP_MANIFEST_MAX, as mp_open_opts.manifest_text */
	const char *manifest_text;
	size_t manifest_text_len;
	/* 0: no expectation; else the header's num_layers, num_experts,
	 * top_k must be these (the runtime's expected dimensions) */
	uint64_t expect_layers, expect_experts, expect_top_k;
	/* NULL or "": not compared; else 64 hex digits in either case,
	 * compared with the header's digest whatever its case */
	const char *expect_source_sha256;         /* source_blob_sha256 */
	const char *expect_model_identity_sha256; /* model_identity_sha256 */
	const char *expect_config_sha256;         /* config_sha256 */
	/* only the reference runtime's checks (with moepack's decisions on
	 * what it leaves lax), none of the stricter ones */
	bool runtime_only;
	/* read the whole pack: its SHA-256 against pack_sha256, and every
	 * role's bytes against the entry's checksum */
	bool full;
	/* NULL: no source checks; else the source GGUF: its size, MP_EP_SAMPLES
	 * sampled slices, and with full its digest and every tensor's */
	const char *source_path;
	uint64_t samples;          /* 0: MP_EP_SAMPLES; MP_EP_NO_SAMPLES: none */
	mp_progress_fn progress;   /* the full read of the pack (not of the
	                              source); may be NULL */
	void *progress_arg;
	/* Called with the pack's descriptor right after it is opened, before
	 * a byte is read (a mount's read lease): as mp_open_opts.opened. */
	mp_opened_fn opened;
	void *opened_arg;
	/* as mp_open_opts.cancel: the full read, the source's digests and the
	 * sampled comparisons stop with MP_E_INTERRUPTED.  May be NULL. */
	const struct mp_cancel *cancel;
};

/* How such a pack gets a pack_sha256, or has every byte checked without
 * one (the end of a full_digest_missing message). */
#define MP_EP_SHA256_HINT                                                          \
	"'moepack build --format expertpack-v1' records one, as 'moepack mkdemo "   \
	"--format expertpack-v1' does without --sparse; or check every role "       \
	"against its index entry's checksum: verify --entries or -o verify=entries"

#define MP_EP_SAMPLES 96 /* the reference validator's default */
#define MP_EP_NO_SAMPLES UINT64_MAX

/* One role of one object, as its index entry says. */
struct mp_ep_role_info {
	unsigned char checksum[32]; /* SHA-256 of the role's pack bytes */
	uint64_t shape[MP_EP_MAX_RANK]; /* GGUF ne order, rank used, rest 0 */
	uint16_t dtype_id;
	uint8_t rank;
	char tensor_name[MP_EP_NAME_LEN + 1]; /* the text before the first NUL */
};

/*
 * The pack's files, identity and warnings are what every format's open
 * fills (struct mp_pack_file, pack/packfile.h): the same member as
 * struct mp_pack's, which the format's view (view.c) takes over whole.
 * The rest is this format's own.
 */
struct mp_ep {
	struct mp_pack_file file;
	struct mp_ep_header header;
	/* geometry, from the header and the manifest's object_stride */
	uint64_t num_layers, num_experts, top_k, alignment;
	uint64_t data_start, object_stride, role_bytes, index_count;
	uint64_t object_count; /* num_layers * num_experts */
	uint64_t *generation;  /* object_count entries */
	struct mp_ep_role_info *role; /* index_count entries: object * 3 + role id */
	unsigned char index_digest[32]; /* SHA-256 of the index entries */
	char pack_sha256[MP_SHA256_HEX];  /* the manifest's; "" when absent */
	char index_sha256[MP_SHA256_HEX]; /* the manifest's; "" with runtime_only */
	bool page_aligned;    /* every object and object size 4096-aligned */
	bool full_checked;    /* the file digest and every checksum matched */
};

/*
 * Open and validate.  On success *out is a pack to free with mp_ep_close().
 * On failure *out is NULL, err says why, and the code is returned.  A bad
 * option (a digest that is not 64 hex digits) is MP_E_USAGE, before any
 * file is opened.
 */
enum mp_err mp_ep_open(struct mp_ep **out, const char *pack_path,
		       const struct mp_ep_opts *opts, struct mp_error *err);
void mp_ep_close(struct mp_ep *ep);

/* Object number of (layer, expert). */
static inline uint64_t mp_ep_object(const struct mp_ep *ep, uint64_t layer, uint64_t expert)
{
	return layer * ep->num_experts + expert;
}

/* Where object k starts: data_start + k * object_stride.  O(1), no I/O. */
static inline uint64_t mp_ep_object_offset(const struct mp_ep *ep, uint64_t object)
{
	return ep->data_start + object * ep->object_stride;
}

/* Byte range of one role of one object: gate, up and down lie back to
 * back from the object's start.  O(1), no I/O. */
static inline void mp_ep_role_range(const struct mp_ep *ep, uint64_t object,
				    enum mp_ep_role role, uint64_t *offset, uint64_t *nbytes)
{
	*offset = mp_ep_object_offset(ep, object) + (uint64_t)role * ep->role_bytes;
	*nbytes = ep->role_bytes;
}

/* The entry of one role of one object. */
static inline const struct mp_ep_role_info *mp_ep_role_at(const struct mp_ep *ep,
							  uint64_t object, enum mp_ep_role role)
{
	return &ep->role[object * MP_EP_ROLES + (uint64_t)role];
}

#endif
