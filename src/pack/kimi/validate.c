/*
 * validate.c - open a pack and run every check of moepack-pack(5), in the
 * reference loader's order: manifest, header, entries, trailing bytes,
 * index digest, full digest.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack/digest.h"
#include "base/file.h"
#include "pack/kimi/index.h"
#include "pack/kimi/manifest.h"
#include "pack/openhook.h"
#include "pack/pack.h"
#include "base/quant.h"
#include "base/text.h"

/* Entries read and checked per pread: about 600 KiB. */
#define ENTRIES_PER_CHUNK 4096

/* Expected tensor names, made once per (layer, role) rather than per entry. */
struct expected_names {
	char name[MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1][MP_ROLE_COUNT][48];
	unsigned char len[MP_ACTIVE_LAST - MP_ACTIVE_FIRST + 1][MP_ROLE_COUNT];
};

static void expected_names_fill(struct expected_names *en, const struct mp_manifest *m)
{
	for (size_t l = 0; l < m->layer_count; l++)
		for (int r = 0; r < MP_ROLE_COUNT; r++)
			en->len[l][r] = (unsigned char)mp_tensor_name(
				en->name[l][r], sizeof en->name[l][r], m->layer_ids[l], r);
}

/* Where index entry i belongs: its object, layer, expert and role, and the
 * name it must have. */
struct entry_place {
	uint64_t object, layer_index, expert;
	enum mp_role role;
	const char *want;
	unsigned long long idx;
};

/* Entry i is the tensor it must be: name, expert, reserved field. */
static enum mp_err check_entry_identity(const struct entry_place *at, size_t want_len,
					const unsigned char *raw, const struct mp_entry *e,
					struct mp_error *err)
{
	if (memcmp(raw, at->want, want_len) != 0 || raw[want_len] != '\0') {
		char shown[MP_ENTRY_NAME_LEN * 4 + 8];

		mp_text_escape(shown, sizeof shown, (const char *)raw,
			       strnlen((const char *)raw, MP_ENTRY_NAME_LEN), 0);
		return mp_fail(err, MP_E_ENTRY_NAME,
			       "identity mismatch at index %llu: name \"%s\"%s, expected \"%s\"",
			       at->idx, shown,
			       memchr(raw, 0, MP_ENTRY_NAME_LEN) ? "" : " (not NUL-terminated)",
			       at->want);
	}
	if (e->expert < 0 || (uint64_t)e->expert != at->expert)
		return mp_fail(err, MP_E_ENTRY_EXPERT,
			       "identity mismatch at index %llu (%s): expert is %d, expected %llu",
			       at->idx, at->want, e->expert, (unsigned long long)at->expert);
	if (e->reserved != 0)
		return mp_fail(err, MP_E_ENTRY_RESERVED,
			       "identity mismatch at index %llu (%s): reserved is %u, must be 0",
			       at->idx, at->want, e->reserved);
	return MP_OK;
}

/* Entry e's byte range: its role's size, aligned, after prev_end, in the file. */
static enum mp_err check_entry_range(const struct mp_pack *p, const struct entry_place *at,
				     const struct mp_entry *e, uint64_t prev_end,
				     struct mp_error *err)
{
	const struct mp_manifest *m = p->kimi;
	unsigned long long ex = (unsigned long long)at->expert;

	if (e->nbytes != m->roles[at->role].expert_bytes)
		return mp_fail(err, MP_E_ENTRY_NBYTES,
			       "range mismatch at index %llu (%s expert %llu): nbytes is %llu, "
			       "expert_pack.roles.%s.expert_bytes is %llu",
			       at->idx, at->want, ex, (unsigned long long)e->nbytes,
			       mp_role_name(at->role),
			       (unsigned long long)m->roles[at->role].expert_bytes);
	if (e->offset % m->alignment != 0)
		return mp_fail(err, MP_E_ENTRY_ALIGNMENT,
			       "range mismatch at index %llu (%s expert %llu): offset %llu is "
			       "not a multiple of the alignment %llu",
			       at->idx, at->want, ex, (unsigned long long)e->offset,
			       (unsigned long long)m->alignment);
	if (e->offset < prev_end)
		return mp_fail(err, MP_E_ENTRY_OVERLAP,
			       "range mismatch at index %llu (%s expert %llu): offset %llu is "
			       "before the end of the previous %s (%llu)",
			       at->idx, at->want, ex, (unsigned long long)e->offset,
			       at->idx == 0 ? "index (data_start)" : "payload",
			       (unsigned long long)prev_end);
	if (e->nbytes > p->file.size || e->offset > p->file.size - e->nbytes)
		return mp_fail(err, MP_E_ENTRY_BOUNDS,
			       "range mismatch at index %llu (%s expert %llu): offset %llu + "
			       "nbytes %llu runs past the end of the pack (%llu bytes)",
			       at->idx, at->want, ex, (unsigned long long)e->offset,
			       (unsigned long long)e->nbytes, (unsigned long long)p->file.size);
	return MP_OK;
}

static enum mp_err check_entry(struct mp_pack *p, const struct expected_names *en,
			       uint64_t i, const unsigned char *raw, uint64_t *prev_end,
			       uint64_t *up_offset, struct mp_error *err)
{
	const struct mp_manifest *m = p->kimi;
	struct entry_place at = {.object = i / MP_ROLE_COUNT,
				 .role = (enum mp_role)(i % MP_ROLE_COUNT),
				 .idx = (unsigned long long)i};
	struct mp_entry e;
	enum mp_err rc;

	at.layer_index = at.object / m->num_experts;
	at.expert = at.object % m->num_experts;
	at.want = en->name[at.layer_index][at.role];
	mp_entry_decode(raw, &e);
	if ((rc = check_entry_identity(&at, en->len[at.layer_index][at.role], raw, &e, err)) ||
	    (rc = check_entry_range(p, &at, &e, *prev_end, err)))
		return rc;
	*prev_end = e.offset + e.nbytes;
	if (at.role == MP_ROLE_UP) {
		*up_offset = e.offset;
		p->object_offset[at.object] = e.offset;
	} else if (e.offset != *up_offset + m->roles[at.role].role_offset) {
		return mp_fail(err, MP_E_ENTRY_CONTIGUITY,
			       "not contiguous at index %llu (%s expert %llu): offset %llu, "
			       "expected up offset %llu + %llu",
			       at.idx, at.want, (unsigned long long)at.expert,
			       (unsigned long long)e.offset, (unsigned long long)*up_offset,
			       (unsigned long long)m->roles[at.role].role_offset);
	}
	return MP_OK;
}


/* What a bad magic message says the magic must be: this format's, or the
 * other format's (a file with neither is judged here), each with the NUL
 * bytes that pad it. */
static void magic_wanted(char *buf, size_t len)
{
	static const char *const count[] = {"no", "one", "two", "three", "four",
					    "five", "six", "seven", "eight"};
	const struct mp_pack_format *ep = &mp_format_expertpack;
	size_t pad = ep->magic_len - strnlen(ep->magic, ep->magic_len);

	snprintf(buf, len, "\"%s\" and three NUL bytes (or, for SGLang's expert pack, "
		 "\"%s\" and %s)", MP_MAGIC, ep->magic, pad < 9 ? count[pad] : "more");
}

static enum mp_err check_header(struct mp_pack *p, unsigned char raw[MP_HEADER_SIZE],
				struct mp_error *err)
{
	const struct mp_manifest *m = p->kimi;
	struct mp_header h;
	char must_magic[160];
	uint64_t index_end;
	enum mp_err rc;

	if (p->file.size < MP_HEADER_SIZE)
		return mp_fail(err, MP_E_HEADER_SHORT,
			       "pack is shorter than its 40-byte header: %s has %llu bytes",
			       p->file.path, (unsigned long long)p->file.size);
	rc = mp_pread_full(p->file.fd, raw, MP_HEADER_SIZE, 0, "pack", p->file.path, MP_E_PACK_IO, err);
	if (rc)
		return rc;
	mp_header_decode(raw, &h);
	magic_wanted(must_magic, sizeof must_magic);
	if ((rc = mp_check_magic(h.magic, MP_MAGIC "\0\0", MP_MAGIC_LEN, "",
				 must_magic, err)))
		return rc;
	if (h.version != MP_VERSION)
		return mp_fail(err, MP_E_HEADER_VERSION,
			       "unsupported pack version: header version is %u, must be %d",
			       h.version, MP_VERSION);
	if (h.header_size != MP_HEADER_SIZE)
		return mp_fail(err, MP_E_HEADER_SIZE,
			       "header size must be 40: header header_size is %u", h.header_size);
	p->object_count = m->layer_count * m->num_experts;
	p->index_count = p->object_count * MP_ROLE_COUNT;
	if (h.index_count != p->index_count)
		return mp_fail(err, MP_E_INDEX_COUNT,
			       "index count does not match the manifest: header index_count "
			       "is %llu, %zu layers x %llu experts x 3 roles is %llu",
			       (unsigned long long)h.index_count, m->layer_count,
			       (unsigned long long)m->num_experts,
			       (unsigned long long)p->index_count);
	if (h.data_start != m->data_start)
		return mp_fail(err, MP_E_DATA_START,
			       "data start does not match manifest: header data_start is %llu, "
			       "expert_pack.data_start is %llu",
			       (unsigned long long)h.data_start,
			       (unsigned long long)m->data_start);
	/* index_count <= 92 * 65536 * 3 here, so this cannot overflow. */
	index_end = MP_HEADER_SIZE + MP_ENTRY_SIZE * p->index_count;
	if (index_end > p->file.size)
		return mp_fail(err, MP_E_INDEX_TRUNCATED,
			       "index runs past the end of the pack: %llu entries end at byte "
			       "%llu, the pack has %llu bytes",
			       (unsigned long long)p->index_count, (unsigned long long)index_end,
			       (unsigned long long)p->file.size);
	if (h.data_start < index_end)
		return mp_fail(err, MP_E_DATA_OVERLAPS_INDEX,
			       "data start lies inside the index: data_start is %llu, the "
			       "index ends at byte %llu",
			       (unsigned long long)h.data_start, (unsigned long long)index_end);
	return MP_OK;
}

static enum mp_err check_index(struct mp_pack *p, const unsigned char header[MP_HEADER_SIZE],
			       struct mp_error *err)
{
	struct mp_sha256 *h = mp_sha256_new();
	struct expected_names *en = malloc(sizeof *en);
	unsigned char *buf = malloc((size_t)ENTRIES_PER_CHUNK * MP_ENTRY_SIZE);
	uint64_t prev_end = p->kimi->data_start, up_offset = 0;
	char computed[MP_SHA256_HEX];
	enum mp_err rc = MP_OK;

	/* Bounded by the file size, checked in check_header(). */
	p->object_offset = malloc((size_t)p->object_count * sizeof *p->object_offset);
	if (!h || !en || !buf || !p->object_offset) {
		rc = mp_fail(err, MP_E_NOMEM, "out of memory reading the index of %s", p->file.path);
		goto out;
	}
	expected_names_fill(en, p->kimi);
	mp_sha256_update(h, header, MP_HEADER_SIZE);
	for (uint64_t i = 0; i < p->index_count; i += ENTRIES_PER_CHUNK) {
		uint64_t n = p->index_count - i < ENTRIES_PER_CHUNK ? p->index_count - i
								    : ENTRIES_PER_CHUNK;
		rc = mp_pread_full(p->file.fd, buf, (size_t)n * MP_ENTRY_SIZE,
				   MP_HEADER_SIZE + i * MP_ENTRY_SIZE, "pack", p->file.path,
				   MP_E_PACK_IO, err);
		if (rc)
			goto out;
		for (uint64_t k = 0; k < n; k++) {
			rc = check_entry(p, en, i + k, buf + k * MP_ENTRY_SIZE, &prev_end,
					 &up_offset, err);
			if (rc)
				goto out;
		}
		mp_sha256_update(h, buf, (size_t)n * MP_ENTRY_SIZE);
	}
	if (prev_end != p->file.size) {
		rc = mp_fail(err, MP_E_TRAILING_BYTES,
			     "pack has bytes after the last payload: the last payload ends "
			     "at byte %llu, the pack has %llu bytes",
			     (unsigned long long)prev_end, (unsigned long long)p->file.size);
		goto out;
	}
	mp_sha256_final(h, p->index_digest);
	mp_sha256_hex(p->index_digest, computed);
	if (strcmp(computed, p->kimi->index_sha256) != 0)
		rc = mp_fail(err, MP_E_INDEX_DIGEST,
			     "index SHA-256 does not match manifest: computed %s, "
			     "expert_pack.index_sha256 %s",
			     computed, p->kimi->index_sha256);
out:
	free(buf);
	free(en);
	mp_sha256_free(h);
	return rc;
}

static enum mp_err check_full(struct mp_pack *p, const struct mp_open_opts *o,
			      struct mp_error *err)
{
	unsigned char d[MP_SHA256_LEN] = {0};
	enum mp_err rc = MP_OK;

	/* no digest to compare with: said before the long read */
	if (p->kimi->sha256[0])
		rc = mp_sha256_fd(p->file.fd, p->file.size, p->file.path, o->progress, o->progress_arg,
				  o->cancel, d, err);
	if (!rc)
		rc = mp_pack_check_digest(p, d, err);
	p->full_checked = rc == MP_OK;
	return rc;
}

static bool has_manifest_suffix(const char *path)
{
	static const char suffix[] = ".manifest.json";
	size_t n = strlen(path);

	return n >= sizeof suffix - 1 && strcmp(path + n - (sizeof suffix - 1), suffix) == 0;
}

/* The pack's first bytes are GGUF's magic: a checkpoint given as PACK. */
static bool is_gguf(int fd)
{
	unsigned char magic[4];
	size_t got = 0;

	return mp_pread_all(fd, magic, sizeof magic, 0, &got) <= 0 && got == sizeof magic &&
	       memcmp(magic, "GGUF", 4) == 0;
}

/* Entries of a directory looked at for a hint, at most: a hint never
 * makes a huge directory slow to fail in. */
#define HINT_MAX_ENTRIES 65536

/*
 * The one *.manifest.json in the pack's directory, as a path to show
 * (escaped) in out; false when there is none or more than one.
 */
static bool only_manifest_beside(const char *pack_path, char *out, size_t len)
{
	const char *slash = strrchr(pack_path, '/');
	int dirlen = slash ? (int)(slash - pack_path) + 1 : 0;
	char dir[PATH_MAX], found[256 + 1] = "";
	unsigned n = 0, seen = 0;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof dir, "%.*s", dirlen ? dirlen : 1, dirlen ? pack_path : ".");
	if (!(d = opendir(dir)))
		return false;
	while (n < 2 && seen++ < HINT_MAX_ENTRIES && (e = readdir(d)))
		if (has_manifest_suffix(e->d_name) && n++ == 0)
			snprintf(found, sizeof found, "%s", e->d_name);
	closedir(d);
	if (n != 1)
		return false;
	snprintf(dir, sizeof dir, "%.*s%s", dirlen, pack_path, found);
	mp_text_escape(out, len, dir, strlen(dir), 0);
	return true;
}

/*
 * The default manifest of an open pack cannot be read: say why it may
 * be so and what to give instead, after the message.  A manifest given
 * as PACK, a GGUF checkpoint given as PACK, or a manifest of another name
 * (moepack-pack(5) pairs expert_pack.bin with expert_pack.manifest.json).
 */
static void manifest_hint(const struct mp_pack *p, const char *pack_path, struct mp_error *err)
{
	char first[MP_MSG_MAX], shown[MP_MSG_MAX], other[MP_MSG_MAX];
	struct stat st;

	/* first is a message, escaped once already */
	snprintf(first, sizeof first, "%s", err->msg);
	mp_text_escape(shown, sizeof shown, pack_path, strlen(pack_path), 0);
	if (has_manifest_suffix(pack_path))
		mp_fail_escaped(err, err->code, "%s (%s is a manifest: pass the pack, not its "
				"manifest)", first, shown);
	else if (is_gguf(p->file.fd))
		mp_fail_escaped(err, err->code, "%s (%s is a GGUF file, not a pack: build a pack "
				"with 'moepack build --gguf %s' first)", first, shown, shown);
	else if (stat(p->file.manifest_path, &st) != 0 && errno == ENOENT &&
		 only_manifest_beside(pack_path, other, sizeof other))
		mp_fail_escaped(err, err->code, "%s (name the manifest with --manifest FILE or "
				"-o manifest=FILE: %s is the only one beside the pack)", first,
				other);
	else if (stat(p->file.manifest_path, &st) != 0 && errno == ENOENT)
		mp_fail_escaped(err, err->code, "%s (name the manifest with --manifest FILE or "
				"-o manifest=FILE)", first);
}

/* The manifest given in memory (mp_open_opts.manifest_text), as if read. */
static enum mp_err manifest_copy(struct mp_pack *p, const struct mp_open_opts *o,
				 struct mp_error *err)
{
	if (o->manifest_text_len > MP_MANIFEST_MAX)
		return mp_fail(err, MP_E_MANIFEST_IO, "cannot read manifest %s: larger than %u MiB",
			       p->file.manifest_path, MP_MANIFEST_MAX >> 20);
	p->file.manifest_raw = malloc(o->manifest_text_len + 1);
	if (!p->file.manifest_raw)
		return mp_fail(err, MP_E_NOMEM, "out of memory reading manifest %s",
			       p->file.manifest_path);
	memcpy(p->file.manifest_raw, o->manifest_text, o->manifest_text_len);
	p->file.manifest_raw[o->manifest_text_len] = '\0';
	p->file.manifest_len = o->manifest_text_len;
	return MP_OK;
}

static enum mp_err open_files(struct mp_pack *p, const char *pack_path,
			      const struct mp_open_opts *o, struct mp_error *err)
{
	struct mp_pack_file *f = &p->file;
	enum mp_err rc;

	/* beside the path as given: this format's loader does not resolve it */
	f->manifest_path = o->manifest_path ? strdup(o->manifest_path)
					    : mp_pack_default_manifest_path(pack_path);
	if (!f->manifest_path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	if ((rc = mp_pack_file_open(f, pack_path, o->opened, o->opened_arg, err)))
		return rc;
	if (o->manifest_text)
		return manifest_copy(p, o, err);
	rc = mp_manifest_read(f->manifest_path, &f->manifest_raw, &f->manifest_len, err);
	/* "cannot read manifest PACK.manifest.json" alone leaves one guessing */
	if (rc == MP_E_MANIFEST_IO && !o->manifest_path)
		manifest_hint(p, pack_path, err);
	return rc;
}

/* The model the rest of the tree reads, from the checked Kimi manifest. */
static void model_from_kimi(struct mp_pack *p)
{
	const struct mp_manifest *k = p->kimi;
	struct mp_model *m = &p->m;

	m->model_layers = k->num_hidden_layers;
	m->num_experts = k->num_experts;
	m->top_k = k->top_k;
	m->layer_ids = k->layer_ids;
	m->layer_count = k->layer_count;
	memcpy(m->roles, k->roles, sizeof m->roles);
	/* up, gate, down: this format's order is the role enum's */
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		m->order[r] = (enum mp_role)r;
	m->object_bytes = k->object_bytes;
	m->data_start = k->data_start;
	m->alignment = k->alignment;
	memcpy(m->index_sha256, k->index_sha256, sizeof m->index_sha256);
	memcpy(m->sha256, k->sha256, sizeof m->sha256);
}

/* What only SGLang's loader takes, refused for a Kimi pack by name. */
static enum mp_err no_sglang_options(const struct mp_open_opts *o, struct mp_error *err)
{
	const char *given = o->expect_source_sha256 ? "the expected source SHA-256"
			    : o->expect_model_identity_sha256 ? "the expected model identity SHA-256"
			    : o->expect_config_sha256 ? "the expected config SHA-256"
			    : o->source_path ? "a source GGUF" : NULL;

	if (given)
		return mp_fail(err, MP_E_USAGE, "invalid usage: %s applies to "
			       "SGLANG-EXPERTPACK-v1 packs only, and this one is GGMLMOEPACKv1 "
			       "(its source is checked by `moepack build`, its config by --config)",
			       given);
	return MP_OK;
}

static enum mp_err kimi_open(struct mp_pack *p, const char *pack_path,
			     const struct mp_open_opts *o, struct mp_error *err)
{
	char config_hex[MP_SHA256_HEX];
	unsigned char header[MP_HEADER_SIZE];
	json_t *root = NULL;
	bool surrogates = false;
	enum mp_err rc;

	if ((rc = no_sglang_options(o, err)))
		return rc;
	if (!(p->kimi = calloc(1, sizeof *p->kimi)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	if ((rc = open_files(p, pack_path, o, err)))
		return rc;
	if ((rc = mp_manifest_parse_ex(p->file.manifest_raw, p->file.manifest_len, p->file.manifest_path,
				       &root, &surrogates, err)))
		return rc;
	if (o->config_path && (rc = mp_config_sha256(o->config_path, config_hex, err)))
		goto out;

	struct mp_manifest_input in = {
		.manifest_path = p->file.manifest_path,
		.pack_real_path = p->file.real_path,
		.pack_size = p->file.size,
		.expect_layers = o->expect_layers,
		.expect_experts = o->expect_experts,
		.config_sha256 = o->config_path ? config_hex : NULL,
		.surrogate_escapes = surrogates,
	};
	if ((rc = mp_manifest_check(root, &in, p->kimi, p->file.warnings, &p->file.nwarnings, err)) ||
	    (rc = check_header(p, header, err)) || (rc = check_index(p, header, err)) ||
	    (rc = mp_manifest_check_recorded(root, p->kimi, err)))
		goto out;
	if (o->expect_top_k && o->expect_top_k != p->kimi->top_k) {
		rc = mp_fail(err, MP_E_TOP_K, "top-k must be 16: --expect-top-k is %llu",
			     (unsigned long long)o->expect_top_k);
		goto out;
	}
	model_from_kimi(p);
	if (o->full && (rc = check_full(p, o, err)))
		goto out;
	p->page_aligned = p->m.alignment >= MP_PAGE;
out:
	json_decref(root);
	return rc;
}

static void kimi_close(struct mp_pack *p)
{
	if (p->kimi)
		mp_manifest_free(p->kimi);
	free(p->kimi);
	p->kimi = NULL;
}

static uint64_t kimi_generation(const struct mp_pack *p, uint64_t object)
{
	return mp_object_generation(p->m.index_sha256,
				    p->m.layer_ids[object / p->m.num_experts],
				    object % p->m.num_experts);
}

static void kimi_tensor_name(const struct mp_pack *p, uint64_t object, enum mp_role role,
			     char *buf, size_t len)
{
	mp_tensor_name(buf, len, p->m.layer_ids[object / p->m.num_experts], role);
}

static const unsigned char *kimi_role_sha256(const struct mp_pack *p, uint64_t object,
					     enum mp_role role)
{
	(void)p;
	(void)object;
	(void)role;
	return NULL; /* the index records none */
}

/* The manifest's one shape per role: the index records none. */
static void kimi_role_shape(const struct mp_pack *p, uint64_t object, enum mp_role role,
			    struct mp_role_info *ri)
{
	(void)object;
	memcpy(ri->shape, p->m.roles[role].shape, sizeof ri->shape);
	ri->shape_len = p->m.roles[role].shape_len;
}

/* Re-encoded by jansson, key order kept (manifest.h). */
static enum mp_err kimi_manifest_with_path(const struct mp_pack *p, const char *path,
					   char **out, size_t *out_len, struct mp_error *err)
{
	return mp_manifest_with_path(p->file.manifest_raw, p->file.manifest_len, path, out, out_len, err);
}

static unsigned kimi_facts(const struct mp_pack *p, struct mp_pack_fact *f)
{
	const struct mp_manifest *k = p->kimi;

	f[0] = (struct mp_pack_fact){.key = "format", .label = "format"};
	snprintf(f[0].text, sizeof f[0].text, "%s", MP_FORMAT);
	f[1] = (struct mp_pack_fact){.key = "num_hidden_layers", .label = "hidden layers",
				     .number = true, .u64 = k->num_hidden_layers};
	f[2] = (struct mp_pack_fact){.key = "config_sha256", .label = "config sha256",
				     .tail = true};
	snprintf(f[2].text, sizeof f[2].text, "%s", k->config_sha256);
	f[3] = (struct mp_pack_fact){.key = "inventory_sha256", .label = "inventory sha256",
				     .tail = true};
	snprintf(f[3].text, sizeof f[3].text, "%s", k->inventory_sha256);
	return 4;
}

const struct mp_pack_format mp_format_kimi = {
	.name = MP_MAGIC, .model = "Kimi K3", .manifest_format = MP_FORMAT,
	.magic = MP_MAGIC "\0\0", .magic_len = MP_MAGIC_LEN,
	MP_PACK_FORMAT_OPS(kimi),
	.path_key = "expert_pack.path", .sha256_key = "expert_pack.sha256",
	.layers_key = "num_hidden_layers",
	.sha256_hint = "'moepack build --full-sha256' and 'moepack mkdemo --full-sha256' record "
		       "one; or check every byte against a seal: 'moepack seal --unanchored', "
		       "then verify --seal or -o verify=seal",
};
