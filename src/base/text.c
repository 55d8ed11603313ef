/* text.c - escaping untrusted bytes for terminals, logs and JSON. */
#include "config.h"

#include "base/text.h"

#include <stdio.h>
#include <string.h>

size_t mp_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t need;
	unsigned long cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and code points past Unicode. */
	if ((need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return need;
}

bool mp_text_is_utf8(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t k = mp_utf8_seq_len(u + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

/* C1 controls (U+0080..U+009F) are two bytes, C2 80..C2 9F, in UTF-8. */
static bool is_c1(const unsigned char *s, size_t k)
{
	return k == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

size_t mp_text_escape(char *buf, size_t len, const char *s, size_t n, unsigned flags)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0;

	if (!len)
		return 0;
	for (size_t i = 0; i < n;) {
		char piece[4 * 4 + 1];
		size_t plen, k = mp_utf8_seq_len(u + i, n - i);

		if (k == 1 && (u[i] < 0x20 || u[i] == 0x7f)) {
			plen = (size_t)snprintf(piece, sizeof piece, "\\x%02x", u[i]);
		} else if (k == 1 && u[i] == '\\' && !(flags & MP_TEXT_ESCAPED)) {
			plen = 2;
			memcpy(piece, "\\\\", 2);
		} else if (k == 0) {
			k = 1;
			plen = (size_t)snprintf(piece, sizeof piece, "\\x%02x", u[i]);
		} else if (is_c1(u + i, k)) {
			plen = (size_t)snprintf(piece, sizeof piece, "\\xc2\\x%02x", u[i + 1]);
		} else {
			plen = k;
			memcpy(piece, u + i, k);
		}
		if (o + plen + 4 > len) { /* keep room for "..." and the NUL */
			if (len >= 4) {
				while (o + 4 > len)
					o--;
				memcpy(buf + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(buf + o, piece, plen);
		o += plen;
		i += k;
	}
	buf[o < len ? o : len - 1] = '\0';
	return o < len ? o : len - 1;
}

void mp_text_sanitize(char *s, size_t cap, unsigned flags)
{
	char tmp[MP_TEXT_SANITIZE_MAX];
	size_t n = strnlen(s, cap);

	if (!cap)
		return;
	/* Longer text is cut: what reaches the terminal must be escaped. */
	if (n > sizeof tmp)
		n = sizeof tmp;
	memcpy(tmp, s, n);
	mp_text_escape(s, cap, tmp, n, flags);
}

const char *mp_scan_u64(const char *s, unsigned base, uint64_t *value, bool *overflow)
{
	uint64_t v = 0;

	*overflow = false;
	for (; *s >= '0' && *s <= '9' && (unsigned)(*s - '0') < base; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / base) {
			*overflow = true;
			v = UINT64_MAX;
		} else if (!*overflow) {
			v = v * base + d;
		}
	}
	*value = v;
	return s;
}

/* Edits between a and b (see mp_text_nearest), both at most MP_TEXT_TYPO_MAX bytes. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d[MP_TEXT_TYPO_MAX + 1][MP_TEXT_TYPO_MAX + 1];

	for (size_t i = 0; i <= la; i++)
		for (size_t j = 0; j <= lb; j++) {
			size_t best;

			if (i == 0 || j == 0) {
				d[i][j] = i + j;
				continue;
			}
			best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[la][lb];
}

const char *mp_text_nearest(const char *name, const char *(*name_at)(size_t i, const void *arg),
			    const void *arg, size_t count)
{
	const char *best = NULL, *prefixed = NULL;
	size_t best_d = 3, n = strlen(name), prefixes = 0;

	if (n == 0 || n > MP_TEXT_TYPO_MAX)
		return NULL;
	for (size_t i = 0; i < count; i++) {
		const char *c = name_at(i, arg);
		size_t d = strlen(c) <= MP_TEXT_TYPO_MAX ? edit_distance(name, c) : MP_TEXT_TYPO_MAX;

		if (strncmp(c, name, n) == 0 && n >= 2) {
			prefixed = c;
			prefixes++;
		}
		if (d < best_d && n >= 3 && d <= (n == 3 ? 1u : 2u)) {
			best = c;
			best_d = d;
		}
	}
	return prefixes == 1 ? prefixed : best;
}
