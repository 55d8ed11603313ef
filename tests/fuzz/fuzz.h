/*
 * fuzz.h - what the libFuzzer targets in tests/fuzz/ share.
 *
 * The targets are built twice: by `make fuzz` with clang and
 * -fsanitize=fuzzer (libFuzzer supplies main), and by `make check` with the
 * normal compiler and replay.c as main, so that every committed input keeps
 * being replayed by the suite (and under ASan by the sanitizer build).
 *
 * The targets see the core only through its public entry points
 * (mp_manifest_parse/mp_manifest_check, mp_pack_open, mp_gguf_read and
 * mp_gguf_check_fd), so they keep building while the checks behind them
 * change.
 */
#ifndef MOEPACK_FUZZ_H
#define MOEPACK_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The directory holding the seed pack (pack.pack and pack.pack.manifest.json,
 * written by `moepack mkdemo`): $MP_FUZZ_SEEDS, else the build tree's
 * tests/fuzz/seeds.  Exits with a message when it is unusable: a target that
 * silently ran without its reference would find nothing.
 */
const char *mp_fuzz_seed_dir(void);

/* Abort (a finding) with a message: the core broke a promise of its API. */
_Noreturn void mp_fuzz_bug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * With MP_FUZZ_VERBOSE set (replay only), print one line per input: the
 * result's code name and message.  Tests use it to see which check an input
 * reached.
 */
void mp_fuzz_report(enum mp_err rc, const struct mp_error *err);

/*
 * Write size bytes of data to path (created or truncated) and extend the
 * file with a hole to file_size when that is larger.
 */
void mp_fuzz_write_file(const char *path, const uint8_t *data, size_t size,
			uint64_t file_size);

/*
 * mp_pack_open() the pack with that manifest, as a mount does: an accepted
 * pack must answer every lookup with a range inside the file, a refused
 * one must return no pack and an error whose code is the one returned.
 * Aborts (mp_fuzz_bug) otherwise; reports the outcome (mp_fuzz_report).
 */
void mp_fuzz_open_pack(const char *pack_path, const char *manifest_path);

/*
 * A fresh directory TMPDIR/TARGET.XXXXXX (tmpfs when TMPDIR is unset) into
 * dir, and the pack and manifest paths the target writes in it.  Exits
 * with a message when it cannot be made.
 */
void mp_fuzz_work_dir(const char *target, char *dir, size_t dir_len, char *pack, size_t pack_len,
		      char *manifest, size_t manifest_len);

#endif
