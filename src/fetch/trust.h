/*
 * trust.h - the root of trust of a fetch, checked before a byte of the
 * pack is asked for.
 *
 * The seal holds the digest of every chunk, so once the seal is trusted
 * every chunk can be checked as it arrives, from any mirror.  A seal is
 * trusted either because its digest is the one the user expects
 * (--expect-seal-sha256) or because a statement (seal/sign.h) that names
 * this seal and this manifest is signed by one of the user's keys
 * (--trust).  Here the statement is compared with what the pack will be:
 * the seal's pack size, whole-file and index digests, anchoring and seal
 * digest, and the manifest's bytes (v2: but for the pack's path) - the
 * pack file is not there yet; the fetch runs seal/sign.h's own
 * mp_trust_check() again on the finished pack.
 */
#ifndef MOEPACK_FETCH_TRUST_H
#define MOEPACK_FETCH_TRUST_H

#include <stdbool.h>
#include <stddef.h>

#include "base/errors.h"
#include "seal/seal.h"

/*
 * MP_OK when hex (64 hex digits, either case) is the seal's digest;
 * MP_E_USAGE when hex is not 64 hex digits; MP_E_SIGNATURE "... the seal's
 * digest is X, not the expected Y" (from_what names the mirror).
 */
enum mp_err mp_fetch_trust_seal_digest(const struct mp_seal *seal, const char *hex,
				       const char *from_what, struct mp_error *err);

/*
 * MP_OK when statement[0..st_len) parses, names this seal and manifest,
 * its key is one of the npub public key files and sig[0..sig_len) is its
 * Ed25519 signature.  MP_E_SIGNATURE naming what differs; MP_E_KEY for an
 * unusable key file.
 */
enum mp_err mp_fetch_trust_statement(const struct mp_seal *seal, const char *manifest,
				     size_t manifest_len, const char *statement, size_t st_len,
				     const unsigned char *sig, size_t sig_len,
				     const char *const *pub_paths, size_t npub,
				     struct mp_error *err);

#endif
