/* jsonw.c - JSON text written as it goes (jsonw.h). */
#include "config.h"

#include "cli/jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "cli/cli.h"

void jw_init(struct jw *w)
{
	memset(w, 0, sizeof *w);
}

static void put(struct jw *w, const char *s, size_t n)
{
	if (w->failed)
		return;
	if (w->len + n + 1 > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		char *b;

		while (cap < w->len + n + 1)
			cap *= 2;
		if (!(b = realloc(w->buf, cap))) {
			w->failed = true;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void putf(struct jw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct jw *w, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	put(w, tmp, n > 0 && (size_t)n < sizeof tmp ? (size_t)n : 0);
}

/* A new line at the depth's indent. */
static void newline(struct jw *w, unsigned depth)
{
	put(w, "\n", 1);
	for (unsigned i = 0; i < depth; i++)
		put(w, "  ", 2);
}

/* What comes before a value (or a key): the comma and the line. */
static void before(struct jw *w)
{
	if (w->keyed) {
		w->keyed = false;
		return;
	}
	if (w->depth == 0)
		return;
	if (w->filled[w->depth - 1])
		put(w, ",", 1);
	w->filled[w->depth - 1] = true;
	newline(w, w->depth);
}

void jw_key(struct jw *w, const char *key)
{
	before(w);
	put(w, "\"", 1);
	put(w, key, strlen(key));
	put(w, "\": ", 3);
	w->keyed = true;
}

void jw_open(struct jw *w, char bracket)
{
	before(w);
	if (w->depth == JW_DEPTH_MAX) {
		w->failed = true;
		return;
	}
	put(w, &bracket, 1);
	w->filled[w->depth++] = false;
}

void jw_close(struct jw *w, char bracket)
{
	if (w->depth == 0) {
		w->failed = true;
		return;
	}
	if (w->filled[--w->depth])
		newline(w, w->depth);
	put(w, &bracket, 1);
}

void jw_u64(struct jw *w, uint64_t v)
{
	before(w);
	putf(w, "%" PRIu64, v);
}

void jw_real(struct jw *w, double v)
{
	before(w);
	if (isfinite(v))
		putf(w, "%.15g", v);
	else
		put(w, "null", 4);
}

void jw_null(struct jw *w)
{
	before(w);
	put(w, "null", 4);
}

/* One character of valid UTF-8 text (k bytes at u) into the string. */
static void put_char(struct jw *w, const unsigned char *u, size_t k)
{
	/* C0 and DEL as one byte; C1 (U+0080..U+009F) as 0xc2 0x80..0x9f */
	unsigned cp = k == 1 ? u[0] : k == 2 && u[0] == 0xc2 && u[1] < 0xa0 ? u[1] : 0xa0;

	if (cp == '"' || cp == '\\') {
		put(w, "\\", 1);
		put(w, (const char *)u, 1);
	} else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
		putf(w, "\\u%04x", cp);
	} else {
		put(w, (const char *)u, k);
	}
}

void jw_text(struct jw *w, const char *s)
{
	char *shown = NULL;
	size_t n;

	if (!s) {
		jw_null(w);
		return;
	}
	before(w);
	n = strlen(s);
	if (!mp_text_is_utf8(s, n)) {
		/* JSON cannot carry it as it is: as the terminal sees it */
		if (!(shown = malloc(CLI_TEXT_MAX))) {
			w->failed = true;
			return;
		}
		s = cli_text(shown, s);
		n = strlen(s);
	}
	put(w, "\"", 1);
	for (size_t i = 0; i < n;) {
		size_t k = mp_utf8_seq_len((const unsigned char *)s + i, n - i);

		put_char(w, (const unsigned char *)s + i, k ? k : 1);
		i += k ? k : 1;
	}
	put(w, "\"", 1);
	free(shown);
}

int jw_print(struct jw *w)
{
	int rc = -1;

	put(w, "\n", 1);
	if (!w->failed && w->depth == 0)
		rc = cli_write_stdout(w->buf, w->len);
	free(w->buf);
	jw_init(w);
	return rc;
}
