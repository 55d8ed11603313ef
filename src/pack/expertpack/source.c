/*
 * epsource.c - the source GGUF against the manifest and the pack, as the
 * offline validator checks it: its size; with full, every tensor's digest
 * (in source order) and the whole file's; then the sampled slices, each
 * compared byte for byte with its pack bytes.  The sample is the one the
 * validator draws (pyrandom.h), so both compare the same slices.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "pack/expertpack/check.h"
#include "pack/mjson.h"
#include "pack/expertpack/pyrandom.h"
#include "pack/readahead.h"

#define COMPARE_CHUNK (1u << 20)

struct source {
	int fd;
	uint64_t size;
	const char *path;
};

struct span {
	uint64_t offset, nbytes;
	size_t index;
};

static int by_offset(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index; /* stable, as Python sorts */
}

static enum mp_err hash_piece(const unsigned char *buf, size_t len, uint64_t pos, void *arg,
			      struct mp_error *err)
{
	(void)pos;
	(void)err;
	mp_sha256_update(arg, buf, len);
	return MP_OK;
}

/* tensors[s->index]'s bytes against its source_payload_sha256. */
static enum mp_err check_tensor(const struct mp_epcheck *c, const struct source *src,
				const struct span *s, struct mp_sha256 *h, struct mp_error *err)
{
	struct mp_readahead_opts ro = {.cancel = c->o->cancel};
	char path[64], want[MP_SHA256_HEX], hex[MP_SHA256_HEX];
	unsigned char d[MP_SHA256_LEN];
	const char *name;
	enum mp_err rc;

	snprintf(path, sizeof path, "tensors[%zu].name", s->index);
	if ((rc = mp_json_get_string(c->root, path, &name, err)))
		return rc;
	snprintf(path, sizeof path, "tensors[%zu].source_payload_sha256", s->index);
	if ((rc = mp_json_get_digest(c->root, path, want, err)))
		return rc;
	if (s->nbytes > src->size || s->offset > src->size - s->nbytes)
		return mp_fail(err, MP_E_EP_SOURCE_TENSOR,
			       "source tensor SHA-256 does not match manifest: tensors[%zu] (%s), "
			       "%llu bytes at %llu, runs past the end of the source (%llu bytes)",
			       s->index, name, (unsigned long long)s->nbytes,
			       (unsigned long long)s->offset, (unsigned long long)src->size);
	if ((rc = mp_readahead(src->fd, s->offset, s->offset + s->nbytes, src->path, &ro,
			       hash_piece, h, err)))
		return rc;
	mp_sha256_final(h, d);
	mp_sha256_hex(d, hex);
	if (strcmp(hex, want) != 0)
		return mp_fail(err, MP_E_EP_SOURCE_TENSOR,
			       "source tensor SHA-256 does not match manifest: tensors[%zu] (%s) "
			       "hashes to %s, source_payload_sha256 is %s",
			       s->index, name, hex, want);
	return MP_OK;
}

/* Every tensor's range, sorted by source offset. */
static enum mp_err tensor_spans(const struct mp_epcheck *c, struct span **out, size_t *n,
				struct mp_error *err)
{
	json_t *arr;
	enum mp_err rc = mp_json_get_typed(c->root, "tensors", JSON_ARRAY, "an array", &arr, err);

	*out = NULL;
	if (rc)
		return rc;
	*n = json_array_size(arr);
	if (!(*out = calloc(*n + 1, sizeof **out)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (size_t i = 0; i < *n && !rc; i++) {
		char path[64];

		(*out)[i].index = i;
		snprintf(path, sizeof path, "tensors[%zu].source_offset", i);
		rc = mp_json_get_uint(c->root, path, 0, &(*out)[i].offset, err);
		snprintf(path, sizeof path, "tensors[%zu].source_nbytes", i);
		if (!rc)
			rc = mp_json_get_uint(c->root, path, 0, &(*out)[i].nbytes, err);
	}
	if (!rc)
		qsort(*out, *n, sizeof **out, by_offset);
	return rc;
}

/* With full: each tensor's digest, then the whole file's. */
static enum mp_err check_digests(const struct mp_epcheck *c, const struct source *src,
				 struct mp_error *err)
{
	struct mp_sha256 *h = mp_sha256_new();
	struct span *spans = NULL;
	unsigned char d[MP_SHA256_LEN];
	char want[MP_SHA256_HEX], hex[MP_SHA256_HEX];
	size_t n = 0;
	enum mp_err rc = h ? tensor_spans(c, &spans, &n, err)
			   : mp_fail(err, MP_E_NOMEM, "out of memory");

	for (size_t i = 0; i < n && !rc; i++)
		rc = check_tensor(c, src, &spans[i], h, err);
	free(spans);
	mp_sha256_free(h);
	if (rc || (rc = mp_json_get_digest(c->root, "source.sha256", want, err)) ||
	    (rc = mp_sha256_fd(src->fd, src->size, src->path, NULL, NULL, c->o->cancel, d, err)))
		return rc;
	mp_sha256_hex(d, hex);
	if (strcmp(hex, want) != 0)
		return mp_fail(err, MP_E_EP_SOURCE_DIGEST,
			       "source SHA-256 does not match manifest: %s hashes to %s, "
			       "source.sha256 is %s",
			       src->path, hex, want);
	return MP_OK;
}

static enum mp_err bytes_differ(const struct mp_ep_entry *e, uint64_t j, uint64_t at,
				struct mp_error *err)
{
	return mp_fail(err, MP_E_EP_SOURCE_BYTES,
		       "source and pack bytes differ for entry " MP_EP_KEY ": entry %llu, byte "
		       "%llu of the slice (pack byte %llu, source byte %llu)",
		       e->layer, e->expert, e->role_id, (unsigned long long)j,
		       (unsigned long long)at, (unsigned long long)(e->pack_offset + at),
		       (unsigned long long)(e->source_slice_offset + at));
}

/* Entry j's slice of the source against its bytes in the pack. */
static enum mp_err compare_slice(const struct mp_epcheck *c, const struct source *src,
				 uint64_t j, unsigned char *a, unsigned char *b,
				 struct mp_error *err)
{
	unsigned char raw[MP_EP_ENTRY_SIZE];
	struct mp_ep_entry e;
	enum mp_err rc = mp_pread_full(c->ep->file.fd, raw, sizeof raw,
				       MP_EP_HEADER_SIZE + j * MP_EP_ENTRY_SIZE, "pack",
				       c->ep->file.path, MP_E_PACK_IO, err);

	if (rc)
		return rc;
	mp_ep_entry_decode(raw, &e);
	if (e.source_slice_offset > src->size || e.pack_nbytes > src->size - e.source_slice_offset)
		return mp_fail(err, MP_E_EP_SOURCE_BYTES,
			       "source and pack bytes differ for entry " MP_EP_KEY ": entry %llu's "
			       "slice, %llu bytes at %llu, runs past the end of the source (%llu "
			       "bytes)",
			       e.layer, e.expert, e.role_id, (unsigned long long)j,
			       (unsigned long long)e.pack_nbytes,
			       (unsigned long long)e.source_slice_offset,
			       (unsigned long long)src->size);
	for (uint64_t at = 0; at < e.pack_nbytes && !rc; at += COMPARE_CHUNK) {
		size_t n = e.pack_nbytes - at < COMPARE_CHUNK ? (size_t)(e.pack_nbytes - at)
							      : COMPARE_CHUNK;

		if ((rc = mp_cancel_check(c->o->cancel, err, "comparing %s with %s", c->ep->file.path,
					  src->path)) ||
		    (rc = mp_pread_full(c->ep->file.fd, a, n, e.pack_offset + at, "pack", c->ep->file.path,
					MP_E_PACK_IO, err)) ||
		    (rc = mp_pread_full(src->fd, b, n, e.source_slice_offset + at, "GGUF file",
					src->path, MP_E_GGUF_IO, err)))
			return rc;
		if (memcmp(a, b, n) != 0) {
			size_t k = 0;

			while (a[k] == b[k])
				k++;
			return bytes_differ(&e, j, at + k, err);
		}
	}
	return rc;
}

/* The offline validator's sample: seeded by source.sha256's first 16 hex
 * digits, drawn from the entries in file order. */
static enum mp_err check_samples(const struct mp_epcheck *c, const struct source *src,
				 struct mp_error *err)
{
	uint64_t n = c->ep->index_count, k = c->o->samples ? c->o->samples : MP_EP_SAMPLES;
	unsigned char *a = NULL, *b = NULL;
	uint64_t *pick = NULL, seed;
	struct mp_pyrandom r;
	char sha[MP_SHA256_HEX];
	enum mp_err rc = mp_json_get_digest(c->root, "source.sha256", sha, err);

	if (rc || k == MP_EP_NO_SAMPLES)
		return rc;
	k = k < n ? k : n;
	sha[16] = '\0';
	seed = strtoull(sha, NULL, 16);
	mp_pyrandom_seed(&r, seed);
	pick = malloc((size_t)k * sizeof *pick + 1);
	a = malloc(COMPARE_CHUNK);
	b = malloc(COMPARE_CHUNK);
	if (!pick || !a || !b || mp_pyrandom_sample(&r, n, k, pick) != 0)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory");
	for (uint64_t i = 0; i < k && !rc; i++)
		rc = compare_slice(c, src, pick[i], a, b, err);
	free(pick);
	free(a);
	free(b);
	return rc;
}

enum mp_err mp_epcheck_source(struct mp_epcheck *c, struct mp_error *err)
{
	struct source src = {.fd = -1, .path = c->o->source_path};
	uint64_t size;
	struct stat st;
	enum mp_err rc;

	if ((rc = mp_open_regular(src.path, "GGUF file", MP_E_GGUF_IO, &src.fd, &st, err)))
		return rc;
	src.size = (uint64_t)st.st_size;
	if (!(rc = mp_json_get_uint(c->root, "source.size", 0, &size, err)) && size != src.size)
		rc = mp_fail(err, MP_E_EP_SOURCE_SIZE,
			     "source size does not match manifest: %s has %llu bytes, source.size "
			     "is %llu",
			     src.path, (unsigned long long)src.size, (unsigned long long)size);
	if (!rc && c->o->full)
		rc = check_digests(c, &src, err);
	if (!rc)
		rc = check_samples(c, &src, err);
	close(src.fd);
	return rc;
}
