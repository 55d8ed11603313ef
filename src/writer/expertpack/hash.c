/* ephash.c - one pass over the source GGUF: its digest, its metadata's, every
 * tensor's and every routed slice's, as SGLang's builder records them. */
#include "config.h"

#include "writer/expertpack/hash.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "pack/expertpack/ident.h"

#define CHUNK (16u << 20)

struct hashing {
	struct mp_epw_plan *p;
	struct mp_epw_digests *d;
	struct mp_sha256 *whole, *meta, *tensor, *slice;
	size_t *order;   /* tensors by offset */
	size_t at;       /* the next tensor to finish, in order[] */
	uint64_t sliced; /* bytes of the current tensor hashed */
};

static int by_offset(const void *a, const void *b, void *ctx)
{
	const struct mp_epw_tensor *t = ctx;
	uint64_t x = t[*(const size_t *)a].offset, y = t[*(const size_t *)b].offset;

	return x < y ? -1 : x > y;
}

/* Where the digest of expert e's slice of routed tensor t goes. */
static unsigned char *slice_digest(struct hashing *h, const struct mp_epw_tensor *t, uint64_t e)
{
	uint64_t entry = (t->layer * h->p->experts + e) * MP_EP_ROLES + t->role;

	return h->d->slice + entry * MP_SHA256_LEN;
}

/* n bytes of tensor t from its byte h->sliced on: its digest, its slices'. */
static void feed_tensor(struct hashing *h, struct mp_epw_tensor *t, const unsigned char *b,
			uint64_t n)
{
	mp_sha256_update(h->tensor, b, n);
	while (t->routed && n) {
		uint64_t in = h->sliced % h->p->role_bytes, take = h->p->role_bytes - in;

		take = take < n ? take : n;
		mp_sha256_update(h->slice, b, take);
		h->sliced += take;
		b += take;
		n -= take;
		if (h->sliced % h->p->role_bytes == 0)
			mp_sha256_final(h->slice, slice_digest(h, t, h->sliced / h->p->role_bytes - 1));
	}
	if (!t->routed)
		h->sliced += n;
}

/* The chunk [pos, pos + n) of the file, for every digest it touches. */
static void feed(struct hashing *h, uint64_t pos, const unsigned char *b, uint64_t n)
{
	uint64_t end = pos + n;

	mp_sha256_update(h->whole, b, n);
	if (pos < h->p->gguf_data_offset)
		mp_sha256_update(h->meta, b, (h->p->gguf_data_offset - pos < n
						  ? h->p->gguf_data_offset - pos : n));
	while (h->at < h->p->ntensors) {
		struct mp_epw_tensor *t = &h->p->tensors[h->order[h->at]];
		uint64_t from = t->offset + h->sliced, to = t->offset + t->nbytes;

		if (from < to && from >= end)
			return;
		if (from < to) {
			uint64_t a = from > pos ? from : pos, z = to < end ? to : end;

			feed_tensor(h, t, b + (a - pos), z - a);
			if (z < to)
				return;
		}
		mp_sha256_final(h->tensor, t->sha256);
		h->sliced = 0;
		h->at++;
	}
}

static enum mp_err hash_file(struct hashing *h, int fd, const struct mp_cancel *cancel,
			     struct mp_error *err)
{
	unsigned char *buf = malloc(CHUNK);
	enum mp_err rc = MP_OK;

	if (!buf)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (uint64_t pos = 0; pos < h->p->gguf_size && !rc; pos += CHUNK) {
		uint64_t n = h->p->gguf_size - pos < CHUNK ? h->p->gguf_size - pos : CHUNK;

		/* a 147 GB pass must stop promptly */
		if ((rc = mp_cancel_check(cancel, err, "hashing %s", h->p->gguf_path)))
			break;
		rc = mp_pread_full(fd, buf, n, pos, "GGUF file", h->p->gguf_path, MP_E_GGUF_IO, err);
		if (!rc)
			feed(h, pos, buf, n);
	}
	if (!rc)
		feed(h, h->p->gguf_size, buf, 0); /* tensors of no bytes at the end */
	free(buf);
	return rc;
}

static enum mp_err hashing_init(struct hashing *h, struct mp_epw_plan *p,
				struct mp_epw_digests *d, struct mp_error *err)
{
	memset(h, 0, sizeof *h);
	h->p = p;
	h->d = d;
	h->whole = mp_sha256_new();
	h->meta = mp_sha256_new();
	h->tensor = mp_sha256_new();
	h->slice = mp_sha256_new();
	h->order = malloc((p->ntensors + 1) * sizeof *h->order);
	d->slice = malloc(p->index_count * MP_SHA256_LEN + 1);
	if (!h->whole || !h->meta || !h->tensor || !h->slice || !h->order || !d->slice)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (size_t i = 0; i < p->ntensors; i++)
		h->order[i] = i;
	qsort_r(h->order, p->ntensors, sizeof *h->order, by_offset, p->tensors);
	return MP_OK;
}

static void hashing_free(struct hashing *h)
{
	mp_sha256_free(h->whole);
	mp_sha256_free(h->meta);
	mp_sha256_free(h->tensor);
	mp_sha256_free(h->slice);
	free(h->order);
}

enum mp_err mp_epw_hash_source(struct mp_epw_plan *p, struct mp_epw_digests *d,
			       const struct mp_cancel *cancel, struct mp_error *err)
{
	char source_hex[MP_SHA256_HEX], config_hex[MP_SHA256_HEX];
	struct hashing h;
	struct stat st;
	int fd = -1;
	enum mp_err rc = hashing_init(&h, p, d, err);

	if (!rc)
		rc = mp_open_regular(p->gguf_path, "GGUF file", MP_E_GGUF_IO, &fd, &st, err);
	if (!rc && (uint64_t)st.st_size != p->gguf_size)
		rc = mp_fail(err, MP_E_GGUF_IO, "%s %s: its size changed from %llu to %llu bytes",
			     mp_err_summary(MP_E_GGUF_IO), p->gguf_path,
			     (unsigned long long)p->gguf_size, (unsigned long long)st.st_size);
	if (!rc)
		rc = hash_file(&h, fd, cancel, err);
	if (fd >= 0)
		close(fd);
	if (!rc) {
		mp_sha256_final(h.whole, d->source);
		mp_sha256_final(h.meta, d->metadata);
		mp_sha256_hex(d->source, source_hex);
		mp_sha256_hex(p->config_sha256, config_hex);
		mp_ep_model_identity(source_hex, config_hex, d->model);
	}
	hashing_free(&h);
	return rc;
}
