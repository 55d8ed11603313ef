/*
 * fuzz_common.c - helpers shared by the fuzz targets (see fuzz.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "pack/pack.h"

#ifndef MP_FUZZ_SEED_DIR
#define MP_FUZZ_SEED_DIR "tests/fuzz/seeds"
#endif

const char *mp_fuzz_seed_dir(void)
{
	const char *dir = getenv("MP_FUZZ_SEEDS");
	struct stat st;

	if (!dir || !*dir)
		dir = MP_FUZZ_SEED_DIR;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fuzz: seed directory %s is missing (make fuzz-seeds, "
				"or set MP_FUZZ_SEEDS)\n", dir);
		exit(2);
	}
	return dir;
}

void mp_fuzz_bug(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz: BUG: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void mp_fuzz_report(enum mp_err rc, const struct mp_error *err)
{
	if (!getenv("MP_FUZZ_VERBOSE"))
		return;
	printf("%s: %s\n", mp_err_name(rc), rc ? err->msg : "accepted");
	fflush(stdout);
}

void mp_fuzz_write_file(const char *path, const uint8_t *data, size_t size, uint64_t file_size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		mp_fuzz_bug("cannot create %s: %s", path, strerror(errno));
	for (size_t done = 0; done < size;) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0)
			mp_fuzz_bug("cannot write %s: %s", path, strerror(errno));
		done += (size_t)n;
	}
	if (file_size > size && ftruncate(fd, (off_t)file_size) != 0)
		mp_fuzz_bug("cannot extend %s: %s", path, strerror(errno));
	close(fd);
}

/* An accepted pack places every role of every object inside the file. */
static void check_accepted(const struct mp_pack *p)
{
	for (size_t l = 0; l < p->m.layer_count; l++) {
		uint64_t layer = p->m.layer_ids[l];

		for (uint64_t e = 0; e < p->m.num_experts; e++) {
			for (int r = 0; r < MP_ROLE_COUNT; r++) {
				uint64_t off, n;
				struct mp_error err;

				if (mp_pack_lookup(p, layer, e, r, &off, &n, &err) != MP_OK)
					mp_fuzz_bug("accepted pack: lookup %llu/%llu/%s: %s",
						    (unsigned long long)layer,
						    (unsigned long long)e, mp_role_name(r),
						    err.msg);
				if (off < p->m.data_start || n > p->file.size ||
				    off > p->file.size - n)
					mp_fuzz_bug("accepted pack: %llu/%llu/%s at %llu+%llu "
						    "outside data %llu..%llu",
						    (unsigned long long)layer,
						    (unsigned long long)e, mp_role_name(r),
						    (unsigned long long)off,
						    (unsigned long long)n,
						    (unsigned long long)p->m.data_start,
						    (unsigned long long)p->file.size);
			}
		}
	}
}

void mp_fuzz_open_pack(const char *pack_path, const char *manifest_path)
{
	struct mp_open_opts opts = {.manifest_path = manifest_path};
	struct mp_pack *p = NULL;
	struct mp_error err;
	enum mp_err rc = mp_pack_open(&p, pack_path, &opts, &err);

	if (rc == MP_OK) {
		if (!p)
			mp_fuzz_bug("mp_pack_open returned ok without a pack");
		check_accepted(p);
		mp_pack_close(p);
	} else {
		if (p)
			mp_fuzz_bug("mp_pack_open failed (%s) but returned a pack",
				    mp_err_name(rc));
		if (err.code != rc)
			mp_fuzz_bug("returned %s but err says %s", mp_err_name(rc),
				    mp_err_name(err.code));
	}
	mp_fuzz_report(rc, &err);
}

void mp_fuzz_work_dir(const char *target, char *dir, size_t dir_len, char *pack, size_t pack_len,
		      char *manifest, size_t manifest_len)
{
	const char *tmp = getenv("TMPDIR");

	/* tmpfs when there is one: the targets rewrite their files each run */
	if (!tmp || !*tmp)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, dir_len, "%s/%s.XXXXXX", tmp, target);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "%s: mkdtemp %s: %s\n", target, dir, strerror(errno));
		exit(2);
	}
	snprintf(pack, pack_len, "%s/f.pack", dir);
	snprintf(manifest, manifest_len, "%s/f.pack.manifest.json", dir);
}
