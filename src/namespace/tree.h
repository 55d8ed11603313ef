/*
 * tree.h - the mounted namespace of moepackfs, as arithmetic.
 *
 *   /                         MP_INO_ROOT
 *   manifest.json             MP_INO_MANIFEST
 *   <pack name>               MP_INO_PACK
 *   <pack name>.manifest.json MP_INO_CLIENT_MANIFEST
 *   status.json               MP_INO_STATUS
 *   layers/                   MP_INO_LAYERS
 *     001/ ...                first_layer_ino + layer_index
 *       000/ ...              first_expert_ino + object
 *         up gate down object first_file_ino + 4 * object + slot
 *         up.f32 gate.f32 down.f32
 *                             first_f32_ino + 3 * object + role
 *                             (only with mp_tree_add_dequant)
 *   metrics                   metrics_ino = first_f32_ino + 3 * objects
 *
 * where object = layer_index * num_experts + expert and slot is the role
 * (MP_ROLE_UP, MP_ROLE_GATE, MP_ROLE_DOWN) or MP_SLOT_OBJECT.  The .f32
 * files of -o dequant are numbered after every other inode, so a mount
 * with them gives every other file the number it has without them.  The
 * metrics file comes after the room of the .f32 files, with or without
 * them, so that adding it renumbered nothing and dequant does not move
 * it.  Every inode
 * number is computed, never allocated: any number the tree ever issued can
 * be decoded from the number alone, the same pack geometry gives the same
 * numbers after a restart, and nothing is stored per file.  NFS file handles
 * depend on that: an NFS server hands out handles holding an inode number and
 * generation, and asks for them again long after the kernel (or a restarted
 * daemon) forgot the inode (moepackfs(1), NFS AND FILE HANDLES).
 *
 * Pure code: no FUSE, no I/O, no allocation.
 */
#ifndef MOEPACK_TREE_H
#define MOEPACK_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/pack.h"

enum {
	MP_INO_ROOT = 1, /* FUSE_ROOT_ID */
	MP_INO_MANIFEST,
	MP_INO_PACK,
	MP_INO_CLIENT_MANIFEST,
	MP_INO_STATUS,
	MP_INO_LAYERS,
	MP_INO_FIRST_LAYER,
};

/* The four files of an expert directory: the three roles, then "object". */
#define MP_SLOT_OBJECT MP_ROLE_COUNT
#define MP_SLOTS_PER_OBJECT (MP_ROLE_COUNT + 1)

/* Room for any name the tree produces, NUL included (NAME_MAX + 1). */
#define MP_TREE_NAME_MAX 256

#define MP_TREE_MANIFEST_NAME "manifest.json"
#define MP_TREE_STATUS_NAME "status.json"
#define MP_TREE_LAYERS_NAME "layers"
#define MP_TREE_METRICS_NAME "metrics"
#define MP_TREE_CLIENT_SUFFIX ".manifest.json"
#define MP_TREE_F32_SUFFIX ".f32"

enum mp_node_kind {
	MP_NODE_NONE,
	MP_NODE_ROOT,
	MP_NODE_MANIFEST,
	MP_NODE_PACK,
	MP_NODE_CLIENT_MANIFEST,
	MP_NODE_STATUS,
	MP_NODE_LAYERS,
	MP_NODE_LAYER,  /* layers/001 */
	MP_NODE_EXPERT, /* layers/001/000 */
	MP_NODE_ROLE,   /* layers/001/000/up */
	MP_NODE_OBJECT, /* layers/001/000/object */
	MP_NODE_F32,    /* layers/001/000/up.f32 (-o dequant) */
	MP_NODE_METRICS, /* metrics */
};

/* A decoded inode.  Fields that do not apply to the kind are 0. */
struct mp_node {
	enum mp_node_kind kind;
	uint64_t layer_index; /* index into the active layer ids */
	uint64_t expert;
	uint64_t object;      /* layer_index * num_experts + expert */
	enum mp_role role;    /* MP_NODE_ROLE, MP_NODE_F32; else MP_ROLE_COUNT */
};

struct mp_tree {
	uint64_t layer_count;
	uint64_t num_experts;
	const uint32_t *layer_ids;  /* strictly ascending; not owned */
	const char *pack_name;      /* not owned */
	char client_manifest_name[MP_TREE_NAME_MAX];
	unsigned layer_width;       /* digits of a layer directory's name */
	unsigned expert_width;      /* digits of an expert directory's name */
	uint64_t first_expert_ino;
	uint64_t first_file_ino;
	uint64_t first_f32_ino;     /* where .f32 files would start */
	uint64_t metrics_ino;       /* after the room of the .f32 files */
	uint64_t end_ino;           /* one past the last inode */
	bool dequant;               /* the tree has the .f32 files */
	uint64_t inode_generation;  /* FUSE generation of every inode but the root */
};

/*
 * Lay out the tree of a pack.  pack_name is the pack file's base name and
 * must outlive the tree, as must layer_ids.  MP_E_USAGE when the pack's
 * name cannot appear in the root (it contains '/', is "." or "..", is too
 * long, or collides with a fixed name) or the geometry cannot be numbered.
 */
enum mp_err mp_tree_init(struct mp_tree *tree, const uint32_t *layer_ids,
			 uint64_t layer_count, uint64_t num_experts,
			 const char *pack_name,
			 const unsigned char index_digest[32],
			 struct mp_error *err);

/* The same for a validated pack, named by its path's last component. */
enum mp_err mp_tree_init_pack(struct mp_tree *tree, const struct mp_pack *pack,
			      struct mp_error *err);

/*
 * Add up.f32, gate.f32 and down.f32 to every expert directory (-o
 * dequant), numbered from the old end of the tree on.  Every other inode
 * keeps its number.  Idempotent.
 */
void mp_tree_add_dequant(struct mp_tree *tree);

/*
 * One past the last inode of a file holding pack bytes (role, object and,
 * with dequant, .f32 files): [first_file_ino, this) is every such file.
 */
static inline uint64_t mp_tree_pack_files_end(const struct mp_tree *tree)
{
	return tree->dequant ? tree->metrics_ino : tree->first_f32_ino;
}

/* Decode an inode number.  False (and kind MP_NODE_NONE) when it is none. */
bool mp_tree_node(const struct mp_tree *tree, uint64_t ino, struct mp_node *node);

/* Inode number of a node (the inverse of mp_tree_node), 0 when invalid. */
uint64_t mp_tree_ino(const struct mp_tree *tree, const struct mp_node *node);

/* Inode of the file `slot` (a role or MP_SLOT_OBJECT) of an object. */
static inline uint64_t mp_tree_file_ino(const struct mp_tree *tree,
					uint64_t object, unsigned slot)
{
	return tree->first_file_ino + object * MP_SLOTS_PER_OBJECT + slot;
}

/* Inode of the .f32 file of a role of an object (with mp_tree_add_dequant). */
static inline uint64_t mp_tree_f32_ino(const struct mp_tree *tree,
				       uint64_t object, enum mp_role role)
{
	return tree->first_f32_ino + object * MP_ROLE_COUNT + (unsigned)role;
}

static inline bool mp_node_is_dir(enum mp_node_kind kind)
{
	return kind == MP_NODE_ROOT || kind == MP_NODE_LAYERS ||
	       kind == MP_NODE_LAYER || kind == MP_NODE_EXPERT;
}

/* Parent directory of an inode; the root is its own parent.  0 if invalid. */
uint64_t mp_tree_parent(const struct mp_tree *tree, uint64_t ino);

/*
 * Child `name` of directory `dir`: "." and ".." included, names strict
 * (exactly the zero-padded width, digits only).  0 when there is none.
 */
uint64_t mp_tree_lookup(const struct mp_tree *tree, uint64_t dir, const char *name);

/* Number of entries of a directory, "." and ".." excluded (0 for files). */
uint64_t mp_tree_child_count(const struct mp_tree *tree, uint64_t dir);

/*
 * Entry `index` of directory `dir` in listing order: 0 is ".", 1 is "..",
 * then the children.  Writes its inode and name (name_len >=
 * MP_TREE_NAME_MAX is always enough).  False past the end or for a file.
 */
bool mp_tree_dirent(const struct mp_tree *tree, uint64_t dir, uint64_t index,
		    uint64_t *ino, char *name, size_t name_len);

/* Name of an inode inside its parent ("/" for the root).  False if invalid. */
bool mp_tree_name(const struct mp_tree *tree, uint64_t ino, char *name,
		  size_t name_len);

/* Link count: 2 + subdirectories for a directory, 1 for a file. */
uint64_t mp_tree_nlink(const struct mp_tree *tree, uint64_t ino);

#endif
