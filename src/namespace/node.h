/*
 * node.h - what a file of the mounted tree says about itself: its size, its
 * byte range in the pack and its user.moepack.* extended attributes.
 *
 * All of it is a function of the validated pack and the decoded inode, with
 * no FUSE in it, so that the unit tests reach every attribute of every kind
 * of file without root or /dev/fuse; the daemon (daemon/fs.c, reply.c) only
 * puts the results on the wire.
 */
#ifndef MOEPACK_NODE_H
#define MOEPACK_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pack/pack.h"
#include "namespace/tree.h"

#define MP_XATTR_PREFIX "user.moepack."

/*
 * status.json and metrics are as long as the report being served
 * (snapshot.h), nothing padded: a terminal shows the report and nothing
 * after it, and readers that trust the size (NFS clients, mmap, `head -c`)
 * see all of it.
 */
/* What a directory's st_size says. */
#define MP_DIR_SIZE 65536u

/* The sizes of the files that are not fixed by the pack. */
struct mp_node_sizes {
	uint64_t client_manifest;  /* <pack>.manifest.json as the mount serves it */
	uint64_t status, metrics;  /* the snapshot being served */
};

enum mp_xattr {
	MP_XA_DTYPE,
	MP_XA_DTYPE_ID,
	MP_XA_SHAPE,
	MP_XA_OFFSET,
	MP_XA_NBYTES,
	MP_XA_TENSOR,
	MP_XA_EXPERT,
	MP_XA_LAYER,
	MP_XA_GENERATION, /* the object generation: see mp_object_generation() */
	MP_XA_SOURCE_DTYPE, /* .f32 files: what they are decoded from */
	MP_XA_SOURCE_OFFSET,
	MP_XA_SOURCE_NBYTES,
	/* layer directories: read counts of its experts (metrics.h), which
	 * the FUSE layer answers; mp_xattr_value() gives "" */
	MP_XA_EXPERT_READS,
	/* role and object files of a format whose index records each role's
	 * SHA-256 (mp_pack_role_sha256): those digests, hex */
	MP_XA_SHA256,
	MP_XA_COUNT,
};

/* Longest value: the object's three tensor names or shapes (each in GGUF
 * ne[] order, the row length first, as the manifest or the object's own
 * index entries have them). */
#define MP_XATTR_VALUE_MAX 1024
/* Longest listing: every name with its NUL. */
#define MP_XATTR_LIST_MAX (MP_XA_COUNT * 32)

/* "user.moepack.dtype", ...; NULL for MP_XA_COUNT and beyond. */
const char *mp_xattr_name(enum mp_xattr id);

/* Whether files of this kind in this pack carry the attribute. */
bool mp_xattr_applies(const struct mp_pack *pack, enum mp_node_kind kind, enum mp_xattr id);

/* The attribute of that name that a file of this kind carries, or MP_XA_COUNT. */
enum mp_xattr mp_xattr_find(const struct mp_pack *pack, enum mp_node_kind kind,
			    const char *name);

/*
 * The value of one attribute of a role, object or .f32 file into buf[cap]
 * (NUL-terminated, cut short at cap - 1); returns its length without the
 * NUL.  The caller has checked mp_xattr_applies().
 */
size_t mp_xattr_value(const struct mp_pack *pack, const struct mp_node *n,
		      enum mp_xattr id, char *buf, size_t cap);

/* The NUL-separated names a file of this kind carries, into
 * buf[MP_XATTR_LIST_MAX]; returns the bytes used (0: none). */
size_t mp_xattr_list(const struct mp_pack *pack, enum mp_node_kind kind,
		     char buf[MP_XATTR_LIST_MAX]);

/*
 * The getxattr/listxattr size protocol for a value of len bytes and a
 * caller's buffer of size bytes: 0 when size is 0 (the caller asks for the
 * length), ERANGE when the value does not fit, -1 when it does (send it).
 */
int mp_xattr_fit(size_t size, size_t len);

/* Pack byte range of a role or object file. */
void mp_node_payload_range(const struct mp_pack *pack, const struct mp_node *n,
			   uint64_t *offset, uint64_t *nbytes);

/* Bytes of float32 a role decodes to: 256 floats per super-block. */
uint64_t mp_node_f32_size(const struct mp_pack *pack, enum mp_role role);

/* st_size of a file (directories: MP_DIR_SIZE). */
uint64_t mp_node_size(const struct mp_pack *pack, const struct mp_node *n,
		      const struct mp_node_sizes *sizes);

#endif
