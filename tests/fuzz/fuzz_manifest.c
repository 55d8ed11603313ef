/*
 * fuzz_manifest.c - libFuzzer target: the manifest's checks on arbitrary
 * manifest text.
 *
 * The input is the manifest's bytes.  They are parsed and checked against
 * the facts of a fixed valid pack (the seed pack: its real path and size),
 * as mp_pack_open() would, given to mp_manifest_with_path() as the mount
 * does, and walked for expert_pack.path as relocate and sign do
 * (manifestpath.h).  A manifest the checks accept must describe objects whose
 * roles lie inside the object, in up, gate, down order: the target aborts
 * otherwise.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "pack/kimi/manifest.h"
#include "pack/manifestpath.h"

/* Set once by LLVMFuzzerInitialize and only read afterwards. */
static char pack_real[PATH_MAX];
static char manifest_path[PATH_MAX + 32];
static uint64_t pack_size;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = mp_fuzz_seed_dir();
	char path[PATH_MAX];
	struct stat st;

	(void)argc;
	(void)argv;
	snprintf(path, sizeof path, "%s/pack.pack", dir);
	if (!realpath(path, pack_real) || stat(pack_real, &st) != 0) {
		fprintf(stderr, "fuzz_manifest: no seed pack %s\n", path);
		exit(2);
	}
	pack_size = (uint64_t)st.st_size;
	/* Relative expert_pack.path values resolve against this directory. */
	snprintf(manifest_path, sizeof manifest_path, "%s/pack.pack.manifest.json", dir);
	return 0;
}

static void check_accepted(const struct mp_manifest *m)
{
	uint64_t end = 0;

	if (m->layer_count != MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1)
		mp_fuzz_bug("accepted %zu active layers", m->layer_count);
	if (m->num_experts == 0 || m->num_experts > MP_MAX_EXPERTS)
		mp_fuzz_bug("accepted num_experts %llu", (unsigned long long)m->num_experts);
	if (m->size != pack_size)
		mp_fuzz_bug("accepted expert_pack.size %llu for a pack of %llu bytes",
			    (unsigned long long)m->size, (unsigned long long)pack_size);
	if (m->alignment == 0 || (m->alignment & (m->alignment - 1)))
		mp_fuzz_bug("accepted alignment %llu", (unsigned long long)m->alignment);
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const struct mp_role_info *ri = &m->roles[r];
		if (ri->role_offset != end)
			mp_fuzz_bug("role %s at %llu, expected %llu", mp_role_name(r),
				    (unsigned long long)ri->role_offset,
				    (unsigned long long)end);
		if (ri->expert_bytes == 0 || ri->expert_bytes > m->object_bytes - end)
			mp_fuzz_bug("role %s of %llu bytes in an object of %llu",
				    mp_role_name(r), (unsigned long long)ri->expert_bytes,
				    (unsigned long long)m->object_bytes);
		if (ri->shape_len > MP_MAX_SHAPE)
			mp_fuzz_bug("role %s with %u dims", mp_role_name(r), ri->shape_len);
		end += ri->expert_bytes;
	}
	if (end != m->object_bytes)
		mp_fuzz_bug("roles sum to %llu, object_bytes is %llu", (unsigned long long)end,
			    (unsigned long long)m->object_bytes);
	if (strlen(m->index_sha256) != 64)
		mp_fuzz_bug("accepted index_sha256 \"%s\"", m->index_sha256);
}

/*
 * The walk of manifestpath.c on any text must stay inside it; on a manifest
 * the checks accepted it must find the path, and a spliced one must parse
 * and read back, every other byte kept.
 */
static void check_path_span(const char *raw, size_t size, bool accepted)
{
	struct mp_text_span sp, sp2;
	struct mp_error err;
	char *out = NULL;
	size_t out_len = 0;
	json_t *root = NULL;
	enum mp_err rc = mp_manifest_path_span(raw, size, "fuzz", &sp, &err);

	if (rc != MP_OK) {
		if (accepted)
			mp_fuzz_bug("an accepted manifest has no path span: %s", err.msg);
		return;
	}
	if (sp.start >= sp.end || sp.end > size || raw[sp.start] != '"' || raw[sp.end - 1] != '"')
		mp_fuzz_bug("path span [%zu, %zu) of %zu bytes", sp.start, sp.end, size);
	if (!accepted || mp_manifest_splice_path(raw, size, &sp, "/x/\"y\".pack", &out, &out_len,
						 &err) != MP_OK)
		return;
	if (mp_manifest_path_span(out, out_len, "fuzz", &sp2, &err) != MP_OK ||
	    sp2.start != sp.start || out_len - sp2.end != size - sp.end ||
	    memcmp(out + sp2.end, raw + sp.end, size - sp.end) != 0)
		mp_fuzz_bug("a spliced path does not read back in place");
	if (mp_manifest_parse(out, out_len, "fuzz", &root, &err) != MP_OK)
		mp_fuzz_bug("a spliced manifest does not parse: %s", err.msg);
	json_decref(root);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mp_manifest_input in = {
		.manifest_path = manifest_path,
		.pack_real_path = pack_real,
		.pack_size = pack_size,
	};
	struct mp_manifest m;
	char warn[MP_MAX_WARNINGS][MP_MSG_MAX];
	unsigned nwarn = 0;
	struct mp_error err;
	json_t *root = NULL;
	char *raw = malloc(size + 1), *out = NULL;
	size_t out_len = 0;
	enum mp_err rc;

	if (!raw)
		return 0;
	/* mp_manifest_read() hands over the text NUL-terminated; so do we. */
	memcpy(raw, data, size);
	raw[size] = '\0';
	memset(&m, 0, sizeof m);
	rc = mp_manifest_parse(raw, size, manifest_path, &root, &err);
	if (rc == MP_OK) {
		rc = mp_manifest_check(root, &in, &m, warn, &nwarn, &err);
		if (nwarn > MP_MAX_WARNINGS)
			mp_fuzz_bug("%u warnings", nwarn);
		if (rc == MP_OK)
			check_accepted(&m);
		mp_manifest_free(&m);
		json_decref(root);
		if (rc == MP_OK) {
			if (mp_manifest_with_path(raw, size, "/x/y.pack", &out, &out_len, &err))
				mp_fuzz_bug("an accepted manifest cannot take a new path: %s",
					    err.msg);
			free(out);
		}
	}
	check_path_span(raw, size, rc == MP_OK);
	if (rc != MP_OK && err.code != rc)
		mp_fuzz_bug("returned %s but err says %s", mp_err_name(rc),
			    mp_err_name(err.code));
	mp_fuzz_report(rc, &err);
	free(raw);
	return 0;
}
