/*
 * buildcompare.c - judging a pack that is already there against the
 * shards (build_internal.h's mp_build_judge_pack()): its size, its header
 * and index byte for byte, and the reference's evenly spaced sample
 * entries (every entry with `all`), each payload compared with its GGUF
 * slice.  What keeping an existing pack or taking a --resume needs.
 */
#include "config.h"

#include "writer/kimi/build.h"
#include "writer/kimi/build_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "base/text.h"
#include "pack/digest.h"
#include "pack/kimi/index.h"
#include "writer/kimi/buildseal.h"

static enum mp_err compare_prefix(struct build *b, int fd, const char *path,
				  struct mp_error *err)
{
	for (uint64_t pos = 0; pos < b->l.data_start;) {
		size_t n = b->l.data_start - pos < CHUNK ? (size_t)(b->l.data_start - pos) : CHUNK;
		enum mp_err rc = mp_cancel_check(b->o->cancel, err, "comparing the pack's index");

		if (!rc)
			rc = mp_pread_full(fd, b->buf, n, pos, "pack", path, MP_E_PACK_IO, err);

		if (rc)
			return rc;
		mp_build_prefix_bytes(&b->l, pos, b->buf2, n);
		if (b->hash_judged)
			mp_build_seal_feed(&b->seal, b->buf, n);
		if (memcmp(b->buf, b->buf2, n) != 0) {
			size_t k = 0;

			while (b->buf[k] == b->buf2[k])
				k++;
			pos += k;
			if (pos < MP_HEADER_SIZE)
				return mp_fail(err, MP_E_PACK_LAYOUT, "%s: %s header differs at "
					       "byte %" PRIu64, mp_err_summary(MP_E_PACK_LAYOUT),
					       path, pos);
			if (pos < b->l.index_end)
				return mp_fail(err, MP_E_PACK_LAYOUT, "%s: %s index entry %" PRIu64
					       " differs at byte %" PRIu64,
					       mp_err_summary(MP_E_PACK_LAYOUT), path,
					       (pos - MP_HEADER_SIZE) / MP_ENTRY_SIZE, pos);
			return mp_fail(err, MP_E_PACK_LAYOUT, "%s: %s padding before data_start "
				       "is not zero at byte %" PRIu64,
				       mp_err_summary(MP_E_PACK_LAYOUT), path, pos);
		}
		pos += n;
	}
	return MP_OK;
}

/* Payload of entry i against its GGUF slice. */
static enum mp_err compare_entry(struct build *b, int fd, const char *path, uint64_t i,
				 struct mp_error *err)
{
	const struct mp_shard *s;
	uint64_t src, n, dst;
	long delay = mp_build_test_delay_ms();

	mp_cancel_sleep_ms(b->o->cancel, delay);
	mp_build_entry_source(b, i, &s, &src, &n, &dst);
	for (uint64_t done = 0; done < n;) {
		size_t k = n - done < CHUNK ? (size_t)(n - done) : CHUNK;
		enum mp_err rc = mp_cancel_check(b->o->cancel, err,
						 "comparing the pack with the shards");

		if (!rc)
			rc = mp_pread_full(fd, b->buf, k, dst + done, "pack", path, MP_E_PACK_IO,
					   err);

		if (!rc)
			rc = mp_pread_full(s->fd, b->buf2, k, src + done, "GGUF file", s->path,
					   MP_E_GGUF_IO, err);
		if (rc)
			return rc;
		if (b->hash_judged)
			mp_build_seal_feed(&b->seal, b->buf, k);
		if (memcmp(b->buf, b->buf2, k) != 0) {
			char name[MP_ENTRY_NAME_LEN];
			size_t at = 0;

			while (b->buf[at] == b->buf2[at])
				at++;
			mp_tensor_name(name, sizeof name, MP_ACTIVE_FIRST + i / 3 / b->l.experts,
				       (enum mp_role)(i % 3));
			return mp_fail(err, MP_E_PAYLOAD_MISMATCH,
				       "%s: entry %" PRIu64 " (%s expert %" PRIu64 ") at pack "
				       "byte %" PRIu64 ", %s byte %" PRIu64,
				       mp_err_summary(MP_E_PAYLOAD_MISMATCH), i, name,
				       i / 3 % b->l.experts, dst + done + at, s->path,
				       src + done + at);
		}
		done += k;
	}
	return MP_OK;
}

/* round(i * (count - 1) / (n - 1)) with Python's round-half-even; one
 * sample (or none) is entry 0. */
uint64_t mp_build_sample_index(uint64_t i, uint64_t count, uint64_t n)
{
	unsigned __int128 x;
	uint64_t d, q, r;

	if (n < 2 || count == 0)
		return 0;
	x = (unsigned __int128)i * (count - 1);
	d = n - 1;
	q = (uint64_t)(x / d);
	r = (uint64_t)(x % d);
	if (2 * (unsigned __int128)r > d || (2 * (unsigned __int128)r == d && (q & 1)))
		q++;
	return q;
}

/*
 * The samples asked for, at most one per entry: past count, evenly spaced
 * samples are every entry anyway, and a huge --samples must not loop.
 */
static uint64_t build_samples(const struct mp_gguf_build_opts *o, uint64_t count)
{
	if (o->compare_all)
		return count;
	return o->samples < count ? o->samples : count;
}

/* How many entries compare_payloads() will compare: duplicates removed. */
uint64_t mp_build_planned_samples(const struct mp_gguf_build_opts *o, uint64_t count)
{
	uint64_t n = build_samples(o, count), distinct = 0, last = UINT64_MAX;

	if (o->compare_all || n <= 1)
		return n;
	for (uint64_t s = 0; s < n; s++) {
		uint64_t i = mp_build_sample_index(s, count, n);

		distinct += i != last;
		last = i;
	}
	return distinct;
}

static enum mp_err compare_payloads(struct build *b, int fd, const char *path,
				    struct mp_error *err)
{
	uint64_t count = b->l.index_count, last = UINT64_MAX;
	uint64_t samples = build_samples(b->o, count);

	b->res->samples_compared = 0;
	b->res->sampled = !b->all;
	if (b->all) {
		for (uint64_t i = 0; i < count; i++) {
			enum mp_err rc = compare_entry(b, fd, path, i, err);

			if (rc)
				return rc;
			b->res->samples_compared++;
			if (b->o->progress)
				b->o->progress(i + 1, count, b->o->progress_arg);
		}
		return MP_OK;
	}
	for (uint64_t s = 0; s < samples; s++) {
		uint64_t i = mp_build_sample_index(s, count, samples);
		enum mp_err rc;

		if (i == last) /* duplicates removed */
			continue;
		last = i;
		rc = compare_entry(b, fd, path, i, err);
		if (rc)
			return rc;
		b->res->samples_compared++;
	}
	return MP_OK;
}

/*
 * The reference's validation of a pack by the shards: layout and samples,
 * or with `all` every payload byte (what keeping an existing pack needs).
 */
enum mp_err mp_build_judge_pack(struct build *b, const char *path, bool all,
				struct mp_error *err)
{
	struct stat st;
	enum mp_err rc;
	int fd;

	if ((rc = mp_open_regular(path, "pack", MP_E_PACK_IO, &fd, &st, err)))
		return rc;
	b->all = all || b->o->compare_all;
	if (b->hash_judged)
		mp_build_seal_seek(&b->seal, 0);
	if ((uint64_t)st.st_size != b->l.size)
		rc = mp_fail(err, MP_E_PACK_LAYOUT, "%s: %s is %" PRIu64 " bytes, the shards "
			     "give %" PRIu64, mp_err_summary(MP_E_PACK_LAYOUT), path,
			     (uint64_t)st.st_size, b->l.size);
	if (!rc)
		rc = compare_prefix(b, fd, path, err);
	if (!rc)
		rc = compare_payloads(b, fd, path, err);
	close(fd);
	return rc;
}
