/* sign.c - Ed25519 statements over a sealed pack (OpenSSL EVP). */
#include "config.h"

#include "seal/sign.h"

#include "pack/digest.h"
#include "pack/manifestpath.h"
#include "base/file.h"
#include "base/outfile.h"
#include "base/text.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#define KEY_FILE_MAX (64u << 10) /* a PEM key is well under 1 KiB */

/* The keys of lines 2..8 of a statement of each version: v2 differs in
 * the manifest's digest only (sign.h). */
static const char *const line_keys[2][7] = {
	{"pack_size", "pack_sha256", "index_sha256", "seal_sha256", "manifest_sha256",
	 "anchored", "key_sha256"},
	{"pack_size", "pack_sha256", "index_sha256", "seal_sha256",
	 "manifest_sha256_without_path", "anchored", "key_sha256"},
};
#define STATEMENT_KEYS 7u
#define STATEMENT_HEAD "moepack-statement v"
#define MANIFEST_LINE 5u

/* The key of statement line `line` (1..STATEMENT_KEYS) of version v. */
static const char *line_key(unsigned v, unsigned line)
{
	return line_keys[v == 2][line - 1];
}

size_t mp_statement_format(const struct mp_statement *st, char buf[MP_STATEMENT_MAX])
{
	char h[5][MP_SHA256_HEX];
	unsigned v = st->version == 2 ? 2 : 1;
	int n;

	mp_sha256_hex(st->pack_sha256, h[0]);
	mp_sha256_hex(st->index_sha256, h[1]);
	mp_sha256_hex(st->seal_sha256, h[2]);
	mp_sha256_hex(st->manifest_sha256, h[3]);
	mp_sha256_hex(st->key_sha256, h[4]);
	n = snprintf(buf, MP_STATEMENT_MAX,
		     STATEMENT_HEAD "%u\npack_size %" PRIu64 "\npack_sha256 %s\nindex_sha256 %s\n"
				    "seal_sha256 %s\n%s %s\nanchored %s\nkey_sha256 %s\n",
		     v, st->pack_size, h[0], h[1], h[2], line_key(v, MANIFEST_LINE), h[3],
		     st->anchored ? "yes" : "no", h[4]);
	return n < 0 ? 0 : (size_t)n;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool parse_hex(const char *s, size_t n, unsigned char out[MP_SHA256_LEN])
{
	if (n != 2 * MP_SHA256_LEN)
		return false;
	for (size_t i = 0; i < MP_SHA256_LEN; i++) {
		int a = hexval(s[2 * i]), b = hexval(s[2 * i + 1]);
		if (a < 0 || b < 0)
			return false;
		out[i] = (unsigned char)(a << 4 | b);
	}
	return true;
}

/* "pack_size" is a decimal number without leading zeros. */
static bool parse_decimal(const char *v, size_t n, uint64_t *x)
{
	bool overflow;

	return n >= 1 && !(n > 1 && v[0] == '0') && mp_scan_u64(v, 10, x, &overflow) == v + n &&
	       !overflow;
}

/* The value v[0..n) of statement line `line` (1..STATEMENT_KEYS) into out. */
static enum mp_err parse_value(unsigned line, const char *v, size_t n, struct mp_statement *out,
			       struct mp_error *err)
{
	unsigned char *dst;

	switch (line) {
	case 1:
		if (!parse_decimal(v, n, &out->pack_size))
			return mp_fail(err, MP_E_SIGNATURE,
				       "pack signature is missing or does not verify: "
				       "statement pack_size is not a decimal number");
		return MP_OK;
	case 6:
		if (n == 3 && memcmp(v, "yes", 3) == 0)
			out->anchored = true;
		else if (!(n == 2 && memcmp(v, "no", 2) == 0))
			return mp_fail(err, MP_E_SIGNATURE,
				       "pack signature is missing or does not verify: "
				       "statement anchored is not yes or no");
		return MP_OK;
	}
	dst = line == 2   ? out->pack_sha256
	      : line == 3 ? out->index_sha256
	      : line == 4 ? out->seal_sha256
	      : line == 5 ? out->manifest_sha256
			  : out->key_sha256;
	if (!parse_hex(v, n, dst))
		return mp_fail(err, MP_E_SIGNATURE,
			       "pack signature is missing or does not verify: "
			       "statement %s is not 64 lowercase hex digits",
			       line_key(out->version, line));
	return MP_OK;
}

/* Statement line `line` (0: the head, then "KEY VALUE") is l[0..n). */
static enum mp_err parse_line(unsigned line, const char *l, size_t n, struct mp_statement *out,
			      struct mp_error *err)
{
	const size_t hn = strlen(STATEMENT_HEAD);
	const char *key;
	size_t kn;

	if (line == 0) {
		/* "moepack-statement v1" or "...v2" */
		if (n != hn + 1 || memcmp(l, STATEMENT_HEAD, hn) != 0 || (l[hn] != '1' && l[hn] != '2'))
			return mp_fail(err, MP_E_SIGNATURE,
				       "pack signature is missing or does not verify: statement "
				       "line 1 is not \"" STATEMENT_HEAD "2\" (or v1)");
		out->version = (unsigned)(l[hn] - '0');
		return MP_OK;
	}
	key = line_key(out->version, line);
	kn = strlen(key);
	if (n <= kn || memcmp(l, key, kn) != 0 || l[kn] != ' ')
		return mp_fail(err, MP_E_SIGNATURE,
			       "pack signature is missing or does not verify: statement "
			       "line %u is not \"%s VALUE\"", line + 1, key);
	return parse_value(line, l + kn + 1, n - kn - 1, out, err);
}

enum mp_err mp_statement_parse(const char *buf, size_t len, struct mp_statement *out,
			       struct mp_error *err)
{
	size_t pos = 0;

	memset(out, 0, sizeof *out);
	if (len > MP_STATEMENT_MAX)
		return mp_fail(err, MP_E_SIGNATURE,
			       "pack signature is missing or does not verify: statement is %zu "
			       "bytes, more than %u", len, MP_STATEMENT_MAX);
	for (unsigned line = 0; line <= STATEMENT_KEYS; line++) {
		const char *l = buf + pos, *nl = memchr(l, '\n', len - pos);
		enum mp_err rc;

		if (!nl)
			return mp_fail(err, MP_E_SIGNATURE,
				       "pack signature is missing or does not verify: statement "
				       "line %u is missing or does not end with a newline", line + 1);
		pos += (size_t)(nl - l) + 1;
		if ((rc = parse_line(line, l, (size_t)(nl - l), out, err)))
			return rc;
	}
	if (pos != len)
		return mp_fail(err, MP_E_SIGNATURE,
			       "pack signature is missing or does not verify: statement has "
			       "bytes after its last line");
	return MP_OK;
}

/* Read a small regular file (at most max bytes) into a malloc'd buffer. */
static enum mp_err read_small(const char *path, const char *what, enum mp_err code,
			      size_t max, unsigned char **out, size_t *len, struct mp_error *err)
{
	struct stat st;
	unsigned char *buf;
	size_t got = 0;
	enum mp_err rc;
	int fd, e;

	*out = NULL;
	rc = mp_open_regular(path, what, code, &fd, &st, err);
	if (rc != MP_OK)
		return rc;
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return mp_fail(err, code, "%s %s is %" PRIu64 " bytes, more than %zu", what, path,
			       (uint64_t)st.st_size, max);
	}
	buf = malloc(max + 1);
	if (!buf) {
		close(fd);
		return mp_fail(err, MP_E_NOMEM, "out of memory reading %s", path);
	}
	/* read up to max + 1 bytes: a file that grew is noticed */
	e = mp_pread_all(fd, buf, max + 1, 0, &got);
	if (e > 0)
		rc = mp_fail(err, code, "cannot read %s %s: %s", what, path, strerror(e));
	close(fd);
	if (rc == MP_OK && got > max)
		rc = mp_fail(err, code, "%s %s is more than %zu bytes", what, path, max);
	if (rc != MP_OK) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = got;
	return MP_OK;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

static const char *key_type_name(const EVP_PKEY *k)
{
	switch (EVP_PKEY_get_base_id(k)) {
	case EVP_PKEY_RSA:
	case EVP_PKEY_RSA_PSS:
		return "RSA";
	case EVP_PKEY_EC:
		return "EC";
	case EVP_PKEY_DSA:
		return "DSA";
	case EVP_PKEY_ED448:
		return "Ed448";
	case EVP_PKEY_X25519:
		return "X25519";
	default: {
		const char *n = EVP_PKEY_get0_type_name(k);
		return n ? n : "unknown";
	}
	}
}

/* An Ed25519 key from a PEM file: private (to sign) or public. */
static enum mp_err load_key(const char *path, bool private_key, EVP_PKEY **out,
			    struct mp_error *err)
{
	const char *what = private_key ? "private key" : "public key";
	unsigned char *buf;
	size_t len;
	BIO *bio;
	EVP_PKEY *k;
	enum mp_err rc;

	*out = NULL;
	rc = read_small(path, what, MP_E_KEY, KEY_FILE_MAX, &buf, &len, err);
	if (rc != MP_OK) {
		char why[MP_MSG_MAX];
		snprintf(why, sizeof why, "%s", err ? err->msg : "");
		/* why is a message, escaped once already */
		return rc == MP_E_NOMEM ? rc
					: mp_fail_escaped(err, MP_E_KEY, "unusable key file: %s", why);
	}
	bio = BIO_new_mem_buf(buf, (int)len);
	if (!bio) {
		free(buf);
		return mp_fail(err, MP_E_NOMEM, "out of memory reading %s", path);
	}
	k = private_key ? PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL)
			: PEM_read_bio_PUBKEY(bio, NULL, no_passphrase, NULL);
	BIO_free(bio);
	OPENSSL_cleanse(buf, len);
	free(buf);
	if (!k)
		return mp_fail(err, MP_E_KEY,
			       "unusable key file: %s is not a PEM %s (unencrypted, as "
			       "`openssl %s` writes it)",
			       path, what,
			       private_key ? "genpkey -algorithm ed25519" : "pkey -pubout");
	if (EVP_PKEY_get_base_id(k) != EVP_PKEY_ED25519) {
		rc = mp_fail(err, MP_E_KEY,
			     "unusable key file: %s is an %s key; only Ed25519 keys are accepted",
			     path, key_type_name(k));
		EVP_PKEY_free(k);
		return rc;
	}
	*out = k;
	return MP_OK;
}

static enum mp_err fingerprint(EVP_PKEY *k, const char *path, unsigned char out[MP_SHA256_LEN],
			       struct mp_error *err)
{
	unsigned char *der = NULL;
	int n = i2d_PUBKEY(k, &der);
	if (n <= 0)
		return mp_fail(err, MP_E_KEY, "unusable key file: %s: cannot encode its public key",
			       path);
	mp_sha256_buf(der, (size_t)n, out);
	OPENSSL_free(der);
	return MP_OK;
}

enum mp_err mp_key_fingerprint(const char *path, bool private_key,
			       unsigned char out[MP_SHA256_LEN], struct mp_error *err)
{
	EVP_PKEY *k;
	enum mp_err rc = load_key(path, private_key, &k, err);
	if (rc != MP_OK)
		return rc;
	rc = fingerprint(k, path, out, err);
	EVP_PKEY_free(k);
	return rc;
}

/* The statement of version v this pack and seal call for, but for the
 * key: v1 binds the manifest's bytes, v2 all of them but its path. */
static enum mp_err statement_of(const struct mp_pack *pack, const struct mp_seal *seal,
				unsigned v, struct mp_statement *st, struct mp_error *err)
{
	struct mp_text_span span;
	enum mp_err rc = MP_OK;

	memset(st, 0, sizeof *st);
	st->version = v;
	st->pack_size = pack->file.size;
	memcpy(st->pack_sha256, seal->pack_sha256, MP_SHA256_LEN);
	memcpy(st->index_sha256, pack->index_digest, MP_SHA256_LEN);
	memcpy(st->seal_sha256, seal->seal_digest, MP_SHA256_LEN);
	st->anchored = !mp_seal_unanchored(seal);
	if (v == 1) {
		mp_sha256_buf(pack->file.manifest_raw, pack->file.manifest_len, st->manifest_sha256);
		return MP_OK;
	}
	rc = mp_manifest_key_span(pack->file.manifest_raw, pack->file.manifest_len, pack->file.manifest_path,
				  pack->format->path_key, &span, err);
	if (rc == MP_OK)
		rc = mp_manifest_sha256_without_path(pack->file.manifest_raw, pack->file.manifest_len, &span,
						     st->manifest_sha256, err);
	return rc;
}

enum mp_err mp_sign_pack(const struct mp_pack *pack, const struct mp_seal *seal,
			 const char *key_path, struct mp_error *err)
{
	struct mp_statement st;
	char text[MP_STATEMENT_MAX];
	unsigned char sig[MP_ED25519_SIG_LEN];
	size_t siglen = sizeof sig, len;
	char *st_path = NULL, *sig_path = NULL;
	EVP_MD_CTX *ctx = NULL;
	EVP_PKEY *k;
	enum mp_err rc;

	rc = load_key(key_path, true, &k, err);
	if (rc != MP_OK)
		return rc;
	rc = statement_of(pack, seal, MP_STATEMENT_VERSION, &st, err);
	if (rc == MP_OK)
		rc = fingerprint(k, key_path, st.key_sha256, err);
	if (rc != MP_OK)
		goto out;
	len = mp_statement_format(&st, text);
	ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)text, len) != 1 ||
	    siglen != sizeof sig) {
		rc = mp_fail(err, MP_E_KEY, "unusable key file: %s: signing failed", key_path);
		goto out;
	}
	st_path = mp_path_with_suffix(pack->file.path, MP_STATEMENT_SUFFIX);
	sig_path = mp_path_with_suffix(pack->file.path, MP_SIG_SUFFIX);
	if (!st_path || !sig_path) {
		rc = mp_fail(err, MP_E_NOMEM, "out of memory signing %s", pack->file.path);
		goto out;
	}
	/* the statement first: a signature never lands beside an older one */
	rc = mp_output_write_atomic(st_path, MP_TMP_PRIVATE, MP_E_SEAL_IO, text, len, err);
	if (rc == MP_OK)
		rc = mp_output_write_atomic(sig_path, MP_TMP_PRIVATE, MP_E_SEAL_IO, sig, sizeof sig,
					    err);
out:
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	free(st_path);
	free(sig_path);
	return rc;
}

int mp_trust_list_split(char *list, const char *keys[MP_MAX_TRUSTED_KEYS])
{
	char *save = NULL;
	int n = 0;

	for (char *k = strtok_r(list, MP_TRUST_SEPARATORS, &save); k;
	     k = strtok_r(NULL, MP_TRUST_SEPARATORS, &save)) {
		if (n == MP_MAX_TRUSTED_KEYS)
			return -1;
		keys[n++] = k;
	}
	return n;
}

static bool verify_sig(EVP_PKEY *k, const unsigned char *msg, size_t len,
		       const unsigned char *sig, size_t siglen)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
		  EVP_DigestVerify(ctx, sig, siglen, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

static enum mp_err differs(struct mp_error *err, const char *what)
{
	return mp_fail(err, MP_E_SIGNATURE,
		       "pack signature is missing or does not verify: the signed statement's %s "
		       "is not this pack's",
		       what);
}

/* PACK.statement and PACK.sig, read whole; a failure is the signature's. */
static enum mp_err read_signed(const char *st_path, const char *sig_path, unsigned char **text,
			       size_t *text_len, unsigned char **sig, size_t *sig_len,
			       struct mp_error *err)
{
	enum mp_err rc = read_small(st_path, "statement", MP_E_SIGNATURE, MP_STATEMENT_MAX, text,
				    text_len, err);

	/* room past a signature's size: a longer file is told apart, not cut */
	if (rc == MP_OK)
		rc = read_small(sig_path, "signature", MP_E_SIGNATURE, 4 * MP_ED25519_SIG_LEN, sig,
				sig_len, err);
	if (rc == MP_E_SIGNATURE && err) {
		char why[MP_MSG_MAX];

		snprintf(why, sizeof why, "%s", err->msg);
		mp_fail_escaped(err, MP_E_SIGNATURE,
				"pack signature is missing or does not verify: %s", why);
	}
	if (rc == MP_OK && *sig_len != MP_ED25519_SIG_LEN)
		rc = mp_fail(err, MP_E_SIGNATURE,
			     "pack signature is missing or does not verify: %s is %zu bytes, "
			     "not a %u-byte Ed25519 signature",
			     sig_path, *sig_len, MP_ED25519_SIG_LEN);
	return rc;
}

/* The trusted key whose fingerprint is fp, into *k (and its path); every
 * trusted key file must load. */
static enum mp_err find_trusted_key(const char *const *pub_paths, size_t npub,
				    const unsigned char fp[MP_SHA256_LEN], EVP_PKEY **k,
				    const char **key_path, struct mp_error *err)
{
	for (size_t i = 0; i < npub; i++) {
		unsigned char have[MP_SHA256_LEN];
		EVP_PKEY *t;
		enum mp_err rc = load_key(pub_paths[i], false, &t, err);

		if (rc == MP_OK)
			rc = fingerprint(t, pub_paths[i], have, err);
		if (rc == MP_OK && !*k && memcmp(have, fp, MP_SHA256_LEN) == 0) {
			*k = t;
			*key_path = pub_paths[i];
			continue;
		}
		EVP_PKEY_free(t);
		if (rc != MP_OK)
			return rc;
	}
	if (!*k) {
		char hex[MP_SHA256_HEX];

		mp_sha256_hex(fp, hex);
		return mp_fail(err, MP_E_SIGNATURE,
			       "pack signature is missing or does not verify: signed by key %s, "
			       "which is not one of the %zu trusted keys",
			       hex, npub);
	}
	return MP_OK;
}

/* The signed statement st names this pack and seal. */
static enum mp_err check_statement(const struct mp_statement *st, const struct mp_pack *pack,
				   const struct mp_seal *seal, struct mp_error *err)
{
	struct mp_statement want;
	enum mp_err rc = statement_of(pack, seal, st->version, &want, err);

	if (rc != MP_OK)
		return rc;
	if (st->pack_size != want.pack_size)
		return differs(err, "pack_size");
	if (memcmp(st->pack_sha256, want.pack_sha256, MP_SHA256_LEN) != 0)
		return differs(err, "pack_sha256");
	if (memcmp(st->index_sha256, want.index_sha256, MP_SHA256_LEN) != 0)
		return differs(err, "index_sha256");
	if (memcmp(st->seal_sha256, want.seal_sha256, MP_SHA256_LEN) != 0)
		return differs(err, "seal_sha256 (the seal)");
	if (memcmp(st->manifest_sha256, want.manifest_sha256, MP_SHA256_LEN) != 0)
		return differs(err, st->version == 1
					    ? "manifest_sha256 (the manifest)"
					    : "manifest_sha256_without_path (the manifest, but for "
					      "expert_pack.path)");
	if (st->anchored != want.anchored)
		return differs(err, "anchoring");
	return MP_OK;
}

enum mp_err mp_trust_check(const struct mp_pack *pack, const struct mp_seal *seal,
			   const char *const *pub_paths, size_t npub, struct mp_error *err)
{
	char *st_path = mp_path_with_suffix(pack->file.path, MP_STATEMENT_SUFFIX);
	char *sig_path = mp_path_with_suffix(pack->file.path, MP_SIG_SUFFIX);
	unsigned char *text = NULL, *sig = NULL;
	size_t text_len = 0, sig_len = 0;
	struct mp_statement st;
	EVP_PKEY *k = NULL;
	const char *key_path = NULL;
	enum mp_err rc;

	if (!st_path || !sig_path)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory checking %s", pack->file.path);
	else if (npub == 0 || npub > MP_MAX_TRUSTED_KEYS)
		rc = mp_fail(err, MP_E_USAGE, "invalid usage: %zu trusted keys (1 to %u)", npub,
			     MP_MAX_TRUSTED_KEYS);
	else
		rc = read_signed(st_path, sig_path, &text, &text_len, &sig, &sig_len, err);
	if (rc == MP_OK)
		rc = mp_statement_parse((const char *)text, text_len, &st, err);
	/* the key the statement names must be trusted */
	if (rc == MP_OK)
		rc = find_trusted_key(pub_paths, npub, st.key_sha256, &k, &key_path, err);
	if (rc == MP_OK && !verify_sig(k, text, text_len, sig, sig_len))
		rc = mp_fail(err, MP_E_SIGNATURE,
			     "pack signature is missing or does not verify: %s does not verify "
			     "%s with trusted key %s",
			     sig_path, st_path, key_path);
	if (rc == MP_OK)
		rc = check_statement(&st, pack, seal, err);
	EVP_PKEY_free(k);
	free(text);
	free(sig);
	free(st_path);
	free(sig_path);
	return rc;
}
