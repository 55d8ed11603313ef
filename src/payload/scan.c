/*
 * scan.c - the payload scan (see scan.h).
 *
 * Roles are visited in file order (objects are in increasing offset order
 * once the index is valid, an object's roles are contiguous, in the
 * format's order m.order), and fed
 * whatever slices of the file cover them.  A block can straddle two reads,
 * so each role keeps a partial block back until the rest arrives.
 *
 * Without hashing only the expert objects are read, and a role that lies
 * wholly in a hole of the file (SEEK_DATA finds no data in it) is known to
 * be zero without reading it: a sparse Kimi K3 pack scans in seconds.
 * With hashing every byte is read once, front to back, by the reader
 * thread of readahead.h, and each buffer goes to SHA-256 and to the scan.
 *
 * The three roles' types are looked up in payload/dequant.h's table once,
 * before the first read; each slice of a role then goes to its entry's
 * check_scales, which knows where the scales are and what they mean.
 */
#include "config.h"

#include "payload/scan.h"

#include "base/file.h"
#include "base/quant.h"
#include "pack/readahead.h"
#include "payload/dequant.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCAN_CHUNK (8u << 20)

/* What is known about the role being fed. */
struct role_state {
	const struct mp_codec *codec; /* its type */
	uint64_t start, end;     /* absolute file range */
	bool zero;               /* every byte so far is zero */
	struct mp_scale_tally tally; /* its blocks' scales so far */
	unsigned carry_len;      /* bytes of a partial block kept back */
	unsigned char carry[MP_CODEC_MAX_BLOCK_BYTES];
};

struct scan {
	const struct mp_pack *pack;
	const struct mp_codec *codec[MP_ROLE_COUNT]; /* each role's type */
	mp_scan_fn fn;
	void *arg;
	struct mp_scan_summary *sum;
	uint64_t object;         /* the object being fed */
	int slot;                /* the position in the object of the role fed */
	enum mp_role role;       /* that role: pack->m.order[slot] */
	bool expert_scales_zero; /* every scale of the object so far is 0 */
	struct role_state rs;
};

/* Each role's entry of the type table, once for the whole scan. */
static enum mp_err resolve_types(struct scan *s, struct mp_error *err)
{
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const struct mp_role_info *ri = &s->pack->m.roles[r];
		const struct mp_quant_type *t = mp_ggml_type((uint32_t)ri->dtype_id);

		s->codec[r] = ri->dtype_id >= 0 ? mp_codec(t) : NULL;
		if (!s->codec[r])
			return mp_fail(err, MP_E_ROLE_DTYPE,
				       "quant type is unsupported: expert_pack.roles.%s.dtype_id "
				       "is %s (%d), which the payload scan cannot decode",
				       mp_role_name(r), t ? t->name : "not a GGML type",
				       ri->dtype_id);
	}
	return MP_OK;
}

static void role_begin(struct scan *s)
{
	const struct mp_pack *p = s->pack;
	struct role_state *rs = &s->rs;
	uint64_t nbytes;

	memset(rs, 0, sizeof *rs);
	s->role = p->m.order[s->slot];
	rs->codec = s->codec[s->role];
	mp_pack_role_range(p, s->object, s->role, &rs->start, &nbytes);
	rs->end = rs->start + nbytes;
	rs->zero = true;
	rs->tally.all_zero = true;
	if (s->slot == 0)
		s->expert_scales_zero = true;
}

/* Word-wise, eight words a step: on data already in memory this runs at
 * memory speed, and a role with data stops at its first non-zero word. */
static bool all_zero(const unsigned char *p, size_t n)
{
	size_t i = 0;

	for (; i + 64 <= n; i += 64) {
		uint64_t w[8];

		memcpy(w, p + i, sizeof w);
		if (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7])
			return false;
	}
	for (; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* n bytes of the current role, in order. */
static void role_feed(struct role_state *rs, const unsigned char *p, size_t n)
{
	const struct mp_codec *c = rs->codec;
	size_t bb = c->type->block_bytes, whole;

	if (rs->zero && !all_zero(p, n))
		rs->zero = false;
	if (rs->carry_len) {
		size_t take = bb - rs->carry_len < n ? bb - rs->carry_len : n;

		memcpy(rs->carry + rs->carry_len, p, take);
		rs->carry_len += (unsigned)take;
		p += take;
		n -= take;
		if (rs->carry_len < bb)
			return;
		c->check_scales(rs->carry, 1, &rs->tally);
		rs->carry_len = 0;
	}
	whole = n / bb;
	c->check_scales(p, whole, &rs->tally);
	memcpy(rs->carry, p + whole * bb, n - whole * bb);
	rs->carry_len = (unsigned)(n - whole * bb);
}

static void report(struct scan *s, struct mp_scan_problem *pr)
{
	pr->layer = s->pack->m.layer_ids[s->object / s->pack->m.num_experts];
	pr->expert = s->object % s->pack->m.num_experts;
	if (s->fn)
		s->fn(pr, s->arg);
}

/* The role's own findings: its non-finite scales, its zero bytes, and
 * (for a type that reports roles on their own) its zero scales. */
static void report_role(struct scan *s, bool hole)
{
	const struct role_state *rs = &s->rs;
	const struct mp_scale_tally *t = &rs->tally;
	struct mp_scan_summary *sum = s->sum;

	if (t->nonfinite) {
		struct mp_scan_problem pr = {
			.kind = MP_SCAN_NONFINITE_SCALE, .role = s->role, .codec = rs->codec,
			.count = t->nonfinite, .first_block = t->first_block,
			.first_scale = rs->codec->scales[t->first_scale].name,
			.first_value = t->first_value};

		sum->nonfinite_scales += t->nonfinite;
		sum->nonfinite_roles++;
		report(s, &pr);
	}
	if (rs->zero) {
		struct mp_scan_problem pr = {.kind = MP_SCAN_ZERO_ROLE, .role = s->role,
					     .codec = rs->codec, .hole = hole};

		sum->zero_roles++;
		sum->hole_roles += hole;
		report(s, &pr);
	} else if (t->all_zero && rs->codec->zero_scales_per_role) {
		/* (a zero role has zero scales too: said once, above) */
		struct mp_scan_problem pr = {.kind = MP_SCAN_ZERO_SCALES, .role = s->role,
					     .codec = rs->codec};

		sum->zero_scale_roles++;
		report(s, &pr);
	}
}

/* The role is complete: report it, and move on to the next role. */
static void role_end(struct scan *s, bool hole)
{
	struct mp_scan_summary *sum = s->sum;

	sum->roles++;
	sum->blocks += s->rs.tally.blocks;
	report_role(s, hole);
	if (!s->rs.tally.all_zero)
		s->expert_scales_zero = false;
	if (++s->slot == MP_ROLE_COUNT) {
		sum->experts++;
		if (s->expert_scales_zero) {
			struct mp_scan_problem pr = {.kind = MP_SCAN_ZERO_SCALES,
						     .role = MP_ROLE_COUNT};

			sum->zero_scale_experts++;
			report(s, &pr);
		}
		s->slot = 0;
		s->object++;
	}
	if (s->object < s->pack->object_count)
		role_begin(s);
}

/* A role known to be zero without reading it. */
static void role_hole(struct scan *s)
{
	struct role_state *rs = &s->rs;

	rs->tally.blocks = (rs->end - rs->start) / rs->codec->type->block_bytes;
	role_end(s, true);
}

/* Bytes [pos, pos + n) of the file, read in order: hand each role its part. */
static void feed(struct scan *s, uint64_t pos, const unsigned char *buf, size_t n)
{
	uint64_t end = pos + n;

	while (s->object < s->pack->object_count && s->rs.start < end) {
		struct role_state *rs = &s->rs;
		uint64_t from = rs->start > pos ? rs->start : pos;
		uint64_t to = rs->end < end ? rs->end : end;

		/* from >= rs->start always: roles are only fed from their
		 * start on, because reads go forward */
		if (to > from)
			role_feed(rs, buf + (from - pos), (size_t)(to - from));
		if (rs->end > end)
			break;
		role_end(s, false);
	}
}

struct hash_feed {
	struct scan *s;
	struct mp_sha256 *h;
};

/* Every byte of the file, in order, from the reader thread's ring: the
 * digest and the scan see each buffer while it is still in the cache. */
static enum mp_err hash_and_feed(const unsigned char *buf, size_t len, uint64_t pos,
				 void *arg, struct mp_error *err)
{
	struct hash_feed *hf = arg;

	mp_sha256_update(hf->h, buf, len);
	feed(hf->s, pos, buf, len);
	return MP_OK;
}

/* The whole file through the reader thread: the digest and the scan of
 * the same bytes. */
static enum mp_err scan_hashing(struct scan *s, const struct mp_scan_opts *opts,
				struct mp_sha256 *h, unsigned char sha256[MP_SHA256_LEN],
				struct mp_error *err)
{
	const struct mp_pack *pack = s->pack;
	struct mp_readahead_opts ro = {.progress = opts->progress,
				       .progress_arg = opts->progress_arg};
	struct hash_feed hf = {.s = s, .h = h};
	char what[MP_MSG_MAX];
	enum mp_err rc;

	snprintf(what, sizeof what, "pack %s", pack->file.path);
	rc = mp_readahead(pack->file.fd, 0, pack->file.size, what, &ro, hash_and_feed, &hf, err);
	if (rc)
		return rc;
	mp_sha256_final(h, sha256);
	s->sum->bytes_read = pack->file.size;
	return MP_OK;
}

/* Object o's bytes through buf (SCAN_CHUNK bytes), a role at most per
 * read, skipping roles that lie wholly in a hole. */
static enum mp_err scan_object(struct scan *s, uint64_t o, unsigned char *buf,
			       struct mp_error *err)
{
	const struct mp_pack *pack = s->pack;
	uint64_t end = pack->object_offset[o] + pack->m.object_bytes;

	for (uint64_t pos = pack->object_offset[o]; pos < end;) {
		size_t n = end - pos < SCAN_CHUNK ? (size_t)(end - pos) : SCAN_CHUNK;
		enum mp_err rc;

		/* a role wholly in a hole needs no read */
		if (pos == s->rs.start &&
		    s->rs.end <= mp_file_hole_end(pack->file.fd, s->rs.start)) {
			pos = s->rs.end;
			role_hole(s);
			continue;
		}
		/* read up to the end of the current role at most, so
		 * the next role gets its own hole test */
		if (s->rs.end - pos < n)
			n = (size_t)(s->rs.end - pos);
		rc = mp_pread_full(pack->file.fd, buf, n, pos, "pack", pack->file.path, MP_E_PACK_IO, err);
		if (rc)
			return rc;
		s->sum->bytes_read += n;
		feed(s, pos, buf, n);
		pos += n;
	}
	return MP_OK;
}

/* The payloads only, object by object, in the caller's thread. */
static enum mp_err scan_objects(struct scan *s, const struct mp_scan_opts *opts,
				unsigned char *buf, struct mp_error *err)
{
	const struct mp_pack *pack = s->pack;
	uint64_t total = pack->object_count * pack->m.object_bytes;

	for (uint64_t o = 0; o < pack->object_count; o++) {
		enum mp_err rc = scan_object(s, o, buf, err);

		if (rc)
			return rc;
		if (opts->progress)
			opts->progress((o + 1) * pack->m.object_bytes, total, opts->progress_arg);
	}
	return MP_OK;
}

enum mp_err mp_scan_pack(const struct mp_pack *pack, const struct mp_scan_opts *opts,
			 mp_scan_fn fn, void *arg, struct mp_scan_summary *sum,
			 unsigned char sha256[MP_SHA256_LEN], struct mp_error *err)
{
	struct scan s = {.pack = pack, .fn = fn, .arg = arg, .sum = sum};
	struct mp_sha256 *h = NULL;
	/* with hashing the read goes through readahead.h's ring instead */
	unsigned char *buf = opts->hash ? NULL : malloc(SCAN_CHUNK);
	enum mp_err rc;

	memset(sum, 0, sizeof *sum);
	rc = resolve_types(&s, err);
	if (rc == MP_OK && (opts->hash ? !(h = mp_sha256_new()) : !buf))
		rc = mp_fail(err, MP_E_NOMEM, "out of memory scanning %s", pack->file.path);
	if (rc == MP_OK) {
		if (pack->object_count)
			role_begin(&s);
		posix_fadvise(pack->file.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		rc = opts->hash ? scan_hashing(&s, opts, h, sha256, err)
				: scan_objects(&s, opts, buf, err);
	}
	free(buf);
	mp_sha256_free(h);
	return rc;
}
