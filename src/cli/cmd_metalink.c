/*
 * cmd_metalink.c - `moepack metalink PACK URL...`: an RFC 5854 Metalink 4
 * file for a verified pack, so that stock aria2c (or any Metalink client)
 * checks each piece it downloads.
 *
 * A Metalink has one piece length over the whole file; the seal's chunks
 * are not uniform (the head, each role and each gap are cut from their
 * own start, seal/seal.h), so its digests cannot be the pieces.  Instead
 * the pack is first checked against its seal, as `moepack verify --seal`
 * does (and against --trust's keys when given), and only then hashed
 * again in fixed pieces of MP_METALINK_PIECE bytes, SHA-256 each, with
 * the whole file's SHA-256 beside them.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/outfile.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "pack/digest.h"
#include "pack/pack.h"
#include "seal/seal.h"
#include "seal/sign.h"

#define MP_METALINK_PIECE (1u << 20)

struct metalink_args {
	const char *out, *trust;
	uint64_t jobs;
	bool quiet;
};

enum { OPT_TRUST = CLI_LONG_ONLY, OPT_JOBS };

#define A struct metalink_args
const struct cli_option cli_metalink_options[] = {
	CLI_OPT_TEXT("out", 'o', "FILE", "the Metalink to write (default: PACK.meta4)", A, out),
	CLI_OPT_TEXT("trust", OPT_TRUST, "PUB[:PUB...]", "also require a signature by one of "
		     "these keys\nover the seal and manifest", A, trust),
	CLI_OPT_U64("jobs", OPT_JOBS, "N", "check the seal on N threads (default: one per CPU)",
		    A, jobs, 0, 1, 64),
	CLI_OPT_QUIET("print nothing but errors", A, quiet),
	{NULL},
};
#undef A

struct buf {
	char *p;
	size_t len, cap;
	bool nomem;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0 || b->nomem)
			return;
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p) {
			b->nomem = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

/* text with XML's five special characters escaped */
static void put_xml(struct buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': put(b, "&amp;"); break;
		case '<': put(b, "&lt;"); break;
		case '>': put(b, "&gt;"); break;
		case '"': put(b, "&quot;"); break;
		case '\'': put(b, "&apos;"); break;
		default: put(b, "%c", *s);
		}
	}
}

/* Every piece's SHA-256 (hex, into b) and the whole file's (into whole). */
static enum mp_err hash_pieces(int fd, const char *path, uint64_t size, struct buf *b,
			       char whole[MP_SHA256_HEX], struct mp_error *err)
{
	unsigned char *data = malloc(MP_METALINK_PIECE), d[MP_SHA256_LEN];
	struct mp_sha256 *all = mp_sha256_new();
	char hex[MP_SHA256_HEX];
	enum mp_err rc = MP_OK;

	if (!data || !all)
		rc = mp_fail(err, MP_E_NOMEM, "out of memory hashing %s", path);
	for (uint64_t off = 0; rc == MP_OK && off < size; off += MP_METALINK_PIECE) {
		size_t want = size - off < MP_METALINK_PIECE ? (size_t)(size - off)
							      : MP_METALINK_PIECE;
		size_t got = 0;

		while (got < want) {
			ssize_t n = pread(fd, data + got, want - got, (off_t)(off + got));

			if (n <= 0) {
				rc = mp_fail(err, MP_E_PACK_IO, "cannot read %s at byte %" PRIu64
					     ": %s", path, off + got, n ? strerror(errno)
									: "end of file");
				break;
			}
			got += (size_t)n;
		}
		if (rc)
			break;
		mp_sha256_buf(data, want, d);
		mp_sha256_update(all, data, want);
		mp_sha256_hex(d, hex);
		put(b, "      <hash>%s</hash>\n", hex);
	}
	if (rc == MP_OK) {
		mp_sha256_final(all, d);
		mp_sha256_hex(d, whole);
	}
	mp_sha256_free(all);
	free(data);
	return rc;
}

static enum mp_err metalink(const struct metalink_args *a, const char *pack_path,
			    char **urls, int nurls, const char *out, struct mp_error *err)
{
	struct mp_open_opts oo = {0};
	struct mp_pack *pack = NULL;
	struct mp_seal *seal = NULL;
	struct mp_seal_layout l;
	const char *keys[MP_MAX_TRUSTED_KEYS];
	char *trust = NULL, whole[MP_SHA256_HEX], shex[MP_SHA256_HEX];
	struct buf pieces = {0}, doc = {0};
	const char *base = strrchr(pack_path, '/');
	enum mp_err rc = mp_pack_open(&pack, pack_path, &oo, err);
	bool have_layout = false;
	int nkeys = 0;

	if (rc == MP_OK && (rc = cli_load_seal(pack, &seal, &l, err)) == MP_OK)
		have_layout = true;
	if (rc == MP_OK && a->trust) {
		if (!(trust = strdup(a->trust)))
			rc = mp_fail(err, MP_E_NOMEM, "out of memory");
		else if ((nkeys = mp_trust_list_split(trust, keys)) <= 0)
			rc = mp_fail(err, MP_E_USAGE, "invalid usage: --trust names %s",
				     nkeys ? "too many keys" : "no key");
		else
			rc = mp_trust_check(pack, seal, keys, (size_t)nkeys, err);
	}
	/* the seal first: nothing is hashed into a Metalink that failed it */
	if (rc == MP_OK)
		rc = mp_seal_check_file(pack->file.fd, pack->file.path, seal, &l, (unsigned)a->jobs, NULL,
					NULL, NULL, NULL, err);
	if (rc == MP_OK)
		rc = hash_pieces(pack->file.fd, pack->file.path, pack->file.size, &pieces, whole, err);
	if (rc == MP_OK) {
		mp_sha256_hex(seal->seal_digest, shex);
		put(&doc, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			  "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n"
			  "  <generator>moepack metalink " PACKAGE_VERSION "</generator>\n"
			  "  <!-- pieces of %u bytes, hashed after every seal chunk passed;\n"
			  "       seal sha256 %s -->\n  <file name=\"", MP_METALINK_PIECE, shex);
		put_xml(&doc, base ? base + 1 : pack_path);
		put(&doc, "\">\n    <size>%" PRIu64 "</size>\n"
			  "    <hash type=\"sha-256\">%s</hash>\n"
			  "    <pieces length=\"%u\" type=\"sha-256\">\n%s    </pieces>\n",
		    pack->file.size, whole, MP_METALINK_PIECE, pieces.p ? pieces.p : "");
		for (int i = 0; i < nurls; i++) {
			put(&doc, "    <url priority=\"%d\">", i + 1);
			put_xml(&doc, urls[i]);
			put(&doc, "</url>\n");
		}
		put(&doc, "  </file>\n</metalink>\n");
		rc = doc.nomem || pieces.nomem
			     ? mp_fail(err, MP_E_NOMEM, "out of memory")
			     : mp_output_write_atomic(out, MP_TMP_PRIVATE, MP_E_PACK_IO, doc.p,
						      doc.len, err);
	}
	free(doc.p);
	free(pieces.p);
	free(trust);
	if (have_layout)
		mp_seal_layout_free(&l);
	mp_seal_free(seal);
	mp_pack_close(pack);
	return rc;
}

int cli_metalink_run(int argc, char **argv)
{
	struct metalink_args a = {0};
	struct cli_operands ops;
	struct mp_error err = {0};
	enum cli_parse p = cli_parse(&cli_metalink_command, argc, argv, &a, &ops);
	char *out = NULL;
	enum mp_err rc;

	if (p != CLI_RUN)
		return cli_parse_status(p, argv[0]);
	if (!a.out && !(out = mp_path_with_suffix(ops.v[0], ".meta4")))
		return CLI_EXIT_IO;
	rc = metalink(&a, ops.v[0], ops.v + 1, ops.n - 1, a.out ? a.out : out, &err);
	if (rc == MP_OK && !a.quiet) {
		char t[CLI_TEXT_MAX];

		printf("%s: Metalink written, pieces of %u bytes, every seal chunk checked first\n",
		       cli_text(t, a.out ? a.out : out), MP_METALINK_PIECE);
	}
	free(out);
	return cli_finish(argv[0], rc ? cli_report(ops.v[0], &err) : CLI_EXIT_OK);
}
