/* tree.c - inode numbers, names and listings of the mounted tree. */
#include "config.h"

#include "namespace/tree.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A slot is a role, named by pack.c's one role table, or the whole object. */
static const char *slot_name(unsigned slot)
{
	return slot == MP_SLOT_OBJECT ? "object" : mp_role_name((enum mp_role)slot);
}

static unsigned decimal_digits(uint64_t v)
{
	unsigned n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static bool is_fixed_name(const char *name)
{
	return strcmp(name, MP_TREE_MANIFEST_NAME) == 0 ||
	       strcmp(name, MP_TREE_STATUS_NAME) == 0 ||
	       strcmp(name, MP_TREE_LAYERS_NAME) == 0 ||
	       strcmp(name, MP_TREE_METRICS_NAME) == 0;
}

static enum mp_err check_pack_name(const char *name, struct mp_error *err)
{
	size_t len = strlen(name);

	if (len == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strchr(name, '/'))
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: pack file name '%s' cannot be a "
			       "name in the mounted tree", name);
	if (len + strlen(MP_TREE_CLIENT_SUFFIX) >= MP_TREE_NAME_MAX)
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: pack file name '%s' is too long for "
			       "'%s%s' to be a file name", name, name,
			       MP_TREE_CLIENT_SUFFIX);
	if (is_fixed_name(name))
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: pack file name '%s' collides with a "
			       "fixed name of the mounted tree", name);
	return MP_OK;
}

enum mp_err mp_tree_init(struct mp_tree *tree, const uint32_t *layer_ids,
			 uint64_t layer_count, uint64_t num_experts,
			 const char *pack_name,
			 const unsigned char index_digest[32],
			 struct mp_error *err)
{
	enum mp_err rc;
	uint64_t objects, gen = 0;
	uint32_t max_id = 0;

	memset(tree, 0, sizeof *tree);
	rc = check_pack_name(pack_name, err);
	if (rc != MP_OK)
		return rc;

	/* Lookup by name is a binary search, so ids must be ordered. */
	for (uint64_t i = 0; i < layer_count; i++) {
		if (i > 0 && layer_ids[i] <= layer_ids[i - 1])
			return mp_fail(err, MP_E_USAGE,
				       "invalid usage: active_moe_layer_ids[%" PRIu64
				       "] = %" PRIu32 " is not above the previous "
				       "id; the tree needs ascending ids",
				       i, layer_ids[i]);
		max_id = layer_ids[i];
	}

	/* 7 + L + L*E + 4*L*E + 3*L*E (.f32 files) + 1 (metrics) inodes must
	 * fit in 64 bits. */
	if (num_experts != 0 && layer_count > (UINT64_MAX / 16) / num_experts)
		return mp_fail(err, MP_E_USAGE,
			       "invalid usage: %" PRIu64 " layers x %" PRIu64
			       " experts are too many inodes", layer_count,
			       num_experts);
	objects = layer_count * num_experts;

	tree->layer_count = layer_count;
	tree->num_experts = num_experts;
	tree->layer_ids = layer_ids;
	tree->pack_name = pack_name;
	snprintf(tree->client_manifest_name, sizeof tree->client_manifest_name,
		 "%s%s", pack_name, MP_TREE_CLIENT_SUFFIX);
	tree->layer_width = decimal_digits(max_id);
	if (tree->layer_width < 3)
		tree->layer_width = 3;
	tree->expert_width = decimal_digits(num_experts ? num_experts - 1 : 0);
	if (tree->expert_width < 3)
		tree->expert_width = 3;
	tree->first_expert_ino = MP_INO_FIRST_LAYER + layer_count;
	tree->first_file_ino = tree->first_expert_ino + objects;
	tree->first_f32_ino = tree->first_file_ino + objects * MP_SLOTS_PER_OBJECT;
	tree->metrics_ino = tree->first_f32_ino + objects * MP_ROLE_COUNT;
	tree->end_ino = tree->metrics_ino + 1;

	/*
	 * The kernel keeps the low 32 bits as i_generation (and in NFS file
	 * handles), so those must not be 0.
	 */
	for (int i = 7; i >= 0; i--)
		gen = (gen << 8) | index_digest[i];
	if ((uint32_t)gen == 0)
		gen |= 1;
	tree->inode_generation = gen;
	return MP_OK;
}

enum mp_err mp_tree_init_pack(struct mp_tree *tree, const struct mp_pack *pack,
			      struct mp_error *err)
{
	const char *slash = strrchr(pack->file.path, '/');
	const char *name = slash ? slash + 1 : pack->file.path;

	return mp_tree_init(tree, pack->m.layer_ids, pack->m.layer_count,
			    pack->m.num_experts, name, pack->index_digest, err);
}

void mp_tree_add_dequant(struct mp_tree *tree)
{
	if (tree->dequant)
		return;
	tree->dequant = true;
}

bool mp_tree_node(const struct mp_tree *tree, uint64_t ino, struct mp_node *node)
{
	memset(node, 0, sizeof *node);
	node->role = MP_ROLE_COUNT;

	if (ino == 0 || ino >= tree->end_ino) {
		node->kind = MP_NODE_NONE;
		return false;
	}
	if (ino == tree->metrics_ino) {
		node->kind = MP_NODE_METRICS;
		return true;
	}
	if (ino >= tree->first_f32_ino) { /* below metrics_ino */
		uint64_t rel = ino - tree->first_f32_ino;

		if (!tree->dequant) {
			node->kind = MP_NODE_NONE;
			return false;
		}

		node->kind = MP_NODE_F32;
		node->object = rel / MP_ROLE_COUNT;
		node->role = (enum mp_role)(rel % MP_ROLE_COUNT);
	} else if (ino >= tree->first_file_ino) {
		uint64_t rel = ino - tree->first_file_ino;
		unsigned slot = rel % MP_SLOTS_PER_OBJECT;

		node->object = rel / MP_SLOTS_PER_OBJECT;
		if (slot == MP_SLOT_OBJECT) {
			node->kind = MP_NODE_OBJECT;
		} else {
			node->kind = MP_NODE_ROLE;
			node->role = (enum mp_role)slot;
		}
	} else if (ino >= tree->first_expert_ino) {
		node->kind = MP_NODE_EXPERT;
		node->object = ino - tree->first_expert_ino;
	} else if (ino >= MP_INO_FIRST_LAYER) {
		node->kind = MP_NODE_LAYER;
		node->layer_index = ino - MP_INO_FIRST_LAYER;
		return true;
	} else {
		static const enum mp_node_kind fixed[] = {
			[MP_INO_ROOT] = MP_NODE_ROOT,
			[MP_INO_MANIFEST] = MP_NODE_MANIFEST,
			[MP_INO_PACK] = MP_NODE_PACK,
			[MP_INO_CLIENT_MANIFEST] = MP_NODE_CLIENT_MANIFEST,
			[MP_INO_STATUS] = MP_NODE_STATUS,
			[MP_INO_LAYERS] = MP_NODE_LAYERS,
		};
		node->kind = fixed[ino];
		return true;
	}
	/* Objects exist only when num_experts > 0, so the division is safe. */
	node->layer_index = node->object / tree->num_experts;
	node->expert = node->object % tree->num_experts;
	return true;
}

uint64_t mp_tree_ino(const struct mp_tree *tree, const struct mp_node *node)
{
	uint64_t objects = tree->layer_count * tree->num_experts;

	switch (node->kind) {
	case MP_NODE_ROOT:
		return MP_INO_ROOT;
	case MP_NODE_MANIFEST:
		return MP_INO_MANIFEST;
	case MP_NODE_PACK:
		return MP_INO_PACK;
	case MP_NODE_CLIENT_MANIFEST:
		return MP_INO_CLIENT_MANIFEST;
	case MP_NODE_STATUS:
		return MP_INO_STATUS;
	case MP_NODE_LAYERS:
		return MP_INO_LAYERS;
	case MP_NODE_METRICS:
		return tree->metrics_ino;
	case MP_NODE_LAYER:
		if (node->layer_index >= tree->layer_count)
			return 0;
		return MP_INO_FIRST_LAYER + node->layer_index;
	case MP_NODE_EXPERT:
		return node->object < objects ? tree->first_expert_ino + node->object
					      : 0;
	case MP_NODE_ROLE:
		if (node->object >= objects || (unsigned)node->role >= MP_ROLE_COUNT)
			return 0;
		return mp_tree_file_ino(tree, node->object, node->role);
	case MP_NODE_OBJECT:
		if (node->object >= objects)
			return 0;
		return mp_tree_file_ino(tree, node->object, MP_SLOT_OBJECT);
	case MP_NODE_F32:
		if (!tree->dequant || node->object >= objects ||
		    (unsigned)node->role >= MP_ROLE_COUNT)
			return 0;
		return mp_tree_f32_ino(tree, node->object, node->role);
	case MP_NODE_NONE:
		break;
	}
	return 0;
}

uint64_t mp_tree_parent(const struct mp_tree *tree, uint64_t ino)
{
	struct mp_node node, up = {.kind = MP_NODE_ROOT, .role = MP_ROLE_COUNT};

	if (!mp_tree_node(tree, ino, &node))
		return 0;
	switch (node.kind) {
	case MP_NODE_LAYER:
		up.kind = MP_NODE_LAYERS;
		break;
	case MP_NODE_EXPERT:
		up.kind = MP_NODE_LAYER;
		up.layer_index = node.layer_index;
		break;
	case MP_NODE_ROLE:
	case MP_NODE_OBJECT:
	case MP_NODE_F32:
		up.kind = MP_NODE_EXPERT;
		up.object = node.object;
		break;
	default:
		break;
	}
	return mp_tree_ino(tree, &up);
}

/* Exactly `width` decimal digits, nothing else. */
static bool parse_padded(const char *name, unsigned width, uint64_t *value)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; name[i]; i++) {
		if (i >= width || name[i] < '0' || name[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	if (i != width)
		return false;
	*value = v;
	return true;
}

static bool find_layer(const struct mp_tree *tree, uint64_t id, uint64_t *index)
{
	uint64_t lo = 0, hi = tree->layer_count;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (tree->layer_ids[mid] == id) {
			*index = mid;
			return true;
		}
		if (tree->layer_ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

uint64_t mp_tree_lookup(const struct mp_tree *tree, uint64_t dir, const char *name)
{
	struct mp_node node, child = {.role = MP_ROLE_COUNT};
	uint64_t value;

	if (!mp_tree_node(tree, dir, &node) || !mp_node_is_dir(node.kind))
		return 0;
	if (strcmp(name, ".") == 0)
		return dir;
	if (strcmp(name, "..") == 0)
		return mp_tree_parent(tree, dir);

	switch (node.kind) {
	case MP_NODE_ROOT:
		if (strcmp(name, MP_TREE_MANIFEST_NAME) == 0)
			return MP_INO_MANIFEST;
		if (strcmp(name, tree->pack_name) == 0)
			return MP_INO_PACK;
		if (strcmp(name, tree->client_manifest_name) == 0)
			return MP_INO_CLIENT_MANIFEST;
		if (strcmp(name, MP_TREE_STATUS_NAME) == 0)
			return MP_INO_STATUS;
		if (strcmp(name, MP_TREE_LAYERS_NAME) == 0)
			return MP_INO_LAYERS;
		if (strcmp(name, MP_TREE_METRICS_NAME) == 0)
			return tree->metrics_ino;
		return 0;
	case MP_NODE_LAYERS:
		if (!parse_padded(name, tree->layer_width, &value) ||
		    !find_layer(tree, value, &value))
			return 0;
		child.kind = MP_NODE_LAYER;
		child.layer_index = value;
		return mp_tree_ino(tree, &child);
	case MP_NODE_LAYER:
		if (!parse_padded(name, tree->expert_width, &value) ||
		    value >= tree->num_experts)
			return 0;
		child.kind = MP_NODE_EXPERT;
		child.object = node.layer_index * tree->num_experts + value;
		return mp_tree_ino(tree, &child);
	case MP_NODE_EXPERT:
		for (unsigned slot = 0; slot < MP_SLOTS_PER_OBJECT; slot++)
			if (strcmp(name, slot_name(slot)) == 0)
				return mp_tree_file_ino(tree, node.object, slot);
		if (tree->dequant) {
			for (unsigned r = 0; r < MP_ROLE_COUNT; r++) {
				size_t len = strlen(slot_name(r));

				if (strncmp(name, slot_name(r), len) == 0 &&
				    strcmp(name + len, MP_TREE_F32_SUFFIX) == 0)
					return mp_tree_f32_ino(tree, node.object,
							       (enum mp_role)r);
			}
		}
		return 0;
	default:
		return 0;
	}
}

uint64_t mp_tree_child_count(const struct mp_tree *tree, uint64_t dir)
{
	struct mp_node node;

	if (!mp_tree_node(tree, dir, &node))
		return 0;
	switch (node.kind) {
	case MP_NODE_ROOT:
		return 6;
	case MP_NODE_LAYERS:
		return tree->layer_count;
	case MP_NODE_LAYER:
		return tree->num_experts;
	case MP_NODE_EXPERT:
		return MP_SLOTS_PER_OBJECT + (tree->dequant ? MP_ROLE_COUNT : 0);
	default:
		return 0;
	}
}

static void copy_name(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
}

bool mp_tree_name(const struct mp_tree *tree, uint64_t ino, char *name,
		  size_t name_len)
{
	struct mp_node node;

	if (!mp_tree_node(tree, ino, &node))
		return false;
	switch (node.kind) {
	case MP_NODE_ROOT:
		copy_name(name, name_len, "/");
		break;
	case MP_NODE_MANIFEST:
		copy_name(name, name_len, MP_TREE_MANIFEST_NAME);
		break;
	case MP_NODE_PACK:
		copy_name(name, name_len, tree->pack_name);
		break;
	case MP_NODE_CLIENT_MANIFEST:
		copy_name(name, name_len, tree->client_manifest_name);
		break;
	case MP_NODE_STATUS:
		copy_name(name, name_len, MP_TREE_STATUS_NAME);
		break;
	case MP_NODE_LAYERS:
		copy_name(name, name_len, MP_TREE_LAYERS_NAME);
		break;
	case MP_NODE_METRICS:
		copy_name(name, name_len, MP_TREE_METRICS_NAME);
		break;
	case MP_NODE_LAYER:
		snprintf(name, name_len, "%0*" PRIu32, (int)tree->layer_width,
			 tree->layer_ids[node.layer_index]);
		break;
	case MP_NODE_EXPERT:
		snprintf(name, name_len, "%0*" PRIu64, (int)tree->expert_width,
			 node.expert);
		break;
	case MP_NODE_ROLE:
		copy_name(name, name_len, slot_name(node.role));
		break;
	case MP_NODE_OBJECT:
		copy_name(name, name_len, slot_name(MP_SLOT_OBJECT));
		break;
	case MP_NODE_F32:
		snprintf(name, name_len, "%s%s", slot_name(node.role),
			 MP_TREE_F32_SUFFIX);
		break;
	case MP_NODE_NONE:
		return false;
	}
	return true;
}

bool mp_tree_dirent(const struct mp_tree *tree, uint64_t dir, uint64_t index,
		    uint64_t *ino, char *name, size_t name_len)
{
	struct mp_node node;
	uint64_t child;

	if (!mp_tree_node(tree, dir, &node) || !mp_node_is_dir(node.kind))
		return false;
	if (index < 2) {
		*ino = index == 0 ? dir : mp_tree_parent(tree, dir);
		copy_name(name, name_len, index == 0 ? "." : "..");
		return true;
	}
	index -= 2;
	if (index >= mp_tree_child_count(tree, dir))
		return false;

	switch (node.kind) {
	case MP_NODE_ROOT:
		/* the fixed files and layers/, then metrics (numbered last) */
		child = MP_INO_MANIFEST + index <= MP_INO_LAYERS ? MP_INO_MANIFEST + index
								  : tree->metrics_ino;
		break;
	case MP_NODE_LAYERS:
		child = MP_INO_FIRST_LAYER + index;
		break;
	case MP_NODE_LAYER:
		child = tree->first_expert_ino +
			node.layer_index * tree->num_experts + index;
		break;
	default: /* MP_NODE_EXPERT: the four files, then the .f32 ones */
		if (index < MP_SLOTS_PER_OBJECT)
			child = mp_tree_file_ino(tree, node.object, (unsigned)index);
		else
			child = mp_tree_f32_ino(tree, node.object,
						(enum mp_role)(index - MP_SLOTS_PER_OBJECT));
		break;
	}
	*ino = child;
	return mp_tree_name(tree, child, name, name_len);
}

uint64_t mp_tree_nlink(const struct mp_tree *tree, uint64_t ino)
{
	struct mp_node node;

	if (!mp_tree_node(tree, ino, &node))
		return 0;
	switch (node.kind) {
	case MP_NODE_ROOT:
		return 3; /* ".", its entry in the parent, and layers/.. */
	case MP_NODE_LAYERS:
		return 2 + tree->layer_count;
	case MP_NODE_LAYER:
		return 2 + tree->num_experts;
	case MP_NODE_EXPERT:
		return 2;
	default:
		return 1;
	}
}
