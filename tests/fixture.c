/* fixture.c - shared helpers for the Check suites; see fixture.h. */
#include "config.h"

#include "fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "writer/kimi/demo.h"

/* ck_abort_msg with errno's text appended, for failed system calls. */
#define fx_sys_abort(fmt, ...) \
	ck_abort_msg(fmt ": %s", __VA_ARGS__, strerror(errno))

/* ---- directories and files ------------------------------------------- */

/* "${TMPDIR:-/tmp}/moepack-test.XXXXXX" into out, for mkdtemp / mkstemp. */
static void temp_template(char *out, size_t len)
{
	const char *base = getenv("TMPDIR");
	int n;

	if (!base || !*base)
		base = "/tmp";
	n = snprintf(out, len, "%s/moepack-test.XXXXXX", base);
	ck_assert_msg(n > 0 && (size_t)n < len, "TMPDIR too long: %s", base);
}

void fx_mkdtemp(char *out, size_t len)
{
	temp_template(out, len);
	if (!mkdtemp(out))
		fx_sys_abort("mkdtemp %s", out);
}

int fx_mkstemp(char path[PATH_MAX])
{
	int fd;

	temp_template(path, PATH_MAX);
	fd = mkstemp(path);
	if (fd < 0)
		fx_sys_abort("mkstemp %s", path);
	return fd;
}

static int rmtree_at(int parent, const char *name);

/* Remove everything inside the open directory dirfd (consumed). */
static int empty_dir(int dirfd)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		close(dirfd);
		return -1;
	}
	while (rc == 0 && (errno = 0, de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = rmtree_at(dirfd, de->d_name);
	if (rc == 0 && errno)
		rc = -1;
	closedir(d);
	return rc;
}

/*
 * Not built on ck_assert: fx_run_suite() uses it outside any test, where
 * Check's assertions must not be called at all.
 */
static int rmtree_at(int parent, const char *name)
{
	struct stat st;
	int fd;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(parent, name, 0) && errno != ENOENT ? -1 : 0;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	/* a test may have made it unreadable; we are its owner */
	fchmod(fd, 0700);
	if (empty_dir(fd))
		return -1;
	return unlinkat(parent, name, AT_REMOVEDIR);
}

void fx_rmtree(const char *path)
{
	if (rmtree_at(AT_FDCWD, path))
		fx_sys_abort("cannot remove %s", path);
}

void fx_path(const struct fx *f, const char *name, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%s", f->dir, name);

	ck_assert_msg(n > 0 && (size_t)n < len, "path too long: %s/%s", f->dir, name);
}

void fx_init(struct fx *f)
{
	memset(f, 0, sizeof *f);
	fx_mkdtemp(f->dir, sizeof f->dir);
	fx_path(f, "demo.pack", f->pack, sizeof f->pack);
	fx_path(f, "demo.pack.manifest.json", f->manifest, sizeof f->manifest);
}

void fx_build(struct fx *f, const struct fx_pack_opts *opts)
{
	static const struct fx_pack_opts defaults = {0};
	struct mp_demo_opts b = {0};
	struct mp_error err = {0};
	enum mp_err rc;

	if (!opts)
		opts = &defaults;
	b.out = f->pack;
	b.manifest = f->manifest;
	b.experts = opts->experts ? opts->experts : 2;
	b.hidden = opts->hidden;
	b.inter = opts->inter;
	b.alignment = opts->alignment ? opts->alignment : 256;
	b.gap = opts->gap;
	b.seed = opts->seed;
	b.sparse = opts->sparse;
	b.full_sha256 = opts->full_sha256;
	rc = mp_demo_write(&b, &err);
	ck_assert_msg(rc == MP_OK, "mp_demo_write: %s (%s)", err.msg, mp_err_name(rc));
}

void fx_setup(struct fx *f, const struct fx_pack_opts *opts)
{
	fx_init(f);
	fx_build(f, opts);
}

void fx_cleanup(struct fx *f)
{
	if (f->dir[0])
		fx_rmtree(f->dir);
	f->dir[0] = '\0';
}

void fx_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	const char *p = data;

	if (fd < 0)
		fx_sys_abort("create %s", path);
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fx_sys_abort("write %s", path);
		p += n;
		len -= (size_t)n;
	}
	if (close(fd))
		fx_sys_abort("close %s", path);
}

char *fx_read_file(const char *path, size_t *len)
{
	uint64_t size = fx_file_size(path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf;
	size_t got = 0;

	if (fd < 0)
		fx_sys_abort("open %s", path);
	ck_assert_msg(size < ((uint64_t)1 << 30), "%s is too big for a test", path);
	buf = malloc((size_t)size + 1);
	ck_assert_ptr_nonnull(buf);
	while (got < size) {
		ssize_t n = read(fd, buf + got, (size_t)size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fx_sys_abort("read %s", path);
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	if (len)
		*len = got;
	return buf;
}

uint64_t fx_file_size(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		fx_sys_abort("stat %s", path);
	return (uint64_t)st.st_size;
}

void fx_truncate(const struct fx *f, uint64_t size)
{
	if (truncate(f->pack, (off_t)size))
		fx_sys_abort("truncate %s", f->pack);
}

/* ---- raw bytes of the pack ------------------------------------------- */

/* Read len bytes at offset of f->pack into rbuf, or write them from wbuf. */
static void pack_io(const struct fx *f, uint64_t offset, void *rbuf, const void *wbuf,
		    size_t len)
{
	int fd = open(f->pack, (wbuf ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	const char *what = wbuf ? "write" : "read";
	ssize_t n;

	if (fd < 0)
		fx_sys_abort("open %s", f->pack);
	n = wbuf ? pwrite(fd, wbuf, len, (off_t)offset) : pread(fd, rbuf, len, (off_t)offset);
	if (n < 0)
		fx_sys_abort("p%s %s", what, f->pack);
	ck_assert_msg((size_t)n == len, "short %s of %zu bytes at %llu in %s", what, len,
		      (unsigned long long)offset, f->pack);
	if (close(fd))
		fx_sys_abort("close %s", f->pack);
}

void fx_pread(const struct fx *f, uint64_t offset, void *buf, size_t len)
{
	pack_io(f, offset, buf, NULL, len);
}

void fx_pwrite(const struct fx *f, uint64_t offset, const void *buf, size_t len)
{
	pack_io(f, offset, NULL, buf, len);
}

uint32_t fx_get_u32(const struct fx *f, uint64_t offset)
{
	unsigned char b[4];

	fx_pread(f, offset, b, sizeof b);
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

uint64_t fx_get_u64(const struct fx *f, uint64_t offset)
{
	unsigned char b[8];
	uint64_t v = 0;

	fx_pread(f, offset, b, sizeof b);
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

void fx_put_le(unsigned char *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

void fx_set_u32(const struct fx *f, uint64_t offset, uint32_t value)
{
	unsigned char b[4];

	fx_put_le(b, value, sizeof b);
	fx_pwrite(f, offset, b, sizeof b);
}

void fx_set_u64(const struct fx *f, uint64_t offset, uint64_t value)
{
	unsigned char b[8];

	fx_put_le(b, value, sizeof b);
	fx_pwrite(f, offset, b, sizeof b);
}

void fx_entry_get(const struct fx *f, uint64_t i, struct fx_entry *e)
{
	uint64_t pos = fx_entry_pos(i);

	memset(e, 0, sizeof *e);
	fx_pread(f, pos + FX_ENT_NAME, e->name, MP_ENTRY_NAME_LEN);
	e->expert = (int32_t)fx_get_u32(f, pos + FX_ENT_EXPERT);
	e->reserved = fx_get_u32(f, pos + FX_ENT_RESERVED);
	e->offset = fx_get_u64(f, pos + FX_ENT_OFFSET);
	e->nbytes = fx_get_u64(f, pos + FX_ENT_NBYTES);
}

void fx_entry_set_name_raw(const struct fx *f, uint64_t i, const void *bytes,
			   size_t len)
{
	unsigned char field[MP_ENTRY_NAME_LEN] = {0};

	ck_assert_uint_le(len, sizeof field);
	memcpy(field, bytes, len);
	fx_pwrite(f, fx_entry_pos(i) + FX_ENT_NAME, field, sizeof field);
}

void fx_entry_set_name(const struct fx *f, uint64_t i, const char *name)
{
	fx_entry_set_name_raw(f, i, name, strlen(name));
}

void fx_entry_set_expert(const struct fx *f, uint64_t i, int32_t expert)
{
	fx_set_u32(f, fx_entry_pos(i) + FX_ENT_EXPERT, (uint32_t)expert);
}

void fx_entry_set_reserved(const struct fx *f, uint64_t i, uint32_t reserved)
{
	fx_set_u32(f, fx_entry_pos(i) + FX_ENT_RESERVED, reserved);
}

void fx_entry_set_offset(const struct fx *f, uint64_t i, uint64_t offset)
{
	fx_set_u64(f, fx_entry_pos(i) + FX_ENT_OFFSET, offset);
}

void fx_entry_set_nbytes(const struct fx *f, uint64_t i, uint64_t nbytes)
{
	fx_set_u64(f, fx_entry_pos(i) + FX_ENT_NBYTES, nbytes);
}

/* ---- the manifest ------------------------------------------------------ */

json_t *fx_manifest_load(const struct fx *f)
{
	json_error_t jerr;
	json_t *root = json_load_file(f->manifest, 0, &jerr);

	ck_assert_msg(root != NULL, "%s:%d:%d: %s", f->manifest, jerr.line, jerr.column,
		      jerr.text);
	return root;
}

void fx_manifest_save(const struct fx *f, json_t *root)
{
	/* indent like a hand-edited manifest; the validator must not care */
	if (json_dump_file(root, f->manifest, JSON_INDENT(2) | JSON_ENCODE_ANY))
		ck_abort_msg("cannot write %s", f->manifest);
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/*
 * Walk all but the last component of path.  Returns the container and puts
 * the last component into last[len].  With create, missing objects are made.
 */
static json_t *walk(json_t *root, const char *path, char *last, size_t len,
		    bool create)
{
	char buf[512];
	char *comp, *dot;
	json_t *node = root;

	ck_assert_uint_lt(strlen(path), sizeof buf);
	strcpy(buf, path);
	comp = buf;
	while ((dot = strchr(comp, '.'))) {
		json_t *next = NULL;

		*dot = '\0';
		if (json_is_array(node) && all_digits(comp)) {
			next = json_array_get(node, strtoul(comp, NULL, 10));
		} else if (json_is_object(node)) {
			next = json_object_get(node, comp);
			if (!next && create) {
				next = json_object();
				json_object_set_new(node, comp, next);
			}
		}
		if (!next)
			return NULL;
		node = next;
		comp = dot + 1;
	}
	ck_assert_uint_lt(strlen(comp), len);
	strcpy(last, comp);
	return node;
}

json_t *fx_json_get(json_t *root, const char *path)
{
	char last[256];
	json_t *parent = walk(root, path, last, sizeof last, false);

	if (!parent)
		return NULL;
	if (json_is_array(parent) && all_digits(last))
		return json_array_get(parent, strtoul(last, NULL, 10));
	return json_object_get(parent, last);
}

void fx_json_set(json_t *root, const char *path, json_t *value)
{
	char last[256];
	json_t *parent = walk(root, path, last, sizeof last, true);
	int rc = -1;

	ck_assert_ptr_nonnull(value);
	ck_assert_msg(parent != NULL, "fx_json_set: no container for %s", path);
	if (json_is_array(parent) && all_digits(last))
		rc = json_array_set_new(parent, strtoul(last, NULL, 10), value);
	else if (json_is_object(parent))
		rc = json_object_set_new(parent, last, value);
	else
		json_decref(value);
	ck_assert_msg(rc == 0, "fx_json_set: cannot set %s", path);
}

void fx_json_remove(json_t *root, const char *path)
{
	char last[256];
	json_t *parent = walk(root, path, last, sizeof last, false);
	int rc = -1;

	ck_assert_msg(parent != NULL, "fx_json_remove: no container for %s", path);
	if (json_is_array(parent) && all_digits(last))
		rc = json_array_remove(parent, strtoul(last, NULL, 10));
	else if (json_is_object(parent))
		rc = json_object_del(parent, last);
	ck_assert_msg(rc == 0, "fx_json_remove: %s is not there", path);
}

void fx_manifest_set(const struct fx *f, const char *path, json_t *value)
{
	json_t *root = fx_manifest_load(f);

	fx_json_set(root, path, value);
	fx_manifest_save(f, root);
	json_decref(root);
}

void fx_manifest_set_int(const struct fx *f, const char *path, json_int_t v)
{
	fx_manifest_set(f, path, json_integer(v));
}

void fx_manifest_set_str(const struct fx *f, const char *path, const char *v)
{
	fx_manifest_set(f, path, json_string(v));
}

void fx_manifest_set_bool(const struct fx *f, const char *path, bool v)
{
	fx_manifest_set(f, path, json_boolean(v));
}

void fx_manifest_set_real(const struct fx *f, const char *path, double v)
{
	fx_manifest_set(f, path, json_real(v));
}

void fx_manifest_set_json(const struct fx *f, const char *path, const char *json)
{
	json_error_t jerr;
	json_t *value = json_loads(json, JSON_DECODE_ANY, &jerr);

	ck_assert_msg(value != NULL, "bad JSON in test: %s: %s", json, jerr.text);
	fx_manifest_set(f, path, value);
}

void fx_manifest_remove(const struct fx *f, const char *path)
{
	json_t *root = fx_manifest_load(f);

	fx_json_remove(root, path);
	fx_manifest_save(f, root);
	json_decref(root);
}

json_int_t fx_manifest_get_int(const struct fx *f, const char *path)
{
	json_t *root = fx_manifest_load(f);
	json_t *v = fx_json_get(root, path);
	json_int_t out;

	ck_assert_msg(json_is_integer(v), "manifest %s is not an integer", path);
	out = json_integer_value(v);
	json_decref(root);
	return out;
}

void fx_manifest_get_str(const struct fx *f, const char *path, char *out, size_t len)
{
	json_t *root = fx_manifest_load(f);
	json_t *v = fx_json_get(root, path);

	ck_assert_msg(json_is_string(v), "manifest %s is not a string", path);
	ck_assert_uint_lt(strlen(json_string_value(v)), len);
	strcpy(out, json_string_value(v));
	json_decref(root);
}

/* ---- digests ----------------------------------------------------------- */

static void to_hex(const unsigned char *d, char hex[MP_SHA256_HEX])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = '\0';
}

void fx_sha256_of(const void *data, size_t len, unsigned char out[32])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;

	ck_assert(EVP_Digest(data, len, d, &dlen, EVP_sha256(), NULL) == 1);
	ck_assert_uint_eq(dlen, 32);
	memcpy(out, d, 32);
}

void fx_sha256_hex_of(const void *data, size_t len, char hex[MP_SHA256_HEX])
{
	unsigned char d[32];

	fx_sha256_of(data, len, d);
	to_hex(d, hex);
}

void fx_sha256_file_range(const char *path, uint64_t offset, uint64_t len,
			  char hex[MP_SHA256_HEX])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	size_t bufsize = 1 << 20;
	unsigned char *buf = malloc(bufsize);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_ptr_nonnull(ctx);
	ck_assert_ptr_nonnull(buf);
	if (fd < 0)
		fx_sys_abort("open %s", path);
	ck_assert(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1);
	while (len) {
		size_t want = len < bufsize ? (size_t)len : bufsize;
		ssize_t n = pread(fd, buf, want, (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fx_sys_abort("read %s", path);
		ck_assert(EVP_DigestUpdate(ctx, buf, (size_t)n) == 1);
		offset += (uint64_t)n;
		len -= (uint64_t)n;
	}
	ck_assert(EVP_DigestFinal_ex(ctx, d, &dlen) == 1);
	ck_assert_uint_eq(dlen, 32);
	to_hex(d, hex);
	close(fd);
	free(buf);
	EVP_MD_CTX_free(ctx);
}

void fx_sha256_file(const char *path, char hex[MP_SHA256_HEX])
{
	fx_sha256_file_range(path, 0, fx_file_size(path), hex);
}

void fx_fix(const struct fx *f, unsigned what)
{
	uint64_t size = fx_file_size(f->pack);
	json_t *root = fx_manifest_load(f);
	char hex[MP_SHA256_HEX];

	if ((what & FX_FIX_INDEX) && size >= MP_HEADER_SIZE) {
		uint64_t count = fx_get_u64(f, FX_HDR_INDEX_COUNT);
		uint64_t room = (size - MP_HEADER_SIZE) / MP_ENTRY_SIZE;

		if (count > room)
			count = room;
		fx_sha256_file_range(f->pack, 0, MP_HEADER_SIZE + count * MP_ENTRY_SIZE,
				     hex);
		fx_json_set(root, "expert_pack.index_sha256", json_string(hex));
	}
	if ((what & FX_FIX_FULL) && fx_json_get(root, "expert_pack.sha256")) {
		fx_sha256_file(f->pack, hex);
		fx_json_set(root, "expert_pack.sha256", json_string(hex));
	}
	if (what & FX_FIX_SIZE)
		fx_json_set(root, "expert_pack.size", json_integer((json_int_t)size));
	fx_manifest_save(f, root);
	json_decref(root);
}

/* ---- opening ------------------------------------------------------------ */

enum mp_err fx_open_pack(const struct fx *f, const struct mp_open_opts *opts,
			 struct mp_pack **out, struct mp_error *err)
{
	static const struct mp_open_opts none = {0};
	enum mp_err rc;

	memset(err, 0, sizeof *err);
	*out = NULL;
	rc = mp_pack_open(out, f->pack, opts ? opts : &none, err);
	if (rc == MP_OK) {
		ck_assert_ptr_nonnull(*out);
		ck_assert_msg(err->code == MP_OK || err->msg[0] == '\0',
			      "success with an error message: %s", err->msg);
		err->code = MP_OK;
		err->msg[0] = '\0';
	} else {
		ck_assert_msg(*out == NULL, "failed open left a pack behind");
		ck_assert_msg(err->code == rc, "returned %s but err says %s",
			      mp_err_name(rc), mp_err_name(err->code));
	}
	return rc;
}

enum mp_err fx_open(const struct fx *f, const struct mp_open_opts *opts,
		    struct mp_error *err)
{
	struct mp_pack *pack;
	enum mp_err rc = fx_open_pack(f, opts, &pack, err);

	mp_pack_close(pack);
	return rc;
}

bool fx_err_matches(const struct mp_error *err, enum mp_err code,
		    const char *const *needles, char *why, size_t len)
{
	if (err->code != code) {
		snprintf(why, len, "expected %s, got %s: \"%s\"", mp_err_name(code),
			 mp_err_name(err->code), err->msg);
		return false;
	}
	if (code != MP_OK && (!err->msg[0] || strchr(err->msg, '\n'))) {
		snprintf(why, len, "%s: message must be one non-empty line: \"%s\"",
			 mp_err_name(code), err->msg);
		return false;
	}
	for (; *needles; needles++) {
		if (!strstr(err->msg, *needles)) {
			snprintf(why, len, "%s: message lacks \"%s\": \"%s\"",
				 mp_err_name(code), *needles, err->msg);
			return false;
		}
	}
	return true;
}

void fx_assert_err_at(const char *file, int line, const char *label,
		      const struct mp_error *err, enum mp_err code,
		      const char *const *needles)
{
	char why[2 * MP_MSG_MAX];

	if (!fx_err_matches(err, code, needles, why, sizeof why))
		_ck_assert_failed(file, line, "error", "%s%s%s", label ? label : "",
				  label ? ": " : "", why);
	_mark_point(file, line);
}

/* ---- helpers for any suite ------------------------------------------------ */

char *fx_data_path(const char *rel, char *out, size_t len)
{
	const char *top = getenv("top_srcdir");
	int n = snprintf(out, len, "%s/tests/data/%s", top && *top ? top : "..", rel);

	ck_assert_msg(n > 0 && (size_t)n < len, "path too long: tests/data/%s", rel);
	return out;
}

int fx_run_script(const char *cmd, char *why, size_t len)
{
	char line[512];
	FILE *p = popen(cmd, "r");
	int status;

	ck_assert_msg(p != NULL, "cannot run %s", cmd);
	why[0] = '\0';
	while (fgets(line, sizeof line, p)) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(why, len, "%s", line);
	}
	status = pclose(p);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		snprintf(why, len, "no python3");
		return 77;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		return 77;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed: %s", cmd, why);
	return 0;
}

char *fx_repeat(const char *s, size_t n)
{
	size_t len = strlen(s);
	char *out = malloc(len * n + 1);

	ck_assert_ptr_nonnull(out);
	for (size_t i = 0; i < n; i++)
		memcpy(out + i * len, s, len);
	out[len * n] = '\0';
	return out;
}

void fx_assert_file_eq(const char *path, const char *text)
{
	size_t len;
	char *got = fx_read_file(path, &len);

	ck_assert_msg(len == strlen(text) && memcmp(got, text, len) == 0,
		      "%s holds \"%s\", expected \"%s\"", path, got, text);
	free(got);
}

void fx_progress_log(uint64_t done, uint64_t total, void *arg)
{
	struct fx_progress *p = arg;

	p->backwards |= done < p->done;
	p->past_total |= done > total;
	p->calls++;
	p->done = done;
	p->total = total;
}

bool fx_wait_until(bool (*cond)(void *arg), void *arg)
{
	const struct timespec pause = {0, 1000 * 1000};

	for (int i = 0; i < 60 * 1000; i++) {
		if (cond(arg))
			return true;
		nanosleep(&pause, NULL);
	}
	return false;
}

void fx_run_threads(unsigned n, void *(*fn)(void *), void *args, size_t stride)
{
	pthread_t th[64];

	ck_assert_uint_le(n, 64);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, fn,
						 stride ? (char *)args + i * stride : args), 0);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
}

/* ---- running ------------------------------------------------------------ */

int fx_run_suite(Suite *s)
{
	const char *base = getenv("TMPDIR");
	char root[PATH_MAX];
	SRunner *sr;
	int failed;

	/* no ck_* calls out here: Check allows them only inside tests */
	if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(root, sizeof root, "%s/moepack-suite.XXXXXX", base) >=
		    sizeof root ||
	    !mkdtemp(root)) {
		fprintf(stderr, "cannot make a temporary directory in %s\n", base);
		return EXIT_FAILURE;
	}
	/* every fx_mkdtemp of every test now lands in root */
	if (setenv("TMPDIR", root, 1)) {
		perror("setenv");
		return EXIT_FAILURE;
	}
	sr = srunner_create(s);
	/* CK_FORK from the environment (CK_FORK=no for gdb) still wins */
	if (!getenv("CK_FORK"))
		srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (rmtree_at(AT_FDCWD, root)) {
		fprintf(stderr, "cannot remove %s: %s\n", root, strerror(errno));
		return EXIT_FAILURE;
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
