/*
 * fixture.h - shared helpers for the Check suites.
 *
 * A test builds a small valid pack in its own temporary directory, injects
 * exactly one fault (a manifest value, a header or index field, a payload
 * byte, the file length), repairs everything else that the fault would
 * otherwise disturb (the digests and expert_pack.size) and opens the pack.
 * That way each test sees the one check it is about and nothing earlier.
 *
 * Every helper here fails the running Check test (ck_abort_msg) when its
 * own work goes wrong: a helper's failure is a broken test, not a result.
 * Helpers use the code under test only to write packs (mp_demo_write), to
 * open them (fx_open*) and to name error codes in failure messages;
 * digests are recomputed with OpenSSL directly so that the fixture does not
 * trust src/pack/digest.c.
 *
 * Temporary files live under ${TMPDIR:-/tmp}.  fx_run_suite() points
 * TMPDIR at one directory per run and removes it afterwards, so a test that
 * fails half-way (and so never reaches fx_cleanup) leaves nothing behind.
 *
 * Adding a suite: tests/check_NAME.c holds only its test cases, the
 * function that makes its Suite, and the one definition
 *
 *	const struct fx_suite_def fx_suite = {.make = NAME_suite};
 *
 * There is no main() in it: tests/check_main.c is the one main() of every
 * Check program.  In Makefile.am, add tests/check_NAME to check_PROGRAMS
 * and give it tests_check_NAME_SOURCES = tests/check_NAME.c
 * $(CHECK_COMMON) and the _CFLAGS / _LDADD lines of the others.  A helper
 * that a second suite would need too belongs here, not in the suite.
 */
#ifndef MOEPACK_TESTS_FIXTURE_H
#define MOEPACK_TESTS_FIXTURE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <check.h>
#include <jansson.h>

#include "pack/kimi/format.h"
#include "pack/pack.h"

/* Byte offsets of the header fields, as in moepack-pack(5). */
#define FX_HDR_MAGIC 0
#define FX_HDR_VERSION 16
#define FX_HDR_HEADER_SIZE 20
#define FX_HDR_INDEX_COUNT 24
#define FX_HDR_DATA_START 32

/* Byte offsets of the fields inside one 152-byte index entry. */
#define FX_ENT_NAME 0
#define FX_ENT_EXPERT 128
#define FX_ENT_RESERVED 132
#define FX_ENT_OFFSET 136
#define FX_ENT_NBYTES 144

/* What to build; a zero field takes the fixture's default. */
struct fx_pack_opts {
	uint64_t alignment; /* default 256: the smallest, fastest pack */
	uint64_t experts;   /* default 2 */
	uint64_t hidden;    /* default 0: mp_demo_resolve picks the smallest */
	uint64_t inter;     /* default 0: likewise */
	uint64_t gap;       /* padding after each object (demo.h), default 0 */
	uint64_t seed;      /* payload seed, default 0 */
	bool full_sha256;   /* record expert_pack.sha256 */
	bool sparse;        /* leave the payload as a hole (fast, all zero) */
};

/* One test's temporary directory and the pack built in it. */
struct fx {
	char dir[PATH_MAX];      /* the test's own temporary directory */
	char pack[PATH_MAX];     /* dir/demo.pack */
	char manifest[PATH_MAX]; /* dir/demo.pack.manifest.json */
};

/* ---- directories and files ------------------------------------------- */

/* mkdtemp a fresh "${TMPDIR:-/tmp}/moepack-test.XXXXXX" into out. */
void fx_mkdtemp(char *out, size_t len);
/* rm -r path (no symlinks followed); a missing path is fine. */
void fx_rmtree(const char *path);

/* Make f->dir; f->pack and f->manifest are named but not created. */
void fx_init(struct fx *f);
/* fx_init() and fx_build(); opts may be NULL for all defaults. */
void fx_setup(struct fx *f, const struct fx_pack_opts *opts);
/* Write the pack and manifest with mp_demo_write (opts NULL: defaults). */
void fx_build(struct fx *f, const struct fx_pack_opts *opts);
/* Remove f->dir and everything in it. */
void fx_cleanup(struct fx *f);

/* dir/name into out (ck_abort when it does not fit). */
void fx_path(const struct fx *f, const char *name, char *out, size_t len);
/* Write text to a file (created or truncated). */
void fx_write_file(const char *path, const void *data, size_t len);
/* Whole file into a malloc'ed, NUL-terminated buffer; *len may be NULL. */
char *fx_read_file(const char *path, size_t *len);

uint64_t fx_file_size(const char *path);
/* Set the pack's length (ftruncate: grows with zeros). */
void fx_truncate(const struct fx *f, uint64_t size);

/* ---- raw bytes of the pack (little-endian) --------------------------- */

void fx_pread(const struct fx *f, uint64_t offset, void *buf, size_t len);
void fx_pwrite(const struct fx *f, uint64_t offset, const void *buf, size_t len);
uint32_t fx_get_u32(const struct fx *f, uint64_t offset);
uint64_t fx_get_u64(const struct fx *f, uint64_t offset);
void fx_set_u32(const struct fx *f, uint64_t offset, uint32_t value);
void fx_set_u64(const struct fx *f, uint64_t offset, uint64_t value);

/* File offset of index entry i. */
static inline uint64_t fx_entry_pos(uint64_t i)
{
	return MP_HEADER_SIZE + i * MP_ENTRY_SIZE;
}

/* One index entry as stored; name is the text up to the first NUL. */
struct fx_entry {
	char name[MP_ENTRY_NAME_LEN + 1];
	int32_t expert;
	uint32_t reserved;
	uint64_t offset;
	uint64_t nbytes;
};

void fx_entry_get(const struct fx *f, uint64_t i, struct fx_entry *e);
/* Name field := name, NUL-padded to 128 bytes. */
void fx_entry_set_name(const struct fx *f, uint64_t i, const char *name);
/* Name field := len raw bytes (<= 128) then NULs; len 128 leaves no NUL. */
void fx_entry_set_name_raw(const struct fx *f, uint64_t i, const void *bytes,
			   size_t len);
void fx_entry_set_expert(const struct fx *f, uint64_t i, int32_t expert);
void fx_entry_set_reserved(const struct fx *f, uint64_t i, uint32_t reserved);
void fx_entry_set_offset(const struct fx *f, uint64_t i, uint64_t offset);
void fx_entry_set_nbytes(const struct fx *f, uint64_t i, uint64_t nbytes);

/* ---- the manifest ------------------------------------------------------ */

/*
 * Dotted paths name manifest values: "expert_pack.roles.up.dtype".  A
 * component that is all digits indexes an array ("model.active_moe_layer_ids.0").
 */

json_t *fx_manifest_load(const struct fx *f); /* new reference */
void fx_manifest_save(const struct fx *f, json_t *root); /* root not consumed */

/* The value at path, or NULL; a borrowed reference. */
json_t *fx_json_get(json_t *root, const char *path);
/*
 * Set the value at path, stealing value.  Missing objects on the way are
 * created; the last component may name a new key or an existing array slot.
 */
void fx_json_set(json_t *root, const char *path, json_t *value);
/* Remove the key (or array element) at path; it must exist. */
void fx_json_remove(json_t *root, const char *path);

/* Load, change one value, save.  fx_manifest_set steals value. */
void fx_manifest_set(const struct fx *f, const char *path, json_t *value);
void fx_manifest_set_int(const struct fx *f, const char *path, json_int_t v);
void fx_manifest_set_str(const struct fx *f, const char *path, const char *v);
void fx_manifest_set_bool(const struct fx *f, const char *path, bool v);
void fx_manifest_set_real(const struct fx *f, const char *path, double v);
/* The value is parsed from JSON text: fx_manifest_set_json(f, p, "[1, 2]"). */
void fx_manifest_set_json(const struct fx *f, const char *path, const char *json);
void fx_manifest_remove(const struct fx *f, const char *path);
/* Integer / string at path; ck_abort when absent or of another type. */
json_int_t fx_manifest_get_int(const struct fx *f, const char *path);
/* Copies into out[len]. */
void fx_manifest_get_str(const struct fx *f, const char *path, char *out, size_t len);

/* ---- keeping one fault alone -------------------------------------------- */

enum fx_fix {
	FX_FIX_INDEX = 1, /* expert_pack.index_sha256 := SHA-256(header + index) */
	FX_FIX_FULL = 2,  /* expert_pack.sha256 := SHA-256(file), if present */
	FX_FIX_SIZE = 4,  /* expert_pack.size := file size */
	FX_FIX_ALL = 7,
};

/*
 * Recompute what `what` names from the pack as it now is.  The index digest
 * covers header index_count entries, clamped to what the file holds.
 */
void fx_fix(const struct fx *f, unsigned what);

/* SHA-256 of a byte range of a file / of a whole file, as lowercase hex. */
void fx_sha256_file_range(const char *path, uint64_t offset, uint64_t len,
			  char hex[MP_SHA256_HEX]);
void fx_sha256_file(const char *path, char hex[MP_SHA256_HEX]);
void fx_sha256_hex_of(const void *data, size_t len, char hex[MP_SHA256_HEX]);

/* ---- opening ------------------------------------------------------------ */

/*
 * mp_pack_open(f->pack) with opts (NULL: all zero) and close it again.
 * err is always filled: on success code MP_OK and an empty message.
 */
enum mp_err fx_open(const struct fx *f, const struct mp_open_opts *opts,
		    struct mp_error *err);
/* The same, but the open pack is handed back (NULL on failure). */
enum mp_err fx_open_pack(const struct fx *f, const struct mp_open_opts *opts,
			 struct mp_pack **out, struct mp_error *err);

/*
 * Assert that err has code `code`, a one-line non-empty message (unless
 * MP_OK), and that the message contains every one of the given substrings
 * (at least one; pass "" for none).  fx_assert_err_labeled prefixes a
 * failure with label, for table-driven tests.
 */
#define fx_assert_err(err, expected_code, ...)                                    \
	fx_assert_err_at(__FILE__, __LINE__, NULL, (err), (expected_code),          \
			 (const char *const[]){__VA_ARGS__, NULL})
#define fx_assert_err_labeled(label, err, expected_code, ...)                     \
	fx_assert_err_at(__FILE__, __LINE__, (label), (err), (expected_code),       \
			 (const char *const[]){__VA_ARGS__, NULL})
void fx_assert_err_at(const char *file, int line, const char *label,
		      const struct mp_error *err, enum mp_err code,
		      const char *const *needles);
/*
 * The same test without failing: true when err matches; otherwise false
 * with the reason in why[len] (one line, naming the expected code).
 */
bool fx_err_matches(const struct mp_error *err, enum mp_err code,
		    const char *const *needles, char *why, size_t len);

/* ---- helpers for any suite ------------------------------------------------ */

/* "${top_srcdir:-..}/tests/data/<rel>" into out (ck_abort if it does not fit). */
char *fx_data_path(const char *rel, char *out, size_t len);
/*
 * Run the shell command cmd (its stderr folded into stdout): 0 when it
 * exited 0, 77 when it exited 77 (it skipped) or 127 (no interpreter),
 * with its last line of output in why; ck_abort otherwise, naming cmd and
 * that line.
 */
int fx_run_script(const char *cmd, char *why, size_t len);
/* mkstemp "${TMPDIR:-/tmp}/moepack-test.XXXXXX" into path; the open fd. */
int fx_mkstemp(char path[PATH_MAX]);
/* s written n times over, malloc'ed. */
char *fx_repeat(const char *s, size_t n);
/* Assert that the file holds exactly text (and nothing after it). */
void fx_assert_file_eq(const char *path, const char *text);

/* n bytes of v, little-endian, at p. */
void fx_put_le(unsigned char *p, uint64_t v, size_t n);
/* SHA-256 of data with OpenSSL directly (not through src/pack/digest.c). */
void fx_sha256_of(const void *data, size_t len, unsigned char out[32]);

/* What a progress callback was told; fx_progress_log is the callback. */
struct fx_progress {
	uint64_t calls, done, total;
	bool backwards;  /* done ever went down */
	bool past_total; /* done was ever more than total */
};
void fx_progress_log(uint64_t done, uint64_t total, void *arg);

/*
 * Poll cond(arg) every millisecond until it is true (returns true) or a
 * minute has gone by (returns false): for state another thread changes.
 */
bool fx_wait_until(bool (*cond)(void *arg), void *arg);

/*
 * Run fn on n threads at once (n <= 64) and join them all.  Thread i gets
 * (char *)args + i * stride: stride 0 gives every thread the same args.
 */
void fx_run_threads(unsigned n, void *(*fn)(void *), void *args, size_t stride);

/* ---- running ------------------------------------------------------------ */

/* What a Check program runs: each check_*.c defines one, named fx_suite. */
struct fx_suite_def {
	Suite *(*make)(void);
	/*
	 * Optional: another use of the program, tried first with main()'s
	 * arguments (check_dequant --decode TYPE).  Returns the exit status,
	 * or -1 to run the suite.
	 */
	int (*command)(int argc, char **argv);
};
extern const struct fx_suite_def fx_suite;

/*
 * Run s with CK_FORK default (CK_FORK env still wins) and CK_NORMAL output,
 * with TMPDIR pointing at a fresh directory that is removed afterwards.
 * Returns EXIT_SUCCESS or EXIT_FAILURE for main.
 */
int fx_run_suite(Suite *s);

#endif
