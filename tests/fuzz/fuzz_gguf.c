/*
 * fuzz_gguf.c - libFuzzer target: the GGUF reader and the Kimi-K3 quant
 * type check on arbitrary file bytes.
 *
 * The input is the whole file, handed over as a memfd so that the reader
 * does real preads against a real size.  Besides the sanitizers, the
 * target checks what gguf.h promises of every tensor info the reader
 * passes on (at most MP_GGUF_MAX_DIMS dims, a name string shorter than 64
 * bytes whose ggml view, cut at a NUL, is name_len bytes) and that a successful read
 * saw exactly tensor_count tensor infos.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "writer/gguf.h"
#include "writer/kimi/ggufcheck.h"

struct walk {
	uint64_t seen;
};

static enum mp_err on_tensor(const struct mp_gguf_tensor *t, void *ctx,
			     struct mp_error *err)
{
	struct walk *w = ctx;

	(void)err;

	if (t->index != w->seen)
		mp_fuzz_bug("tensor info %llu passed as index %llu",
			    (unsigned long long)w->seen, (unsigned long long)t->index);
	if (t->n_dims > MP_GGUF_MAX_DIMS)
		mp_fuzz_bug("tensor %llu passed with %u dims",
			    (unsigned long long)t->index, t->n_dims);
	if (!t->name)
		mp_fuzz_bug("tensor %llu passed without a name", (unsigned long long)t->index);
	/* gguf.h: ggml's view of the name, cut at a NUL, of a string < 64 bytes. */
	if (t->name_bytes > MP_GGUF_NAME_MAX || t->name_len > t->name_bytes ||
	    strlen(t->name) != t->name_len)
		mp_fuzz_bug("tensor %llu: name_len %llu, name_bytes %llu, strlen %zu",
			    (unsigned long long)t->index, (unsigned long long)t->name_len,
			    (unsigned long long)t->name_bytes, strlen(t->name));
	w->seen++;
	return MP_OK;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mp_gguf_header hdr;
	struct mp_gguf_check_result res = { 0 };
	struct mp_error err;
	struct walk w = { 0 };
	enum mp_err rc;
	int fd = memfd_create("fuzz.gguf", MFD_CLOEXEC);

	if (fd < 0)
		mp_fuzz_bug("memfd_create failed");
	for (size_t done = 0; done < size;) {
		ssize_t n = write(fd, data + done, size - done);
		if (n <= 0)
			mp_fuzz_bug("cannot write the input to a memfd");
		done += (size_t)n;
	}

	rc = mp_gguf_read(fd, "fuzz.gguf", &hdr, on_tensor, &w, &err);
	if (rc == MP_OK && w.seen != hdr.tensor_count)
		mp_fuzz_bug("read accepted after %llu of %llu tensor infos",
			    (unsigned long long)w.seen, (unsigned long long)hdr.tensor_count);
	if (rc != MP_OK && err.code != rc)
		mp_fuzz_bug("mp_gguf_read returned %s but err says %s", mp_err_name(rc),
			    mp_err_name(err.code));

	rc = mp_gguf_check_fd(fd, "fuzz.gguf", &res, &err);
	if (res.tensors_checked > res.tensor_count)
		mp_fuzz_bug("checked %llu tensors of %llu",
			    (unsigned long long)res.tensors_checked,
			    (unsigned long long)res.tensor_count);
	mp_fuzz_report(rc, &err);
	close(fd);
	return 0;
}
