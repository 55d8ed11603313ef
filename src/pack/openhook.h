/*
 * openhook.h - the hook a validator runs right after it opens a pack, and
 * the check that the pack did not change before the hook took effect.
 *
 * A mount takes its read lease in the hook (mp_open_opts.opened,
 * mp_ep_opts.opened).  A write that came between the open and the lease
 * moved the file's size or times; such a pack is refused, whatever its
 * format, since its bytes are then nobody's in particular.
 */
#ifndef MOEPACK_OPENHOOK_H
#define MOEPACK_OPENHOOK_H

#include <sys/stat.h>

#include "base/errors.h"

typedef enum mp_err (*mp_opened_fn)(int fd, void *arg, struct mp_error *err);

/*
 * Run opened(fd, arg) and then fstat(fd): *st is what was taken at the
 * open and becomes the file as it is now.  MP_E_PACK_IO naming pack_path
 * when the size, mtime or ctime moved in between; the hook's own error
 * otherwise.
 */
enum mp_err mp_open_hook_run(int fd, mp_opened_fn opened, void *arg, const char *pack_path,
			     struct stat *st, struct mp_error *err);

#endif
