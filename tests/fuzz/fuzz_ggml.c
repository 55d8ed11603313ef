/*
 * fuzz_ggml.c - differential libFuzzer target: the same bytes to moepack's
 * GGUF reader and to ggml's own gguf_init_from_file(), whose verdicts must
 * agree as gguf.h promises: whatever the reader accepts, ggml loads, with
 * the same tensor names (as ggml cuts them at a NUL) and types, in the same
 * order; whatever ggml refuses, the reader refuses.  The reader may refuse
 * more (data past the end of the file, its limits), never less.
 *
 * ggml is loaded at run time from the libggml-base.so named by
 * $MOEPACK_GGML_LIB (README: the oracle library); without it the target
 * says so and exits 2 rather than pass having compared nothing.  ggml
 * abort()s on some inputs, so it reads each input in a child process: a
 * child that dies refused the file.  Only `make fuzz` builds this target.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"
#include "writer/gguf.h"

#define MAX_TENSORS 4096

struct gguf_init_params {
	bool no_alloc;
	void **ctx;
};

static void *(*g_init)(const char *, struct gguf_init_params);
static int64_t (*g_n_tensors)(const void *);
static const char *(*g_tensor_name)(const void *, int64_t);
static int (*g_tensor_type)(const void *, int64_t);
static void (*g_free)(void *);

static void quiet(int level, const char *text, void *user)
{
	(void)level;
	(void)text;
	(void)user;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *lib = getenv("MOEPACK_GGML_LIB");
	void (*log_set)(void (*)(int, const char *, void *), void *);
	void *h;

	(void)argc;
	(void)argv;
	if (!lib || !*lib) {
		fprintf(stderr, "fuzz_ggml: MOEPACK_GGML_LIB is not set: it must name ggml's "
			"libggml-base.so (see README, Fuzzing); nothing to compare with\n");
		exit(2);
	}
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "fuzz_ggml: cannot load %s: %s\n", lib, dlerror());
		exit(2);
	}
	*(void **)&g_init = dlsym(h, "gguf_init_from_file");
	*(void **)&g_n_tensors = dlsym(h, "gguf_get_n_tensors");
	*(void **)&g_tensor_name = dlsym(h, "gguf_get_tensor_name");
	*(void **)&g_tensor_type = dlsym(h, "gguf_get_tensor_type");
	*(void **)&g_free = dlsym(h, "gguf_free");
	*(void **)&log_set = dlsym(h, "ggml_log_set");
	if (!g_init || !g_n_tensors || !g_tensor_name || !g_tensor_type || !g_free) {
		fprintf(stderr, "fuzz_ggml: %s lacks the gguf_* functions\n", lib);
		exit(2);
	}
	if (log_set)
		log_set(quiet, NULL);
	return 0;
}

/* What one reader made of the file: refused, or its tensors. */
struct verdict {
	int32_t ok;
	int32_t count;
	struct {
		char name[MP_GGUF_NAME_MAX + 1];
		int32_t type;
	} t[MAX_TENSORS];
};

static struct verdict ours, theirs;

static enum mp_err on_tensor(const struct mp_gguf_tensor *t, void *ctx, struct mp_error *err)
{
	struct verdict *v = ctx;

	(void)err;
	if (v->count < MAX_TENSORS) {
		snprintf(v->t[v->count].name, sizeof v->t[v->count].name, "%s", t->name);
		v->t[v->count].type = (int32_t)t->type;
	}
	v->count++;
	return MP_OK;
}

/* ggml's verdict on the file behind fd, read in a child through a shared page. */
static void ggml_verdict(int fd, struct verdict *out)
{
	struct verdict *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char path[64];
	pid_t pid;
	int status;

	if (shared == MAP_FAILED)
		mp_fuzz_bug("mmap failed");
	memset(shared, 0, sizeof *shared);
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	pid = fork();
	if (pid < 0)
		mp_fuzz_bug("fork failed");
	if (pid == 0) {
		struct gguf_init_params p = {true, NULL};
		void *ctx = g_init(path, p);

		if (ctx) {
			int64_t n = g_n_tensors(ctx);

			shared->count = (int32_t)(n < INT32_MAX ? n : INT32_MAX);
			for (int64_t i = 0; i < n && i < MAX_TENSORS; i++) {
				snprintf(shared->t[i].name, sizeof shared->t[i].name, "%s",
					 g_tensor_name(ctx, i));
				shared->t[i].type = g_tensor_type(ctx, i);
			}
			shared->ok = 1;
			g_free(ctx);
		}
		_exit(0);
	}
	/* libFuzzer's -timeout ticks with SIGALRM: EINTR is normal here */
	while (waitpid(pid, &status, 0) != pid)
		if (errno != EINTR)
			mp_fuzz_bug("waitpid failed");
	memcpy(out, shared, sizeof *out);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		out->ok = 0; /* ggml died of the file: a refusal */
	munmap(shared, sizeof *shared);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mp_gguf_header hdr;
	struct mp_error err = {0};
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
	memset(&ours, 0, sizeof ours);
	rc = mp_gguf_read(fd, "fuzz.gguf", &hdr, on_tensor, &ours, &err);
	ours.ok = rc == MP_OK;
	if (ours.ok) {
		ggml_verdict(fd, &theirs);
		if (!theirs.ok)
			mp_fuzz_bug("moepack accepts a file ggml refuses");
		if (theirs.count != ours.count)
			mp_fuzz_bug("moepack reads %d tensors, ggml %d", ours.count, theirs.count);
		for (int i = 0; i < ours.count && i < MAX_TENSORS; i++)
			if (strcmp(ours.t[i].name, theirs.t[i].name) != 0 ||
			    ours.t[i].type != theirs.t[i].type)
				mp_fuzz_bug("tensor %d: moepack reads %s type %d, ggml %s type %d", i,
					    ours.t[i].name, ours.t[i].type, theirs.t[i].name,
					    theirs.t[i].type);
	}
	mp_fuzz_report(rc, &err);
	close(fd);
	return 0;
}
