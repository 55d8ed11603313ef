/*
 * epvalidate.c - mp_ep_open(): the files, the manifest's "complete", the
 * header and the caller's expectations (the reference runtime's steps 1 to
 * 4, 6 and 7), then the phases of epcheck.h in their order.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/outfile.h"
#include "base/text.h"
#include "pack/expertpack/check.h"
#include "pack/expertpack/expertpack.h"
#include "pack/role.h"
#include "pack/mjson.h"
#include "pack/openhook.h"

void mp_epcheck_warn(struct mp_epcheck *c, const char *fmt, ...)
{
	va_list ap;

	if (c->ep->nwarnings >= MP_EP_MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	vsnprintf(c->ep->warnings[c->ep->nwarnings], MP_MSG_MAX, fmt, ap);
	va_end(ap);
	mp_text_sanitize(c->ep->warnings[c->ep->nwarnings++], MP_MSG_MAX, 0);
}

const char *mp_epcheck_u128(unsigned __int128 v, char buf[40])
{
	char *p = buf + 39;

	*p = '\0';
	do {
		*--p = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v);
	return p;
}

bool mp_epcheck_text_is(const unsigned char *field, size_t len, const char *s)
{
	size_t n = strlen(s);

	return mp_ep_text_len(field, len) == n && memcmp(field, s, n) == 0;
}

/* 64 hex digits, either case. */
static bool is_hex_digest(const char *s)
{
	size_t n = 0;

	while (s[n] && isxdigit((unsigned char)s[n]))
		n++;
	return n == 64 && s[n] == '\0';
}

static enum mp_err check_opts(const struct mp_ep_opts *o, struct mp_error *err)
{
	const char *name[3] = {"expect_source_sha256", "expect_model_identity_sha256",
			       "expect_config_sha256"};
	const char *value[3] = {o->expect_source_sha256, o->expect_model_identity_sha256,
				o->expect_config_sha256};

	for (int i = 0; i < 3; i++)
		if (value[i] && value[i][0] && !is_hex_digest(value[i]))
			return mp_fail(err, MP_E_USAGE,
				       "invalid usage: %s must be 64 hex digits, is \"%.80s\"",
				       name[i], value[i]);
	return MP_OK;
}

/* Step 1 and 2: the pack, resolved; the manifest, read and parsed. */
/* The caller's bytes (`moepack relocate`'s text), held as a read would. */
static enum mp_err manifest_copy(const struct mp_ep_opts *o, struct mp_ep *ep,
				 struct mp_error *err)
{
	if (o->manifest_text_len > MP_MANIFEST_MAX)
		return mp_fail(err, MP_E_MANIFEST_IO, "manifest %s is larger than %u bytes",
			       ep->manifest_path, MP_MANIFEST_MAX);
	ep->manifest_raw = malloc(o->manifest_text_len + 1);
	if (!ep->manifest_raw)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	memcpy(ep->manifest_raw, o->manifest_text, o->manifest_text_len);
	ep->manifest_raw[o->manifest_text_len] = '\0';
	ep->manifest_len = o->manifest_text_len;
	return MP_OK;
}

static enum mp_err open_files(struct mp_epcheck *c, const char *pack_path,
			      struct mp_error *err)
{
	struct mp_ep *ep = c->ep;
	struct stat st;
	enum mp_err rc;

	if (!(ep->path = strdup(pack_path)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	if ((rc = mp_open_regular(pack_path, "pack", MP_E_PACK_IO, &ep->fd, &st, err)))
		return rc;
	if (c->o->opened && (rc = mp_open_hook_run(c->ep->fd, c->o->opened, c->o->opened_arg,
						   pack_path, &st, err)))
		return rc;
	ep->file_size = (uint64_t)st.st_size;
	ep->file_mtime = st.st_mtim;
	ep->file_ctime = st.st_ctim;
	ep->file_nlink = (uint64_t)st.st_nlink;
	if (!(ep->real_path = realpath(pack_path, NULL)))
		return mp_fail(err, MP_E_PACK_IO, "cannot resolve pack path %s: %s", pack_path,
			       strerror(errno));
	/* the reference looks for the manifest beside the resolved pack */
	ep->manifest_path = c->o->manifest_path
				    ? strdup(c->o->manifest_path)
				    : mp_path_with_suffix(ep->real_path, ".manifest.json");
	if (!ep->manifest_path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	if (c->o->manifest_text)
		rc = manifest_copy(c->o, ep, err);
	else
		rc = mp_manifest_read(ep->manifest_path, &ep->manifest_raw, &ep->manifest_len, err);
	if (rc)
		return rc;
	return mp_manifest_parse_ex(ep->manifest_raw, ep->manifest_len, ep->manifest_path,
				    &c->root, &c->surrogates, err);
}

/* Step 3: the reference takes any truthy value; only true is taken here. */
static enum mp_err check_complete(struct mp_epcheck *c, struct mp_error *err)
{
	json_t *v;
	enum mp_err rc = mp_json_get_typed(c->root, "complete", JSON_TRUE, "a boolean", &v, err);

	if (rc)
		return rc;
	if (!json_is_true(v))
		return mp_fail(err, MP_E_INCOMPLETE,
			       "manifest says the pack is not complete: complete is false");
	return MP_OK;
}

/* SGLang's reader's one message for both, said beside the code's summary. */
#define MP_EP_MAGIC_VERSION "expert-pack magic or version does not match"

/* Step 4, first half: what the bytes are and how large the records. */
static enum mp_err check_header_kind(struct mp_ep *ep, struct mp_error *err)
{
	const struct mp_ep_header *h = &ep->header;
	unsigned __int128 want = (unsigned __int128)h->num_layers * h->num_experts * MP_EP_ROLES;
	char buf[40];
	enum mp_err rc;

	if ((rc = mp_check_magic(h->magic, MP_EP_MAGIC "\0\0\0\0", MP_EP_MAGIC_LEN,
				 " (" MP_EP_MAGIC_VERSION ")",
				 "\"" MP_EP_MAGIC "\" and four NUL bytes", err)))
		return rc;
	if (h->version != MP_EP_VERSION)
		return mp_fail(err, MP_E_HEADER_VERSION,
			       "unsupported pack version (" MP_EP_MAGIC_VERSION "): header version "
			       "is %u, must be %d",
			       h->version, MP_EP_VERSION);
	if (h->header_bytes != MP_EP_HEADER_SIZE || h->entry_bytes != MP_EP_ENTRY_SIZE)
		return mp_fail(err, MP_E_EP_STRUCT_SIZES,
			       "expert-pack struct sizes do not match: header header_bytes is %u "
			       "and entry_bytes %u, must be %d and %d",
			       h->header_bytes, h->entry_bytes, MP_EP_HEADER_SIZE,
			       MP_EP_ENTRY_SIZE);
	if (h->index_count != want)
		return mp_fail(err, MP_E_EP_COVERAGE,
			       "expert-pack header coverage is inconsistent: header index_count "
			       "is %llu, num_layers %u x num_experts %u x 3 roles is %s",
			       (unsigned long long)h->index_count, h->num_layers, h->num_experts,
			       mp_epcheck_u128(want, buf));
	if (h->role_count != MP_EP_ROLES)
		return mp_fail(err, MP_E_EP_COVERAGE,
			       "expert-pack header coverage is inconsistent: header role_count "
			       "is %u, must be 3",
			       h->role_count);
	return MP_OK;
}

/* Step 4, second half: flags, alignment, where the data starts. */
static enum mp_err check_header_layout(struct mp_ep *ep, struct mp_error *err)
{
	const struct mp_ep_header *h = &ep->header;
	unsigned __int128 index_end =
		MP_EP_HEADER_SIZE + (unsigned __int128)h->index_count * MP_EP_ENTRY_SIZE;
	char buf[40];

	if ((h->flags & MP_EP_FLAGS_REQUIRED) != MP_EP_FLAGS_REQUIRED)
		return mp_fail(err, MP_E_EP_FLAGS,
			       "expert-pack is not identity triplet layout: header flags is "
			       "0x%x, bits 0 (identity payload) and 1 (triplet objects) must "
			       "both be set",
			       h->flags);
	if (h->alignment == 0 || (h->alignment & (h->alignment - 1)) != 0)
		return mp_fail(err, MP_E_ALIGNMENT,
			       "alignment must be a power of two: header alignment is %llu",
			       (unsigned long long)h->alignment);
	if (h->data_start < index_end)
		return mp_fail(err, MP_E_DATA_OVERLAPS_INDEX,
			       "data start lies inside the index: header data_start is %llu, "
			       "the index of %llu entries ends at byte %s",
			       (unsigned long long)h->data_start,
			       (unsigned long long)h->index_count,
			       mp_epcheck_u128(index_end, buf));
	if (h->data_start % h->alignment != 0)
		return mp_fail(err, MP_E_EP_DATA_START,
			       "expert-pack data offset is not aligned: header data_start %llu "
			       "is not a multiple of the alignment %llu",
			       (unsigned long long)h->data_start,
			       (unsigned long long)h->alignment);
	return MP_OK;
}

static enum mp_err check_header(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_ep *ep = c->ep;
	unsigned char raw[MP_EP_HEADER_SIZE];
	enum mp_err rc;

	if (ep->file_size < MP_EP_HEADER_SIZE)
		return mp_fail(err, MP_E_EP_HEADER_TRUNCATED,
			       "expert-pack header is truncated: %s has %llu bytes, the header "
			       "takes %d",
			       ep->path, (unsigned long long)ep->file_size, MP_EP_HEADER_SIZE);
	if ((rc = mp_pread_full(ep->fd, raw, sizeof raw, 0, "pack", ep->path, MP_E_PACK_IO,
				err)))
		return rc;
	mp_ep_header_decode(raw, &ep->header);
	if ((rc = check_header_kind(ep, err)) || (rc = check_header_layout(ep, err)))
		return rc;
	ep->num_layers = ep->header.num_layers;
	ep->num_experts = ep->header.num_experts;
	ep->top_k = ep->header.top_k;
	ep->alignment = ep->header.alignment;
	ep->data_start = ep->header.data_start;
	ep->index_count = ep->header.index_count;
	ep->object_count = ep->num_layers * ep->num_experts;
	c->entries_in_file = (ep->file_size - MP_EP_HEADER_SIZE) / MP_EP_ENTRY_SIZE;
	if (c->entries_in_file > ep->index_count)
		c->entries_in_file = ep->index_count;
	return MP_OK;
}

/* Step 6: the header's dimensions against the caller's. */
static enum mp_err check_dimensions(const struct mp_epcheck *c, struct mp_error *err)
{
	static const enum mp_err code[3] = {MP_E_EXPECT_LAYERS, MP_E_EXPECT_EXPERTS,
					    MP_E_EXPECT_TOP_K};
	static const char *const what[3] = {"layer count", "expert count", "top-k"};
	static const char *const field[3] = {"num_layers", "num_experts", "top_k"};
	const struct mp_ep *ep = c->ep;
	const uint64_t have[3] = {ep->num_layers, ep->num_experts, ep->top_k};
	const uint64_t want[3] = {c->o->expect_layers, c->o->expect_experts,
				  c->o->expect_top_k};

	for (int i = 0; i < 3; i++)
		if (want[i] && want[i] != have[i])
			return mp_fail(err, code[i],
				       "%s differs from the expected one: header %s is %llu, "
				       "expected %llu (header dimensions (%llu, %llu, %llu))",
				       what[i], field[i], (unsigned long long)have[i],
				       (unsigned long long)want[i], (unsigned long long)have[0],
				       (unsigned long long)have[1], (unsigned long long)have[2]);
	return MP_OK;
}

/* Step 7: the header's digests against the caller's, in the runtime's order. */
static enum mp_err check_digests(const struct mp_epcheck *c, struct mp_error *err)
{
	const struct mp_ep_header *h = &c->ep->header;
	const char *field[3] = {"source_blob_sha256", "model_identity_sha256", "config_sha256"};
	const char *want[3] = {c->o->expect_source_sha256, c->o->expect_model_identity_sha256,
			       c->o->expect_config_sha256};
	const unsigned char *have[3] = {h->source_blob_sha256, h->model_identity_sha256,
					h->config_sha256};

	for (int i = 0; i < 3; i++) {
		char hex[MP_SHA256_HEX], lower[MP_SHA256_HEX];

		if (!want[i] || !want[i][0])
			continue;
		for (int k = 0; k < MP_SHA256_HEX; k++)
			lower[k] = (char)tolower((unsigned char)want[i][k]);
		mp_sha256_hex(have[i], hex);
		if (strcmp(hex, lower) != 0)
			return mp_fail(err, MP_E_EXPECT_DIGEST,
				       "expert-pack digest does not match the configured one: "
				       "header %s is %s, expected %s",
				       field[i], hex, lower);
	}
	return MP_OK;
}

/* The per-slot arrays, once the whole index is known to lie in the file. */
static enum mp_err allocate(struct mp_epcheck *c, struct mp_error *err)
{
	struct mp_ep *ep = c->ep;
	size_t n = (size_t)ep->index_count + 1, objects = (size_t)ep->object_count + 1;

	ep->role = calloc(n, sizeof *ep->role);
	ep->generation = calloc(objects, sizeof *ep->generation);
	c->where = malloc(n * sizeof *c->where);
	c->offset = calloc(n, sizeof *c->offset);
	if (!ep->role || !ep->generation || !c->where || !c->offset)
		return mp_fail(err, MP_E_NOMEM, "out of memory for the index of %s", ep->path);
	for (size_t i = 0; i < n; i++)
		c->where[i] = MP_EP_NONE;
	return MP_OK;
}

bool mp_epcheck_has_pack_sha256(const struct mp_epcheck *c)
{
	json_t *v = json_object_get(c->root, "pack_sha256");

	return v && !json_is_null(v);
}

/* The manifest's pack_sha256, kept when it is a digest (the runtime keeps
 * whatever is there); the stricter checks refuse anything else. */
static void keep_pack_sha256(struct mp_epcheck *c)
{
	const char *s = json_string_value(json_object_get(c->root, "pack_sha256"));

	if (s && mp_is_sha256_hex(s))
		memcpy(c->ep->pack_sha256, s, MP_SHA256_HEX);
}

/* Every phase in moepack-pack(5)'s order. */
static enum mp_err run(struct mp_epcheck *c, const char *pack_path, struct mp_error *err)
{
	enum mp_err rc;

	if ((rc = open_files(c, pack_path, err)) || (rc = check_complete(c, err)) ||
	    (rc = check_header(c, err)) || (rc = mp_epcheck_index(c, err)) ||
	    (rc = check_dimensions(c, err)) || (rc = check_digests(c, err)) ||
	    (rc = allocate(c, err)) || (rc = mp_epcheck_entries(c, err)) ||
	    (rc = mp_epcheck_layout(c, err)))
		return rc;
	keep_pack_sha256(c);
	if (c->o->full && (rc = mp_epcheck_full(c, err)))
		return rc;
	if (!c->o->runtime_only && (rc = mp_epcheck_strict(c, err)))
		return rc;
	if (c->o->full && (rc = mp_epcheck_full_report(c, err)))
		return rc;
	if (c->o->source_path && (rc = mp_epcheck_source(c, err)))
		return rc;
	if ((rc = mp_epcheck_digest_wait(c, err)))
		return rc;
	c->ep->full_checked = c->o->full;
	return MP_OK;
}

enum mp_err mp_ep_open(struct mp_ep **out, const char *pack_path,
		       const struct mp_ep_opts *opts, struct mp_error *err)
{
	static const struct mp_ep_opts no_opts;
	struct mp_epcheck c = {.o = opts ? opts : &no_opts, .outside = MP_EP_NONE,
			       .bad_digest_slot = MP_EP_NONE};
	enum mp_err rc;

	*out = NULL;
	if ((rc = check_opts(c.o, err)))
		return rc;
	if (!(c.ep = calloc(1, sizeof *c.ep)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	c.ep->fd = -1;
	rc = run(&c, pack_path, err);
	mp_epcheck_digest_wait(&c, NULL); /* joined on every path */
	json_decref(c.root);
	free(c.chunk);
	free(c.where);
	free(c.offset);
	if (rc) {
		mp_ep_close(c.ep);
		return rc;
	}
	*out = c.ep;
	return MP_OK;
}

void mp_ep_close(struct mp_ep *ep)
{
	if (!ep)
		return;
	if (ep->fd >= 0)
		close(ep->fd);
	free(ep->role);
	free(ep->generation);
	free(ep->manifest_raw);
	free(ep->manifest_path);
	free(ep->real_path);
	free(ep->path);
	free(ep);
}
