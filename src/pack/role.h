/*
 * role.h - what every pack format shares about an object's roles: the
 * three roles an expert has (up, gate, down), their names, the bounds of a
 * shape, the page a payload is aligned to, and the one wording of a bad
 * magic.  A format says in its own table where each role lies in an
 * object (struct mp_model's order) and which GGML type it holds.
 */
#ifndef MOEPACK_ROLE_H
#define MOEPACK_ROLE_H

#include <stddef.h>
#include <stdint.h>

#define MP_MAX_SHAPE 8 /* dimensions of a role's logical shape */
#define MP_PAGE 4096   /* what "page-aligned" means for a payload */
/* Room for any format's tensor name and its NUL: each format's own limit
 * is checked against it where the format defines it. */
#define MP_PACK_TENSOR_NAME_MAX 129

/* A role's identity: the slot of its file in the mounted tree, and the
 * Kimi format's physical order. */
enum mp_role { MP_ROLE_UP, MP_ROLE_GATE, MP_ROLE_DOWN, MP_ROLE_COUNT };

/* "up", "gate", "down"; NULL for anything else. */
const char *mp_role_name(enum mp_role role);
/* MP_ROLE_COUNT when name is not a role. */
enum mp_role mp_role_from_name(const char *name);

/* The GGUF tensor a role of a layer comes from (llama.cpp's name, both
 * formats'): "blk.17.ffn_up_exps.weight". */
int mp_tensor_name(char *buf, size_t len, uint64_t layer_id, enum mp_role role);

/*
 * MP_E_HEADER_MAGIC unless the n bytes of field are magic's (its NULs
 * included): "bad pack magic<note>: header magic is "<field>", must be
 * <must>", the field shown up to its last byte that is not NUL, NULs
 * among them as \x00, escaped, so that it never looks like the magic.
 * n is at most 32.
 */
struct mp_error;
enum mp_err mp_check_magic(const unsigned char *field, const char *magic, size_t n,
			   const char *note, const char *must, struct mp_error *err);

#endif
