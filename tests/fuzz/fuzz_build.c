/*
 * fuzz_build.c - libFuzzer target: a GGUF shard set and its config.json
 * through every check `moepack build --check-only` makes before it reads
 * a pack: set discovery and split keys, the expert tensors, the config,
 * the inventory and the manifest made from it.
 *
 * The input is a small container, so that a fuzzer can grow a set of
 * sparse multi-gigabyte shards from a few KB:
 *
 *     u8  shards (1..3; 0 or more is taken modulo 3, plus 1)
 *     u32 config length, then the config bytes
 *     per shard: u32 length, u64 apparent size, then the bytes
 *
 * (little-endian; a short input leaves the rest empty).  Each shard is
 * written as a file of its bytes, truncated up (a hole) to its apparent
 * size, at most 1 TiB, in a directory of its own under $TMPDIR, named
 * fz-0000i-of-0000N.gguf (fz.gguf for one).  Besides the sanitizers, the
 * target checks that a set the checks pass gets as far as the missing
 * pack (pack_io) or a named refusal, never a success without a pack.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "writer/kimi/build.h"
#include "writer/kimi/shards.h"

#define MAX_APPARENT (1ULL << 40)

static char dir[4096];

static void clear_dir(void);

static void remove_dir(void)
{
	clear_dir();
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof dir, "%s/fuzz_build.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		mp_fuzz_bug("cannot create a directory under %s", tmp && *tmp ? tmp : "/tmp");
	atexit(remove_dir);
	return 0;
}

struct cursor {
	const uint8_t *p;
	size_t left;
};

static uint64_t take_le(struct cursor *c, unsigned n)
{
	uint64_t v = 0;

	for (unsigned k = 0; k < n && c->left; k++, c->p++, c->left--)
		v |= (uint64_t)*c->p << (8 * k);
	return v;
}

static void write_file(const char *path, const uint8_t *data, size_t n, uint64_t apparent)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		mp_fuzz_bug("cannot create %s", path);
	for (size_t done = 0; done < n;) {
		ssize_t put = write(fd, data + done, n - done);

		if (put <= 0)
			mp_fuzz_bug("cannot write %s", path);
		done += (size_t)put;
	}
	if (apparent > n && ftruncate(fd, (off_t)(apparent < MAX_APPARENT ? apparent
								   : MAX_APPARENT)) != 0)
		mp_fuzz_bug("cannot extend %s", path);
	close(fd);
}

/* Remove everything the previous input left in dir. */
static void clear_dir(void)
{
	static const char *const names[] = {
		"config.json", "fz.gguf", "fz-00001-of-00002.gguf", "fz-00002-of-00002.gguf",
		"fz-00001-of-00003.gguf", "fz-00002-of-00003.gguf", "fz-00003-of-00003.gguf",
		"fz.expert-major.pack.lock",
	};
	char path[4200];

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cursor c = {data, size};
	unsigned shards = (unsigned)(take_le(&c, 1) % 3) + 1;
	char path[4200], first[4200], config[4200];
	struct mp_shard_set *set = NULL;
	struct mp_experts ex;
	struct mp_model_config cfg;
	struct mp_gguf_build_opts o = {0};
	struct mp_gguf_build_result res = {0};
	struct mp_error err = {0};
	enum mp_err rc;
	uint64_t n;

	clear_dir();
	n = take_le(&c, 4);
	if (n > c.left)
		n = c.left;
	snprintf(config, sizeof config, "%s/config.json", dir);
	write_file(config, c.p, (size_t)n, 0);
	c.p += n;
	c.left -= (size_t)n;
	for (unsigned i = 0; i < shards; i++) {
		uint64_t len = take_le(&c, 4), apparent = take_le(&c, 8);

		if (len > c.left)
			len = c.left;
		if (shards == 1)
			snprintf(path, sizeof path, "%s/fz.gguf", dir);
		else
			snprintf(path, sizeof path, "%s/fz-%05u-of-%05u.gguf", dir, i + 1, shards);
		if (i == 0)
			snprintf(first, sizeof first, "%s", path);
		write_file(path, c.p, (size_t)len, apparent);
		c.p += len;
		c.left -= (size_t)len;
	}

	rc = mp_shards_open(first, &set, &err);
	if (!set) {
		mp_fuzz_report(rc, &err);
		return 0;
	}
	if (!rc)
		rc = mp_shards_experts(set, false, &ex);
	if (!rc)
		rc = mp_model_config_check(config, set, false, &ex, &cfg, &err);
	if (!rc) {
		o.config_path = config;
		o.check_only = true;
		o.samples = MP_BUILD_DEFAULT_SAMPLES;
		rc = mp_gguf_build(set, &ex, &cfg, &o, &res, &err);
		/* there is no pack: the check cannot succeed */
		if (rc == MP_OK)
			mp_fuzz_bug("--check-only passed without a pack");
		if (err.code != rc)
			mp_fuzz_bug("mp_gguf_build returned %s but err says %s", mp_err_name(rc),
				    mp_err_name(err.code));
		mp_gguf_build_result_free(&res);
	} else if (set->nproblems) {
		err = set->problems[0];
	}
	mp_fuzz_report(rc, &err);
	mp_shards_close(set);
	return 0;
}
