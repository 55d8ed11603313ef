/*
 * open.c - mp_ep_open(): the options, the files (the reference runtime's
 * steps 1 and 2), then every phase of check.h in its order, from here
 * alone: no phase calls another, and none calls back (check.h).
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
static enum mp_err manifest_copy(const struct mp_ep_opts *o, struct mp_pack_file *f,
				 struct mp_error *err)
{
	if (o->manifest_text_len > MP_MANIFEST_MAX)
		return mp_fail(err, MP_E_MANIFEST_IO, "manifest %s is larger than %u bytes",
			       f->manifest_path, MP_MANIFEST_MAX);
	f->manifest_raw = malloc(o->manifest_text_len + 1);
	if (!f->manifest_raw)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	memcpy(f->manifest_raw, o->manifest_text, o->manifest_text_len);
	f->manifest_raw[o->manifest_text_len] = '\0';
	f->manifest_len = o->manifest_text_len;
	return MP_OK;
}

static enum mp_err open_files(struct mp_epcheck *c, const char *pack_path,
			      struct mp_error *err)
{
	struct mp_pack_file *f = &c->ep->file;
	enum mp_err rc;

	if ((rc = mp_pack_file_open(f, pack_path, c->o->opened, c->o->opened_arg, err)))
		return rc;
	/* the reference looks for the manifest beside the resolved pack */
	f->manifest_path = c->o->manifest_path ? strdup(c->o->manifest_path)
					       : mp_path_with_suffix(f->real_path, ".manifest.json");
	if (!f->manifest_path)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	if (c->o->manifest_text)
		rc = manifest_copy(c->o, f, err);
	else
		rc = mp_manifest_read(f->manifest_path, &f->manifest_raw, &f->manifest_len, err);
	if (rc)
		return rc;
	return mp_manifest_parse_ex(f->manifest_raw, f->manifest_len, f->manifest_path,
				    &c->root, &c->surrogates, err);
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

	if ((rc = open_files(c, pack_path, err)) || (rc = mp_epcheck_header(c, err)) ||
	    (rc = mp_epcheck_index(c, err)) || (rc = mp_epcheck_expect(c, err)) ||
	    (rc = mp_epcheck_entries(c, err)) || (rc = mp_epcheck_layout(c, err)))
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
	mp_pack_file_init(&c.ep->file);
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
	mp_pack_file_close(&ep->file);
	free(ep->role);
	free(ep->generation);
	free(ep);
}
