/*
 * reply.h - the replies to reads (reply.c), for fs.c's read operation.
 *
 * Each answers the request in exactly one fuse_reply_*: bytes, or an
 * errno (EIO for a pack that changed or a chunk that fails its seal,
 * ENOMEM), counted in status.json and the metrics where it is an error
 * of the read.  size and off are the request's, clipped here to the file.
 */
#ifndef MOEPACK_DAEMON_REPLY_H
#define MOEPACK_DAEMON_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/fsstate.h"
#include "namespace/node.h"

/* Bytes [off, off + size) of an in-memory file of len bytes. */
void mp_fs_reply_memory(fuse_req_t req, const char *data, size_t len, size_t size,
			off_t off);

/*
 * status.json (metrics false) or metrics: from the current snapshot, which
 * changes at most once per MP_FS_STATUS_MS, so a reader taking it in
 * pieces within that time gets one report; one is rendered if there is
 * none yet.
 */
void mp_fs_reply_status(fuse_req_t req, struct mp_fs *fs, bool metrics, size_t size,
			off_t off);

/*
 * A file that is the pack range [start, start + len): checked against the
 * seal, read into a buffer (direct or uncached) or spliced from the pack's
 * page cache, as the reader's O_DIRECT and -o verify say; EIO once the
 * pack changed.
 */
void mp_fs_reply_pack_range(fuse_req_t req, struct mp_fs *fs, const struct mp_node *n,
			    uint64_t start, uint64_t len, size_t size, off_t off,
			    const struct fuse_file_info *fi);

/* A role's float32 view (-o dequant): the blocks that hold the range, decoded. */
void mp_fs_reply_f32(fuse_req_t req, struct mp_fs *fs, const struct mp_node *n,
		     size_t size, off_t off);

#endif
