/*
 * pack.c - opening a pack of either format, and what a validated pack
 * answers: where an object or role lies, the object generation, the
 * default manifest path, and whether a digest of the whole file is the
 * manifest's.  The format is told here, once, from the file's first
 * bytes (or, when they are neither magic, the manifest's "format"); after
 * that only its table (struct mp_pack_format) is called.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/outfile.h"
#include "pack/digest.h"
#include "pack/mjson.h"
#include "pack/pack.h"

long mp_pack_layer_index(const struct mp_pack *pack, uint64_t layer_id)
{
	/* every format's layer numbers ascend by one from the first */
	uint64_t first = pack->m.layer_count ? pack->m.layer_ids[0] : 0;

	if (layer_id < first || layer_id - first >= pack->m.layer_count)
		return -1;
	return (long)(layer_id - first);
}

enum mp_err mp_pack_lookup(const struct mp_pack *pack, uint64_t layer_id, uint64_t expert,
			   enum mp_role role, uint64_t *offset, uint64_t *nbytes,
			   struct mp_error *err)
{
	long li = mp_pack_layer_index(pack, layer_id);

	if (li < 0)
		return mp_fail(err, MP_E_NOT_FOUND, "no such entry: layer %llu is not an active "
			       "MoE layer (%u..%u)", (unsigned long long)layer_id,
			       pack->m.layer_ids[0], pack->m.layer_ids[pack->m.layer_count - 1]);
	if (expert >= pack->m.num_experts)
		return mp_fail(err, MP_E_NOT_FOUND, "no such entry: expert %llu is out of range "
			       "(0..%llu)", (unsigned long long)expert,
			       (unsigned long long)pack->m.num_experts - 1);
	if ((unsigned)role >= MP_ROLE_COUNT)
		return mp_fail(err, MP_E_NOT_FOUND, "no such entry: role %d", (int)role);
	mp_pack_role_range(pack, mp_pack_object(pack, (uint64_t)li, expert), role, offset,
			   nbytes);
	return MP_OK;
}

void mp_pack_object_range(const struct mp_pack *pack, uint64_t object, uint64_t *offset,
			  uint64_t *nbytes)
{
	*offset = pack->object_offset[object];
	*nbytes = pack->m.object_bytes;
}

char *mp_pack_default_manifest_path(const char *pack_path)
{
	return mp_path_with_suffix(pack_path, ".manifest.json");
}

enum mp_err mp_pack_check_digest(const struct mp_pack *pack,
				 const unsigned char sha256[MP_SHA256_LEN],
				 struct mp_error *err)
{
	const char *key = pack->format->sha256_key;
	char computed[MP_SHA256_HEX];

	if (!pack->m.sha256[0])
		return mp_fail_no_full_digest(err, key, pack->file.manifest_path,
					      pack->format->sha256_hint);
	mp_sha256_hex(sha256, computed);
	if (strcmp(computed, pack->m.sha256) != 0)
		return mp_fail(err, MP_E_FULL_DIGEST,
			       "pack SHA-256 does not match manifest: computed %s, %s %s",
			       computed, key, pack->m.sha256);
	return MP_OK;
}

/* The formats, in the order their magics are tried. */
static const struct mp_pack_format *const formats[] = {
	&mp_format_kimi, &mp_format_expertpack,
};
#define NFORMATS (sizeof formats / sizeof formats[0])

/* The manifest a format's open would read for pack_path when o names
 * none: beside the resolved pack (as SGLang's reader looks), or beside the
 * path given when it does not resolve.  malloc'd; NULL when out of memory. */
static char *default_manifest(const char *pack_path)
{
	char *real = realpath(pack_path, NULL);
	char *path = mp_pack_default_manifest_path(real ? real : pack_path);

	free(real);
	return path;
}

/* The format whose manifest_format the manifest's "format" is, or NULL.
 * A manifest that cannot be read or parsed names none: its format's open
 * reports that. */
static const struct mp_pack_format *format_by_manifest(const char *pack_path,
							const struct mp_open_opts *o)
{
	const struct mp_pack_format *found = NULL;
	const char *text = o ? o->manifest_text : NULL, *name;
	size_t len = text ? o->manifest_text_len : 0;
	char *path = NULL, *raw = NULL;
	struct mp_error ignored;
	json_t *root = NULL;
	bool surrogates;

	if (!text) {
		path = o && o->manifest_path ? strdup(o->manifest_path)
					     : default_manifest(pack_path);
		if (!path || mp_manifest_read(path, &raw, &len, &ignored) != MP_OK)
			goto out;
		text = raw;
	}
	if (len > MP_MANIFEST_MAX ||
	    mp_manifest_parse_ex(text, len, "manifest", &root, &surrogates, &ignored) != MP_OK)
		goto out;
	name = json_string_value(json_object_get(root, "format"));
	for (size_t i = 0; name && i < NFORMATS; i++)
		if (strcmp(name, formats[i]->manifest_format) == 0)
			found = formats[i];
out:
	json_decref(root);
	free(raw);
	free(path);
	return found;
}

const struct mp_pack_format *mp_pack_format_of(const char *path, const struct mp_open_opts *o)
{
	const struct mp_pack_format *by_manifest;
	unsigned char head[64];
	struct mp_error ignored;
	struct stat st;
	size_t got = 0;
	int fd;

	if (mp_open_regular(path, "pack", MP_E_PACK_IO, &fd, &st, &ignored) == MP_OK) {
		mp_pread_all(fd, head, sizeof head, 0, &got);
		close(fd);
	}
	for (size_t i = 0; i < NFORMATS; i++)
		if (got >= formats[i]->magic_len &&
		    memcmp(head, formats[i]->magic, formats[i]->magic_len) == 0)
			return formats[i];
	by_manifest = format_by_manifest(path, o);
	return by_manifest ? by_manifest : &mp_format_kimi;
}

enum mp_err mp_pack_open(struct mp_pack **out, const char *pack_path,
			 const struct mp_open_opts *opts, struct mp_error *err)
{
	static const struct mp_open_opts no_opts;
	struct mp_pack *p = calloc(1, sizeof *p);
	enum mp_err rc;

	*out = NULL;
	if (!p)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	mp_pack_file_init(&p->file);
	p->format = mp_pack_format_of(pack_path, opts);
	rc = p->format->open(p, pack_path, opts ? opts : &no_opts, err);
	if (rc) {
		mp_pack_close(p);
		return rc;
	}
	*out = p;
	return MP_OK;
}

void mp_pack_close(struct mp_pack *p)
{
	if (!p)
		return;
	p->format->close(p);
	mp_pack_file_close(&p->file);
	free(p->object_offset);
	free(p);
}

uint64_t mp_pack_generation(const struct mp_pack *pack, uint64_t object)
{
	return pack->format->generation(pack, object);
}

void mp_pack_tensor_name(const struct mp_pack *pack, uint64_t object, enum mp_role role,
			 char *buf, size_t len)
{
	pack->format->tensor_name(pack, object, role, buf, len);
}

enum mp_err mp_pack_manifest_with_path(const struct mp_pack *pack, const char *path,
				       char **out, size_t *out_len, struct mp_error *err)
{
	return pack->format->manifest_with_path(pack, path, out, out_len, err);
}

const unsigned char *mp_pack_role_sha256(const struct mp_pack *pack, uint64_t object,
					 enum mp_role role)
{
	return pack->format->role_sha256(pack, object, role);
}

void mp_pack_role_info(const struct mp_pack *pack, uint64_t object, enum mp_role role,
		       struct mp_role_info *out)
{
	*out = pack->m.roles[role];
	out->shape_varies = false;
	pack->format->role_shape(pack, object, role, out);
}

void mp_shape_text(const struct mp_role_info *ri, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, "[");

	for (unsigned i = 0; i < ri->shape_len && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%llu", i ? ", " : "",
					 (unsigned long long)ri->shape[i]);
	if (used < len)
		snprintf(buf + used, len - used, "]");
}
