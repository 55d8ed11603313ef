/*
 * header.c - the reference runtime's steps 3 and 4 (the manifest's
 * "complete", the header read and checked), and steps 6 and 7 (the
 * header's dimensions and digests against the caller's), which follow
 * step 5 (index.c) in the runtime's order.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include "base/file.h"
#include "pack/expertpack/check.h"
#include "pack/mjson.h"
#include "pack/role.h"

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

	if (ep->file.size < MP_EP_HEADER_SIZE)
		return mp_fail(err, MP_E_EP_HEADER_TRUNCATED,
			       "expert-pack header is truncated: %s has %llu bytes, the header "
			       "takes %d",
			       ep->file.path, (unsigned long long)ep->file.size, MP_EP_HEADER_SIZE);
	if ((rc = mp_pread_full(ep->file.fd, raw, sizeof raw, 0, "pack", ep->file.path, MP_E_PACK_IO,
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
	c->entries_in_file = (ep->file.size - MP_EP_HEADER_SIZE) / MP_EP_ENTRY_SIZE;
	if (c->entries_in_file > ep->index_count)
		c->entries_in_file = ep->index_count;
	return MP_OK;
}

enum mp_err mp_epcheck_header(struct mp_epcheck *c, struct mp_error *err)
{
	enum mp_err rc = check_complete(c, err);

	return rc ? rc : check_header(c, err);
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

enum mp_err mp_epcheck_expect(const struct mp_epcheck *c, struct mp_error *err)
{
	enum mp_err rc = check_dimensions(c, err);

	return rc ? rc : check_digests(c, err);
}
