/*
 * trust.c - a seal's root of trust before the pack is there (trust.h).
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "fetch/trust.h"
#include "pack/manifestpath.h"
#include "seal/sign.h"

static const char *const SIG = "pack signature is missing or does not verify";

enum mp_err mp_fetch_trust_seal_digest(const struct mp_seal *seal, const char *hex,
				       const char *from_what, struct mp_error *err)
{
	char have[MP_SHA256_HEX], want[MP_SHA256_HEX];
	size_t i;

	for (i = 0; hex[i] && i < 64; i++) {
		if (!isxdigit((unsigned char)hex[i]))
			break;
		want[i] = (char)tolower((unsigned char)hex[i]);
	}
	if (i != 64 || hex[i])
		return mp_fail(err, MP_E_USAGE, "invalid usage: --expect-seal-sha256 is not 64 "
			       "hex digits");
	want[64] = '\0';
	mp_sha256_hex(seal->seal_digest, have);
	if (strcmp(have, want) != 0)
		return mp_fail(err, MP_E_SIGNATURE, "%s: the seal from %s has digest %s, not the "
			       "expected %s", SIG, from_what, have, want);
	return MP_OK;
}

static enum mp_err differs(struct mp_error *err, const char *what)
{
	return mp_fail(err, MP_E_SIGNATURE, "%s: the signed statement's %s is not this pack's",
		       SIG, what);
}

/* The manifest's digest as statement version `version` binds it. */
static enum mp_err manifest_digest(const char *m, size_t len, unsigned version,
				   unsigned char out[MP_SHA256_LEN], struct mp_error *err)
{
	static const char *const keys[] = {"expert_pack.path", "pack_path"};
	struct mp_text_span span;

	if (version == 1) {
		mp_sha256_buf(m, len, out);
		return MP_OK;
	}
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (mp_manifest_key_span(m, len, "manifest", keys[i], &span, NULL) == MP_OK)
			return mp_manifest_sha256_without_path(m, len, &span, out, err);
	return mp_fail(err, MP_E_SIGNATURE, "%s: the manifest names no pack path", SIG);
}

static enum mp_err compare(const struct mp_statement *st, const struct mp_seal *seal,
			   const char *m, size_t mlen, struct mp_error *err)
{
	static const unsigned char zero[MP_SHA256_LEN];
	unsigned char md[MP_SHA256_LEN];
	const unsigned char *pack_sha = mp_seal_unanchored(seal) ? zero : seal->pack_sha256;
	enum mp_err rc;

	if (st->pack_size != seal->pack_size)
		return differs(err, "pack_size");
	if (memcmp(st->pack_sha256, pack_sha, MP_SHA256_LEN) != 0)
		return differs(err, "pack_sha256");
	if (memcmp(st->index_sha256, seal->index_sha256, MP_SHA256_LEN) != 0)
		return differs(err, "index_sha256");
	if (memcmp(st->seal_sha256, seal->seal_digest, MP_SHA256_LEN) != 0)
		return differs(err, "seal_sha256 (the seal)");
	if ((rc = manifest_digest(m, mlen, st->version, md, err)))
		return rc;
	if (memcmp(st->manifest_sha256, md, MP_SHA256_LEN) != 0)
		return differs(err, "manifest digest (the manifest)");
	if (st->anchored == mp_seal_unanchored(seal))
		return differs(err, "anchoring");
	return MP_OK;
}

/* The trusted key file whose fingerprint is fp, or -1. */
static enum mp_err find_key(const char *const *pub, size_t npub,
			    const unsigned char fp[MP_SHA256_LEN], long *which,
			    struct mp_error *err)
{
	*which = -1;
	for (size_t i = 0; i < npub; i++) {
		unsigned char have[MP_SHA256_LEN];
		enum mp_err rc = mp_key_fingerprint(pub[i], false, have, err);

		if (rc)
			return rc;
		if (*which < 0 && memcmp(have, fp, MP_SHA256_LEN) == 0)
			*which = (long)i;
	}
	if (*which < 0) {
		char hex[MP_SHA256_HEX];

		mp_sha256_hex(fp, hex);
		return mp_fail(err, MP_E_SIGNATURE, "%s: signed by key %s, which is not one of "
			       "the %zu trusted keys", SIG, hex, npub);
	}
	return MP_OK;
}

static enum mp_err verify(const char *key_path, const char *msg, size_t len,
			  const unsigned char *sig, size_t sig_len, struct mp_error *err)
{
	FILE *f = fopen(key_path, "re");
	EVP_PKEY *k = f ? PEM_read_PUBKEY(f, NULL, NULL, NULL) : NULL;
	EVP_MD_CTX *ctx = k ? EVP_MD_CTX_new() : NULL;
	bool ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
		  EVP_DigestVerify(ctx, sig, sig_len, (const unsigned char *)msg, len) == 1;

	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	if (f)
		fclose(f);
	if (!ok)
		return mp_fail(err, MP_E_SIGNATURE, "%s: the signature does not verify with "
			       "trusted key %s", SIG, key_path);
	return MP_OK;
}

enum mp_err mp_fetch_trust_statement(const struct mp_seal *seal, const char *manifest,
				     size_t manifest_len, const char *statement, size_t st_len,
				     const unsigned char *sig, size_t sig_len,
				     const char *const *pub_paths, size_t npub,
				     struct mp_error *err)
{
	struct mp_statement st;
	long which;
	enum mp_err rc;

	if (!statement || !sig)
		return mp_fail(err, MP_E_SIGNATURE, "%s: the mirror has no %s beside the pack",
			       SIG, !statement ? "PACK.statement" : "PACK.sig");
	if (sig_len != MP_ED25519_SIG_LEN)
		return mp_fail(err, MP_E_SIGNATURE, "%s: PACK.sig is %zu bytes, not a %u-byte "
			       "Ed25519 signature", SIG, sig_len, MP_ED25519_SIG_LEN);
	if ((rc = mp_statement_parse(statement, st_len, &st, err)) ||
	    (rc = compare(&st, seal, manifest, manifest_len, err)) ||
	    (rc = find_key(pub_paths, npub, st.key_sha256, &which, err)))
		return rc;
	return verify(pub_paths[which], statement, st_len, sig, sig_len, err);
}
