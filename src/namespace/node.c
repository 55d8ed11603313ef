/* node.c - sizes, ranges and extended attributes of the tree's files. */
#include "config.h"

#include "namespace/node.h"

#include "namespace/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "payload/dequant.h"
#include "base/quant.h"

static const char *const xattr_names[MP_XA_COUNT] = {
	MP_XATTR_PREFIX "dtype",  MP_XATTR_PREFIX "dtype_id", MP_XATTR_PREFIX "shape",
	MP_XATTR_PREFIX "offset", MP_XATTR_PREFIX "nbytes",   MP_XATTR_PREFIX "tensor",
	MP_XATTR_PREFIX "expert", MP_XATTR_PREFIX "layer",    MP_XATTR_PREFIX "generation",
	MP_XATTR_PREFIX "source_dtype", MP_XATTR_PREFIX "source_offset",
	MP_XATTR_PREFIX "source_nbytes", MP_XATTR_PREFIX "expert_reads",
	MP_XATTR_PREFIX "sha256",
};

/*
 * Role and object files carry the first nine, and sha256 when the format
 * records it; an .f32 file all but "offset" (its bytes are nowhere in the
 * pack) and sha256 (not of its bytes), with dtype F32 and its source's
 * dtype, offset and size as source_*.
 */
bool mp_xattr_applies(const struct mp_pack *pack, enum mp_node_kind kind, enum mp_xattr id)
{
	switch (kind) {
	case MP_NODE_ROLE:
	case MP_NODE_OBJECT:
		return id < MP_XA_SOURCE_DTYPE ||
		       (id == MP_XA_SHA256 && pack->object_count &&
			mp_pack_role_sha256(pack, 0, MP_ROLE_UP));
	case MP_NODE_F32:
		return id < MP_XA_EXPERT_READS && id != MP_XA_OFFSET;
	case MP_NODE_LAYER:
		return id == MP_XA_EXPERT_READS;
	default:
		return false;
	}
}

static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len >= cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len = *len + (size_t)n < cap ? *len + (size_t)n : cap;
}

/* One role's value of an attribute that has one per role. */
static void role_value(const struct mp_pack *pack, const struct mp_node *n, enum mp_role r,
		       enum mp_xattr id, char *buf, size_t cap, size_t *len)
{
	const struct mp_role_info *ri = &pack->m.roles[r];
	char text[MP_XATTR_VALUE_MAX];

	if (id == MP_XA_DTYPE) {
		append(buf, cap, len, "%s", ri->dtype);
	} else if (id == MP_XA_DTYPE_ID) {
		append(buf, cap, len, "%d", ri->dtype_id);
	} else if (id == MP_XA_SHAPE) {
		struct mp_role_info own;

		/* the object's own entry's: experts' shapes may differ */
		mp_pack_role_info(pack, n->object, r, &own);
		mp_shape_text(&own, text, sizeof text);
		append(buf, cap, len, "%s", text);
	} else if (id == MP_XA_SHA256) {
		mp_sha256_hex(mp_pack_role_sha256(pack, n->object, r), text);
		append(buf, cap, len, "%s", text);
	} else {
		mp_pack_tensor_name(pack, n->object, r, text, sizeof text);
		append(buf, cap, len, "%s", text);
	}
}

/*
 * The attributes with one value per role of the node.  Role files carry
 * their role's; object files the three roles' joined by "," in the order
 * they lie in the object (shape: a JSON list of the three shapes).
 */
static void roles_value(const struct mp_pack *pack, const struct mp_node *n,
			enum mp_xattr id, char *buf, size_t cap, size_t *len)
{
	bool f32 = n->kind == MP_NODE_F32, one = n->kind == MP_NODE_ROLE || f32;
	unsigned count = one ? 1 : MP_ROLE_COUNT;

	if (f32 && id == MP_XA_DTYPE) {
		append(buf, cap, len, "F32");
		return;
	}
	if (f32 && id == MP_XA_DTYPE_ID) {
		append(buf, cap, len, "%d", MP_GGML_F32);
		return;
	}
	if (id == MP_XA_SHAPE && !one)
		append(buf, cap, len, "[");
	for (unsigned i = 0; i < count; i++) {
		if (i)
			append(buf, cap, len, "%s", id == MP_XA_SHAPE ? ", " : ",");
		role_value(pack, n, one ? n->role : pack->m.order[i], id, buf, cap, len);
	}
	if (id == MP_XA_SHAPE && !one)
		append(buf, cap, len, "]");
}

/* The attributes that are a number: where the bytes are, which expert. */
static void number_value(const struct mp_pack *pack, const struct mp_node *n,
			 enum mp_xattr id, char *buf, size_t cap, size_t *len)
{
	uint32_t layer = pack->m.layer_ids[n->layer_index];
	uint64_t offset = 0, nbytes = 0, v;

	if (id == MP_XA_OFFSET || id == MP_XA_NBYTES)
		mp_node_payload_range(pack, n, &offset, &nbytes);
	else if (id == MP_XA_SOURCE_OFFSET || id == MP_XA_SOURCE_NBYTES)
		mp_pack_role_range(pack, n->object, n->role, &offset, &nbytes);
	switch (id) {
	case MP_XA_OFFSET:
	case MP_XA_SOURCE_OFFSET:
		v = offset;
		break;
	case MP_XA_NBYTES:
		v = n->kind == MP_NODE_F32 ? mp_node_f32_size(pack, n->role) : nbytes;
		break;
	case MP_XA_EXPERT:
		v = n->expert;
		break;
	case MP_XA_LAYER:
		v = layer;
		break;
	case MP_XA_GENERATION:
		v = mp_pack_generation(pack, n->object);
		break;
	default: /* MP_XA_SOURCE_NBYTES */
		v = nbytes;
		break;
	}
	append(buf, cap, len, "%" PRIu64, v);
}

size_t mp_xattr_value(const struct mp_pack *pack, const struct mp_node *n,
		      enum mp_xattr id, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	switch (id) {
	case MP_XA_DTYPE:
	case MP_XA_DTYPE_ID:
	case MP_XA_SHAPE:
	case MP_XA_TENSOR:
	case MP_XA_SHA256:
		roles_value(pack, n, id, buf, cap, &len);
		break;
	case MP_XA_SOURCE_DTYPE:
		append(buf, cap, &len, "%s", pack->m.roles[n->role].dtype);
		break;
	case MP_XA_OFFSET:
	case MP_XA_NBYTES:
	case MP_XA_SOURCE_OFFSET:
	case MP_XA_SOURCE_NBYTES:
	case MP_XA_EXPERT:
	case MP_XA_LAYER:
	case MP_XA_GENERATION:
		number_value(pack, n, id, buf, cap, &len);
		break;
	case MP_XA_EXPERT_READS: /* counters: the FUSE layer answers it */
	case MP_XA_COUNT:
		break;
	}
	return len;
}

const char *mp_xattr_name(enum mp_xattr id)
{
	return (unsigned)id < MP_XA_COUNT ? xattr_names[id] : NULL;
}

enum mp_xattr mp_xattr_find(const struct mp_pack *pack, enum mp_node_kind kind,
			    const char *name)
{
	for (int id = 0; id < MP_XA_COUNT; id++)
		if (mp_xattr_applies(pack, kind, (enum mp_xattr)id) &&
		    strcmp(name, mp_xattr_name((enum mp_xattr)id)) == 0)
			return (enum mp_xattr)id;
	return MP_XA_COUNT;
}

size_t mp_xattr_list(const struct mp_pack *pack, enum mp_node_kind kind,
		     char buf[MP_XATTR_LIST_MAX])
{
	size_t len = 0;

	for (int id = 0; id < MP_XA_COUNT; id++) {
		size_t l = strlen(xattr_names[id]) + 1;

		if (!mp_xattr_applies(pack, kind, (enum mp_xattr)id))
			continue;
		memcpy(buf + len, xattr_names[id], l);
		len += l;
	}
	return len;
}

int mp_xattr_fit(size_t size, size_t len)
{
	if (size == 0)
		return 0;
	return size < len ? ERANGE : -1;
}

void mp_node_payload_range(const struct mp_pack *pack, const struct mp_node *n,
			   uint64_t *offset, uint64_t *nbytes)
{
	if (n->kind == MP_NODE_ROLE)
		mp_pack_role_range(pack, n->object, n->role, offset, nbytes);
	else
		mp_pack_object_range(pack, n->object, offset, nbytes);
}

uint64_t mp_node_f32_size(const struct mp_pack *pack, enum mp_role role)
{
	const struct mp_role_info *ri = &pack->m.roles[role];
	const struct mp_quant_type *qt = mp_quant_by_id(ri->dtype_id);

	return ri->expert_bytes / qt->block_bytes * qt->block_weights * sizeof(float);
}

uint64_t mp_node_size(const struct mp_pack *pack, const struct mp_node *n,
		      const struct mp_node_sizes *sizes)
{
	uint64_t offset, nbytes;

	switch (n->kind) {
	case MP_NODE_MANIFEST:
		return pack->file.manifest_len;
	case MP_NODE_PACK:
		return pack->file.size;
	case MP_NODE_CLIENT_MANIFEST:
		return sizes->client_manifest;
	case MP_NODE_ROLE:
	case MP_NODE_OBJECT:
		mp_node_payload_range(pack, n, &offset, &nbytes);
		return nbytes;
	case MP_NODE_F32:
		return mp_node_f32_size(pack, n->role);
	case MP_NODE_METRICS:
		return sizes->metrics;
	case MP_NODE_STATUS:
		return sizes->status;
	default:
		return MP_DIR_SIZE;
	}
}
