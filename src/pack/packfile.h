/*
 * packfile.h - what opening any pack gives, whatever its format: the
 * pack's descriptor and paths, the manifest's bytes, the file's identity
 * when it was opened, and the warnings its checks left.
 *
 * One struct, embedded as `file` both in struct mp_pack (pack.h, what the
 * tree reads) and in struct mp_ep (pack/expertpack/expertpack.h, what
 * SGLang's validator and builder read), so that the fields are declared
 * once and the format's view hands them over whole (a struct assignment)
 * instead of one by one.  A named member rather than a copy of its fields:
 * the type is what both formats' opens fill, through mp_pack_file_open().
 */
#ifndef MOEPACK_PACKFILE_H
#define MOEPACK_PACKFILE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/errors.h"
#include "pack/openhook.h"

#define MP_MAX_WARNINGS 4

struct mp_pack_file {
	int fd;                    /* the pack, open O_RDONLY; -1 when not open */
	char *path;                /* pack path as given */
	char *real_path;           /* realpath() of the pack */
	char *manifest_path;       /* manifest path as used */
	char *manifest_raw;        /* the manifest's bytes, NUL-terminated */
	size_t manifest_len;
	uint64_t size;             /* the pack's size in bytes */
	/* fstat() of fd once it was opened (and the opened hook ran), before a
	 * byte was read: what the validated bytes are identified by when a
	 * mount watches the file */
	struct timespec mtime, ctime;
	uint64_t nlink;
	unsigned nwarnings;        /* what the checks noted but allowed */
	char warnings[MP_MAX_WARNINGS][MP_MSG_MAX];
};

/* Nothing open, nothing held: fd -1, every pointer NULL. */
void mp_pack_file_init(struct mp_pack_file *f);

/*
 * Open the pack at pack_path as every format does: path kept, the file
 * opened (a regular file, MP_E_PACK_IO otherwise), the opened hook run on
 * its descriptor if there is one (mp_open_hook_run()), its identity taken,
 * and its real path resolved.  The manifest is the format's to find and
 * read (where it looks and what it says when it cannot differ).  On
 * failure what was filled stays for mp_pack_file_close().
 */
enum mp_err mp_pack_file_open(struct mp_pack_file *f, const char *pack_path,
			      mp_opened_fn opened, void *opened_arg, struct mp_error *err);

/* Close the descriptor and free the paths and the manifest's bytes; f is
 * left as mp_pack_file_init() leaves it. */
void mp_pack_file_close(struct mp_pack_file *f);

#endif
