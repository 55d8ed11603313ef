/*
 * scan.h - the payload scan: which experts of a pack hold broken blocks.
 *
 * The scan decodes every super-block's fp16 scales (Q2_K d and dmin, Q3_K
 * d) and looks at every byte of every role, and reports, through a
 * callback, each role holding non-finite scales, each role that is entirely
 * zero (a hole, or an expert never written) and each expert whose scales
 * are all zero.  It finds *which* expert is broken; it is no substitute for
 * the whole-file digest, which catches any changed byte.
 *
 * The same pass can feed every byte of the file to SHA-256, so that a full
 * digest check and the scan cost one read of the pack.  No printing, no
 * FUSE: the CLI and the daemon both use it.
 */
#ifndef MOEPACK_SCAN_H
#define MOEPACK_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "pack/digest.h"
#include "base/errors.h"
#include "pack/pack.h"

enum mp_scan_kind {
	MP_SCAN_NONFINITE_SCALE, /* a role has blocks with an Inf or NaN scale */
	MP_SCAN_ZERO_ROLE,       /* every byte of a role is zero */
	MP_SCAN_ZERO_SCALES,     /* every scale of an expert's three roles is 0 */
};

struct mp_scan_problem {
	enum mp_scan_kind kind;
	uint32_t layer;          /* real layer id */
	uint64_t expert;
	enum mp_role role;       /* MP_ROLE_COUNT for MP_SCAN_ZERO_SCALES */
	/* MP_SCAN_NONFINITE_SCALE: how many scales, and the first one */
	uint64_t count;
	uint64_t first_block;    /* block number inside the role */
	const char *first_scale; /* "d" or "dmin" */
	uint16_t first_value;    /* its raw fp16 bits */
	/* MP_SCAN_ZERO_ROLE: the role is a hole in the file (never written) */
	bool hole;
};

/* Called once per problem, in pack order. */
typedef void (*mp_scan_fn)(const struct mp_scan_problem *p, void *arg);

struct mp_scan_summary {
	uint64_t roles;             /* roles scanned */
	uint64_t blocks;            /* super-blocks whose scales were decoded */
	uint64_t bytes_read;        /* bytes actually read (holes are skipped) */
	uint64_t nonfinite_scales;  /* Inf or NaN scales, in all */
	uint64_t nonfinite_roles;   /* roles holding any */
	uint64_t zero_roles;        /* roles entirely zero */
	uint64_t hole_roles;        /* of which lie in holes of the file */
	uint64_t zero_scale_experts;/* experts whose scales are all zero */
	uint64_t experts;           /* expert objects scanned */
};

struct mp_scan_opts {
	/* Also digest every byte of the file [0, size) into sha256 (one read
	 * serves both). */
	bool hash;
	mp_progress_fn progress; /* may be NULL; bytes done of bytes to read */
	void *progress_arg;
};

/*
 * Scan an open, validated pack.  Problems go to fn (may be NULL); counts to
 * *sum.  With opts->hash, sha256 receives the whole file's digest.  Fails
 * only when the pack cannot be read (MP_E_PACK_IO) or memory runs out.
 */
enum mp_err mp_scan_pack(const struct mp_pack *pack, const struct mp_scan_opts *opts,
			 mp_scan_fn fn, void *arg, struct mp_scan_summary *sum,
			 unsigned char sha256[MP_SHA256_LEN], struct mp_error *err);

#endif
