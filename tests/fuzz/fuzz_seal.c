/*
 * fuzz_seal.c - libFuzzer target: the seal file parser and the signed
 * statement parser on arbitrary bytes.
 *
 * The first byte picks the parser (even: seal, odd: statement); the rest
 * is the input.  A seal the parser accepts must be self-consistent: its
 * size is the one chunk_count gives, its digest is the SHA-256 of the
 * bytes before it, and encoding it again gives the same bytes.  A
 * statement the parser accepts must format back to exactly the same text.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "seal/seal.h"
#include "seal/sign.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static void fuzz_seal(const uint8_t *data, size_t size)
{
	struct mp_seal *s = NULL;
	struct mp_error err;
	enum mp_err rc = mp_seal_parse(&s, data, size, "input", &err);
	unsigned char *again;
	size_t len = 0;

	mp_fuzz_report(rc, &err);
	if (rc != MP_OK) {
		if (s)
			mp_fuzz_bug("a refused seal came back non-NULL");
		return;
	}
	if (size != 128 + 32 * s->chunk_count + 32)
		mp_fuzz_bug("accepted seal of %zu bytes with %llu chunks", size,
			    (unsigned long long)s->chunk_count);
	again = mp_seal_encode(s, &len);
	if (!again || len != size || memcmp(again, data, size) != 0)
		mp_fuzz_bug("an accepted seal does not encode back to its bytes");
	free(again);
	mp_seal_free(s);
}

static void fuzz_statement(const uint8_t *data, size_t size)
{
	struct mp_statement st;
	struct mp_error err;
	char text[MP_STATEMENT_MAX];
	enum mp_err rc = mp_statement_parse((const char *)data, size, &st, &err);
	size_t n;

	mp_fuzz_report(rc, &err);
	if (rc != MP_OK)
		return;
	n = mp_statement_format(&st, text);
	if (n != size || memcmp(text, data, size) != 0)
		mp_fuzz_bug("an accepted statement does not format back to its bytes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		fuzz_statement(data + 1, size - 1);
	else
		fuzz_seal(data + 1, size - 1);
	return 0;
}
