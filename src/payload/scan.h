/*
 * scan.h - the payload scan: which experts of a pack hold broken blocks.
 *
 * The scan looks at every block's scales (Q2_K d and dmin, Q3_K d: fp16;
 * MXFP4 e: an E8M0 byte) and at every byte of every role, and reports,
 * through a callback, each role holding non-finite scales (ones with which
 * some weight decodes to Inf or NaN), each role that is entirely zero (a
 * hole, or an expert never written), each expert whose scales are all zero
 * and, for the types whose entry says so (MXFP4), each role whose scales
 * are.  Each role's type is looked up once in the table of payload/dequant.h
 * when the scan starts; what a scale means is that entry's business.  It
 * finds *which* expert is broken; it is no substitute for the whole-file
 * digest, which catches any changed byte.
 *
 * The same pass can feed every byte of the file to SHA-256, so that a full
 * digest check and the scan cost one read of the pack.  No printing, no
 * FUSE: the CLI and the daemon both use it.
 */
#ifndef MOEPACK_SCAN_H
#define MOEPACK_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/digest.h"
#include "pack/pack.h"
#include "payload/codec.h"

enum mp_scan_kind {
	MP_SCAN_NONFINITE_SCALE, /* a role has blocks with a non-finite scale */
	MP_SCAN_ZERO_ROLE,       /* every byte of a role is zero */
	MP_SCAN_ZERO_SCALES,     /* every scale of an expert's three roles is 0,
	                            or (role set) of one role of a type whose
	                            entry reports roles on their own */
};

struct mp_scan_problem {
	enum mp_scan_kind kind;
	uint32_t layer;          /* real layer id */
	uint64_t expert;
	enum mp_role role;       /* MP_ROLE_COUNT for an expert's MP_SCAN_ZERO_SCALES */
	/* the role's type: what its scales mean (NULL for an expert's finding) */
	const struct mp_codec *codec;
	/* MP_SCAN_NONFINITE_SCALE: how many scales, and the first one */
	uint64_t count;
	uint64_t first_block;    /* block number inside the role */
	const char *first_scale; /* "d", "dmin", "e" */
	uint16_t first_value;    /* its raw bits (fp16; MXFP4: the byte) */
	/* MP_SCAN_ZERO_ROLE: the role is a hole in the file (never written) */
	bool hole;
};

/* Called once per problem, in pack order. */
typedef void (*mp_scan_fn)(const struct mp_scan_problem *p, void *arg);

struct mp_scan_summary {
	uint64_t roles;             /* roles scanned */
	uint64_t blocks;            /* blocks whose scales were looked at */
	uint64_t bytes_read;        /* bytes actually read (holes are skipped) */
	uint64_t nonfinite_scales;  /* non-finite scales, in all */
	uint64_t nonfinite_roles;   /* roles holding any */
	uint64_t zero_roles;        /* roles entirely zero */
	uint64_t hole_roles;        /* of which lie in holes of the file */
	uint64_t zero_scale_experts;/* experts whose scales are all zero */
	uint64_t zero_scale_roles;  /* roles reported on their own for it (MXFP4) */
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
 * only when a role's type is not one payload/dequant.h decodes
 * (MP_E_ROLE_DTYPE, before anything is read), when the pack cannot be read
 * (MP_E_PACK_IO) or when memory runs out.
 */
enum mp_err mp_scan_pack(const struct mp_pack *pack, const struct mp_scan_opts *opts,
			 mp_scan_fn fn, void *arg, struct mp_scan_summary *sum,
			 unsigned char sha256[MP_SHA256_LEN], struct mp_error *err);

#endif
