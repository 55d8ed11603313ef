/*
 * sign.h - Ed25519 signatures over a sealed pack (PACK.sig, PACK.statement).
 *
 * What is signed is a small canonical text, the statement, written beside
 * the pack as PACK.statement.  It names the pack by every digest a reader
 * can check: the whole-file SHA-256 the seal records, the index digest, the
 * seal digest, the manifest's digest and the pack size, and it names the
 * signing key by its fingerprint (SHA-256 of the public key's DER
 * SubjectPublicKeyInfo).
 * PACK.sig holds the raw 64-byte Ed25519 signature of the statement's
 * bytes, so that anyone can check it with stock OpenSSL:
 *
 *   openssl pkeyutl -verify -pubin -inkey PUB.pem -rawin \
 *       -in PACK.statement -sigfile PACK.sig
 *
 * Statement (ASCII, one "key value" per line, LF, in this order, nothing
 * else, at most MP_STATEMENT_MAX bytes):
 *
 *   moepack-statement v2
 *   pack_size <decimal>
 *   pack_sha256 <64 lowercase hex>
 *   index_sha256 <64 lowercase hex>
 *   seal_sha256 <64 lowercase hex>
 *   manifest_sha256_without_path <64 lowercase hex>
 *   anchored <yes|no>
 *   key_sha256 <64 lowercase hex>
 *
 * manifest_sha256_without_path is the SHA-256 of the manifest file's bytes
 * with the JSON string that is expert_pack.path's value, quotes included,
 * read as the four bytes "null" (manifestpath.h): every byte but the path
 * is bound, so `moepack relocate`, which rewrites only that string, keeps
 * the signature.  pack_sha256 is the seal's (32 zero bytes, 64 "0", for an
 * unanchored seal, which records none).  A v1 statement (the same lines
 * under "moepack-statement v1", line 6 "manifest_sha256": the SHA-256 of
 * the manifest file's bytes, path included) is still accepted as it is:
 * it no longer verifies once the manifest's path is rewritten.  sign
 * writes v2.
 *
 * Keys are PEM files as `openssl genpkey -algorithm ed25519` writes them
 * (private) and `openssl pkey -pubout` (public); any other key type (RSA,
 * EC, ...) is refused by name.  Nothing here prints; failures come back as
 * MP_E_SIGNATURE (class "invalid": exit 1) or MP_E_KEY / MP_E_SEAL_IO.
 */
#ifndef MOEPACK_SIGN_H
#define MOEPACK_SIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "pack/pack.h"
#include "seal/seal.h"

#define MP_SIG_SUFFIX ".sig"
#define MP_STATEMENT_SUFFIX ".statement"
#define MP_STATEMENT_MAX 1024
#define MP_ED25519_SIG_LEN 64
#define MP_MAX_TRUSTED_KEYS 16
#define MP_STATEMENT_VERSION 2 /* what mp_sign_pack() writes */

/*
 * Sign: build the statement for pack + seal with the private key at
 * key_path, and write PACK.statement and PACK.sig atomically (O_NOFOLLOW,
 * temp file, fsync, rename).
 */
enum mp_err mp_sign_pack(const struct mp_pack *pack, const struct mp_seal *seal,
			 const char *key_path, struct mp_error *err);

/*
 * Check: PACK.statement and PACK.sig exist, the statement parses and
 * matches this pack and seal (every digest, the size and the anchoring),
 * its key fingerprint is one of the trusted public keys, and the signature
 * verifies with that key.  MP_E_SIGNATURE naming what is missing, malformed
 * or different; MP_E_KEY for an unusable trusted key file.
 */
enum mp_err mp_trust_check(const struct mp_pack *pack, const struct mp_seal *seal,
			   const char *const *pub_paths, size_t npub,
			   struct mp_error *err);

/*
 * Split a list of trusted public key files in place into keys[], at ':'
 * and at ',': `moepack verify --trust` and `moepackfs -o trust=` take the
 * same lists (a comma inside an -o option must be escaped, "\\,", or it
 * ends the option).  Empty names are skipped.  Returns the number of
 * keys (0: none named), or -1 when there are more than
 * MP_MAX_TRUSTED_KEYS.  A key file whose name holds ':' or ',' is named
 * through a link.
 */
#define MP_TRUST_SEPARATORS ":,"
int mp_trust_list_split(char *list, const char *keys[MP_MAX_TRUSTED_KEYS]);

/* A statement, parsed.  Digests are raw bytes. */
struct mp_statement {
	unsigned version; /* 1 or 2: what manifest_sha256 covers (above) */
	uint64_t pack_size;
	unsigned char pack_sha256[MP_SHA256_LEN];
	unsigned char index_sha256[MP_SHA256_LEN];
	unsigned char seal_sha256[MP_SHA256_LEN];
	unsigned char manifest_sha256[MP_SHA256_LEN];
	bool anchored;
	unsigned char key_sha256[MP_SHA256_LEN];
};

/*
 * Parse a statement exactly as written above, v1 or v2 (every line, in
 * order, LF endings, lowercase hex, a decimal size without sign or leading
 * zeros, nothing after the last line).  MP_E_SIGNATURE naming the line at fault.
 * The fuzz target's entry point.
 */
enum mp_err mp_statement_parse(const char *buf, size_t len, struct mp_statement *out,
			       struct mp_error *err);

/* The canonical text of st (of st->version) into buf[MP_STATEMENT_MAX];
 * returns its length. */
size_t mp_statement_format(const struct mp_statement *st, char buf[MP_STATEMENT_MAX]);

/*
 * The fingerprint of the Ed25519 public key in the PEM file at path (a
 * public key, or a private one when `private_key`): SHA-256 of its DER
 * SubjectPublicKeyInfo.  MP_E_KEY naming the file and, for another key
 * type, the type.
 */
enum mp_err mp_key_fingerprint(const char *path, bool private_key,
			       unsigned char out[MP_SHA256_LEN], struct mp_error *err);

#endif
