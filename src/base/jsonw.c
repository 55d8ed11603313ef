/* jsonw.c - the one writer of JSON text (jsonw.h). */
#include "config.h"

#include "base/jsonw.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"

void mp_jsonw_init(struct mp_jsonw *w, const struct mp_jsonw_style *style)
{
	memset(w, 0, sizeof *w);
	w->style = *style;
}

/* A new line at the depth's indent; nothing on one line. */
static void newline(struct mp_jsonw *w, unsigned depth)
{
	if (w->style.indent < 0)
		return;
	mp_buf_add(&w->out, "\n", 1);
	for (unsigned i = 0; i < depth * (unsigned)w->style.indent; i++)
		mp_buf_add(&w->out, " ", 1);
}

/* What comes before a value (or a key): the separator and the line. */
static void before(struct mp_jsonw *w)
{
	if (w->keyed) {
		w->keyed = false;
		return;
	}
	if (w->depth == 0)
		return;
	if (w->filled[w->depth - 1])
		mp_buf_puts(&w->out, w->style.item_sep);
	w->filled[w->depth - 1] = true;
	newline(w, w->depth);
}

void mp_jsonw_open(struct mp_jsonw *w, char bracket)
{
	before(w);
	if (w->depth == MP_JSONW_DEPTH_MAX) {
		w->out.failed = true;
		return;
	}
	mp_buf_add(&w->out, &bracket, 1);
	w->filled[w->depth++] = false;
}

void mp_jsonw_close(struct mp_jsonw *w, char bracket)
{
	if (w->depth == 0) {
		w->out.failed = true;
		return;
	}
	if (w->filled[--w->depth])
		newline(w, w->depth);
	mp_buf_add(&w->out, &bracket, 1);
}

void mp_jsonw_literal(struct mp_jsonw *w, const char *text)
{
	before(w);
	mp_buf_puts(&w->out, text);
}

void mp_jsonw_u64(struct mp_jsonw *w, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof b, "%" PRIu64, v);
	mp_jsonw_literal(w, b);
}

/* ---- strings ------------------------------------------------------------ */

/* The code point of the valid k-byte UTF-8 sequence at u. */
static uint32_t code_point(const unsigned char *u, size_t k)
{
	uint32_t c = k == 1 ? u[0] : u[0] & (0x7fu >> k);

	for (size_t i = 1; i < k; i++)
		c = c << 6 | (u[i] & 0x3fu);
	return c;
}

/* Whether the style writes code point c as an escape. */
static bool needs_escape(unsigned escapes, uint32_t c)
{
	if (c < 0x20 || c == '"' || c == '\\')
		return true;
	if (c < 0x7f)
		return false;
	if (escapes & MP_JSONW_ASCII)
		return true;
	return (escapes & MP_JSONW_TERMINAL) && c < 0xa0;
}

static void put_u16(struct mp_buf *b, unsigned v)
{
	char e[8];

	snprintf(e, sizeof e, "\\u%04x", v & 0xffffu);
	mp_buf_puts(b, e);
}

static void put_escape(struct mp_jsonw *w, uint32_t c)
{
	static const char *const short_escape[0x20] = {
		['\b'] = "\\b", ['\t'] = "\\t", ['\n'] = "\\n", ['\f'] = "\\f", ['\r'] = "\\r"};

	if (c == '"' || c == '\\') {
		mp_buf_puts(&w->out, c == '"' ? "\\\"" : "\\\\");
	} else if (c < 0x20 && (w->style.escapes & MP_JSONW_SHORT_ESCAPES) && short_escape[c]) {
		mp_buf_puts(&w->out, short_escape[c]);
	} else if (c < 0x10000) {
		put_u16(&w->out, c);
	} else { /* UTF-16's surrogate pair, as JSON spells what is above U+FFFF */
		c -= 0x10000;
		put_u16(&w->out, 0xd800 | (c >> 10));
		put_u16(&w->out, 0xdc00 | (c & 0x3ff));
	}
}

/* s[0..n) in quotes: runs that need no escape in one write each. */
static void put_quoted(struct mp_jsonw *w, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	mp_buf_add(&w->out, "\"", 1);
	while (i < n) {
		size_t run = i, k = 0;

		while (run < n && (k = mp_utf8_seq_len(u + run, n - run)) > 0 &&
		       !needs_escape(w->style.escapes, code_point(u + run, k)))
			run += k;
		mp_buf_add(&w->out, s + i, run - i);
		if (run == n)
			break;
		if (k == 0) { /* not UTF-8: the byte as Python's surrogateescape */
			put_u16(&w->out, 0xdc00 | u[run]);
			run++;
		} else {
			put_escape(w, code_point(u + run, k));
			run += k;
		}
		i = run;
	}
	mp_buf_add(&w->out, "\"", 1);
}

void mp_jsonw_string(struct mp_jsonw *w, const char *s, size_t n)
{
	before(w);
	put_quoted(w, s, n);
}

void mp_jsonw_key(struct mp_jsonw *w, const char *key)
{
	before(w);
	put_quoted(w, key, strlen(key));
	mp_buf_puts(&w->out, w->style.key_sep);
	w->keyed = true;
}
