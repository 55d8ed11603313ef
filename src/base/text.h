/*
 * text.h - untrusted bytes made safe for a terminal, a log line or JSON.
 *
 * Names, keys and paths come from files an attacker may have written.  Before
 * any of them reaches a terminal they go through mp_text_escape(): valid UTF-8
 * that prints passes unchanged but for the backslash, which becomes \\;
 * control characters (C0, DEL, C1), and every byte that is not part of a
 * valid UTF-8 sequence become \xNN.  The result is
 * one line of valid UTF-8, so it can also go into a JSON string as it is.
 */
#ifndef MOEPACK_TEXT_H
#define MOEPACK_TEXT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/*
 * Backslashes are always escaped (\\), so that the escaped text maps back
 * to one name: a file literally named a\x1b.gguf prints as a\\x1b.gguf, a
 * file whose name holds an ESC as a\x1b.gguf.  The one flag,
 * MP_TEXT_ESCAPED, marks text escaped before (a message), whose
 * backslashes are escapes already and stay as they are.
 */
#define MP_TEXT_ESCAPED 2u

/*
 * Write the escaped form of s[0..n) into buf (always NUL-terminated when
 * len > 0).  Output that does not fit is cut at a character boundary and ends
 * in "...".  Returns the length written.
 */
size_t mp_text_escape(char *buf, size_t len, const char *s, size_t n, unsigned flags);

/*
 * Escape the string in s in place, within a buffer of cap bytes, as
 * mp_text_escape() with flags (MP_TEXT_ESCAPED: text escaped before stays
 * as it was).  Only the first MP_TEXT_SANITIZE_MAX bytes are kept: longer
 * text is cut, never left unescaped.
 */
#define MP_TEXT_SANITIZE_MAX 4096
void mp_text_sanitize(char *s, size_t cap, unsigned flags);

/* True when s[0..n) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
bool mp_text_is_utf8(const char *s, size_t n);

/*
 * Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 when the bytes
 * there do not start one.
 */
size_t mp_utf8_seq_len(const unsigned char *s, size_t n);

/*
 * The run of digits (0-9 below base: 8 or 10) at the start of s, as a
 * number into *value, saturating at UINT64_MAX with *overflow set; returns
 * where the digits end.  No sign, no spaces, no prefix: the one number
 * scanner of moepack's operands and moepackfs's -o options.
 */
const char *mp_scan_u64(const char *s, unsigned base, uint64_t *value, bool *overflow);

/*
 * Of count names (name_at(i, arg) the i-th), the one that `name` is a
 * likely typo of: the only one it begins (at least 2 bytes), else the
 * nearest within two edits (insert, delete, replace, or swap two
 * neighbours: "sael" is one from "seal"; one edit for three bytes, none
 * for fewer).  NULL when none, or either is longer than MP_TEXT_TYPO_MAX:
 * the "did you mean" of an unknown command or option.
 */
#define MP_TEXT_TYPO_MAX 32
const char *mp_text_nearest(const char *name, const char *(*name_at)(size_t i, const void *arg),
			    const void *arg, size_t count);

#endif
