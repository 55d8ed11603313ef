/*
 * check.c - what the phases of mp_ep_open() share (check.h): the warnings,
 * numbers and texts of their messages, the manifest's pack_sha256 asked
 * after, and the streamed read of the index.  It calls no phase, so that
 * every phase can call it and none calls another (open.c calls them).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/text.h"
#include "pack/expertpack/check.h"

void mp_epcheck_warn(struct mp_epcheck *c, const char *fmt, ...)
{
	va_list ap;

	if (c->ep->file.nwarnings >= MP_MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	vsnprintf(c->ep->file.warnings[c->ep->file.nwarnings], MP_MSG_MAX, fmt, ap);
	va_end(ap);
	mp_text_sanitize(c->ep->file.warnings[c->ep->file.nwarnings++], MP_MSG_MAX, 0);
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

bool mp_epcheck_has_pack_sha256(const struct mp_epcheck *c)
{
	json_t *v = json_object_get(c->root, "pack_sha256");

	return v && !json_is_null(v);
}


/* Entries read per pread: about 1.3 MB. */
#define ENTRIES_PER_CHUNK 4096

enum mp_err mp_epcheck_stream(struct mp_epcheck *c, uint64_t first, uint64_t count,
			      mp_epcheck_entry_fn fn, void *arg, struct mp_error *err)
{
	enum mp_err rc = MP_OK;
	unsigned char *buf;

	/* one buffer for every pass, freed with the rest of c */
	if (!c->chunk && !(c->chunk = malloc((size_t)ENTRIES_PER_CHUNK * MP_EP_ENTRY_SIZE)))
		return mp_fail(err, MP_E_NOMEM, "out of memory reading the index of %s",
			       c->ep->file.path);
	buf = c->chunk;
	for (uint64_t i = 0; i < count && !rc; i += ENTRIES_PER_CHUNK) {
		uint64_t n = count - i < ENTRIES_PER_CHUNK ? count - i : ENTRIES_PER_CHUNK;

		rc = mp_pread_full(c->ep->file.fd, buf, (size_t)n * MP_EP_ENTRY_SIZE,
				   MP_EP_HEADER_SIZE + (first + i) * MP_EP_ENTRY_SIZE, "pack",
				   c->ep->file.path, MP_E_PACK_IO, err);
		for (uint64_t k = 0; k < n && !rc; k++)
			rc = fn(c, first + i + k, buf + k * MP_EP_ENTRY_SIZE, arg, err);
	}
	return rc;
}
