/*
 * ggufwrite.c - a GGUF writer and the demo checkpoint of `moepack mkdemo
 * --gguf` (ggufwrite.h).
 *
 * The metadata is small (a few hundred tensor infos) and is built in memory;
 * tensor data is generated and written in chunks, so a checkpoint of any
 * size costs one buffer.
 */
#include "config.h"

#include "writer/ggufwrite.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack/pack.h"
#include "base/buf.h"
#include "base/file.h"
#include "base/outfile.h"
#include "base/quant.h"

#define ALIGNMENT 32u           /* ggml's default: no general.alignment key */
#define CHUNK (4u << 20)        /* tensor data generated per write */
#define GGUF_VERSION 3

/* ---- the writer ------------------------------------------------------------ */

/* The metadata is built in memory (base/buf.h), whose one failure, out of
 * memory, mp_gguf_write() checks once before it writes. */

static void put_u32(struct mp_buf *m, uint32_t v)
{
	unsigned char b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	mp_buf_add(m, b, sizeof b);
}

static void put_u64(struct mp_buf *m, uint64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	mp_buf_add(m, b, sizeof b);
}

static void put_str(struct mp_buf *m, const char *s)
{
	size_t n = strlen(s);

	put_u64(m, n);
	mp_buf_add(m, s, n);
}

static uint64_t pad(uint64_t n)
{
	return (n + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
}

/* Weights and bytes per block of the types the writer encodes. */
static bool block_of(uint32_t type, unsigned *weights, unsigned *bytes)
{
	const struct mp_quant_type *q =
		type == MP_GGML_F32 ? mp_ggml_type(type) : mp_quant_by_id((int)type);

	if (!q)
		return false;
	*weights = q->block_weights;
	*bytes = q->block_bytes;
	return true;
}

uint64_t mp_gguf_out_tensor_bytes(const struct mp_gguf_out_tensor *t)
{
	unsigned bw, bb;
	uint64_t n;

	if (!block_of(t->type, &bw, &bb) || t->n_dims < 1 || t->n_dims > MP_GGUF_MAX_DIMS ||
	    t->dims[0] == 0 || t->dims[0] % bw)
		return 0;
	n = t->dims[0] / bw * bb;
	for (uint32_t i = 1; i < t->n_dims; i++)
		if (t->dims[i] == 0 || __builtin_mul_overflow(n, t->dims[i], &n))
			return 0;
	return n >> 62 ? 0 : n;
}

static enum mp_err write_at(int fd, const void *data, size_t len, uint64_t pos,
			    const char *path, struct mp_error *err)
{
	size_t done;
	int e = mp_pwrite_all(fd, data, len, pos, &done);

	if (e)
		return mp_fail(err, MP_E_GGUF_IO, "cannot write GGUF file %s at byte %" PRIu64
			       ": %s", path, pos + done, mp_write_failure(e));
	return MP_OK;
}

/* One tensor's data and its padding, generated chunk by chunk. */
static enum mp_err write_data(int fd, const char *path, const struct mp_gguf_out_tensor *t,
			      uint64_t pos, unsigned char *buf, struct mp_error *err)
{
	const struct mp_quant_type *q = t->demo ? mp_quant_by_id((int)t->type) : NULL;
	uint64_t nbytes = mp_gguf_out_tensor_bytes(t), total = pad(nbytes), done = 0;
	size_t step = q ? CHUNK / q->block_bytes * q->block_bytes : CHUNK;
	enum mp_err rc = MP_OK;

	while (!rc && done < total) {
		uint64_t left = (done < nbytes ? nbytes : total) - done;
		size_t n = left < step ? (size_t)left : step;

		if (done < nbytes && q) {
			if (mp_quant_fill_demo(q, t->seed, done, buf, n) != 0)
				return mp_fail(err, MP_E_USAGE, "invalid usage: %s: no demo blocks "
					       "of type %u", t->name, t->type);
		} else {
			memset(buf, 0, n);
		}
		rc = write_at(fd, buf, n, pos + done, path, err);
		done += n;
	}
	return rc;
}

static void put_kv(struct mp_buf *m, const struct mp_gguf_out_kv *kv)
{
	put_str(m, kv->key);
	put_u32(m, kv->type);
	if (kv->type == MP_GGUF_STRING) {
		put_str(m, kv->str);
	} else if (kv->type == MP_GGUF_U16) {
		unsigned char b[2] = {(unsigned char)kv->num, (unsigned char)(kv->num >> 8)};

		mp_buf_add(m, b, 2);
	} else {
		put_u32(m, kv->num);
	}
}

/* Header, key-value pairs and tensor infos, padded to the data's start. */
static enum mp_err put_metadata(struct mp_buf *m, const struct mp_gguf_out_kv *kv, size_t nkv,
				const struct mp_gguf_out_tensor *tensors, size_t ntensors,
				struct mp_error *err)
{
	uint64_t offset = 0, data_start;

	mp_buf_add(m, "GGUF", 4);
	put_u32(m, GGUF_VERSION);
	put_u64(m, ntensors);
	put_u64(m, nkv);
	for (size_t i = 0; i < nkv; i++)
		put_kv(m, &kv[i]);
	for (size_t i = 0; i < ntensors; i++) {
		const struct mp_gguf_out_tensor *t = &tensors[i];
		uint64_t n = mp_gguf_out_tensor_bytes(t);

		if (n == 0)
			return mp_fail(err, MP_E_USAGE, "invalid usage: tensor %s cannot be "
				       "written (type %u, %u dimensions)", t->name, t->type,
				       t->n_dims);
		put_str(m, t->name);
		put_u32(m, t->n_dims);
		for (uint32_t d = 0; d < t->n_dims; d++)
			put_u64(m, t->dims[d]);
		put_u32(m, t->type);
		put_u64(m, offset);
		offset += pad(n);
	}
	data_start = pad(m->len);
	while (m->len < data_start)
		mp_buf_add(m, "", 1);
	return MP_OK;
}

enum mp_err mp_gguf_write(int fd, const char *path, const struct mp_gguf_out_kv *kv,
			  size_t nkv, const struct mp_gguf_out_tensor *tensors, size_t ntensors,
			  struct mp_error *err)
{
	struct mp_buf m = {0};
	uint64_t offset;
	unsigned char *buf = NULL;
	enum mp_err rc = put_metadata(&m, kv, nkv, tensors, ntensors, err);

	if (rc) {
		free(m.p);
		return rc;
	}
	if (!m.failed)
		buf = malloc(CHUNK);
	if (m.failed || !buf) {
		free(m.p);
		free(buf);
		return mp_fail(err, MP_E_NOMEM, "out of memory writing %s", path);
	}
	rc = write_at(fd, m.p, m.len, 0, path, err);
	offset = m.len;
	for (size_t i = 0; !rc && i < ntensors; i++) {
		rc = write_data(fd, path, &tensors[i], offset, buf, err);
		offset += pad(mp_gguf_out_tensor_bytes(&tensors[i]));
	}
	free(buf);
	free(m.p);
	return rc;
}

void mp_gguf_out_tensor_init(struct mp_gguf_out_tensor *t, const char *name, uint32_t type,
			     uint32_t n_dims, uint64_t d0, uint64_t d1, uint64_t d2,
			     uint64_t seed)
{
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->type = type;
	t->n_dims = n_dims;
	t->dims[0] = d0;
	t->dims[1] = d1;
	t->dims[2] = d2;
	t->dims[3] = 1;
	t->demo = type == MP_GGML_Q2_K || type == MP_GGML_Q3_K || type == MP_GGML_MXFP4;
	t->seed = seed;
}
