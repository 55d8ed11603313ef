/*
 * source.h - one mirror of a pack, as `moepack fetch` is given it.
 *
 * A source is a URL naming the pack file: http://, https://, file:// or
 * s3://BUCKET/KEY.  The files that come with the pack (PACK.manifest.json,
 * PACK.seal, PACK.statement, PACK.sig) are fetched from beside it: the
 * same URL with the suffix appended to its path.
 *
 * An s3:// source is turned into an HTTP(S) URL on its endpoint: the
 * endpoint given (fetch's --s3-endpoint, the mount's -o s3_endpoint=, else
 * AWS_ENDPOINT_URL) or, without one, AWS's own
 * https://s3.REGION.amazonaws.com.  Addressing is path-style
 * (ENDPOINT/BUCKET/KEY) unless virtual-hosted is asked for
 * (BUCKET.HOST/KEY); requests are signed by libcurl (CURLOPT_AWS_SIGV4).
 * Nothing here does I/O; only the defaults at the end read the
 * environment, and the parse is handed what they read.
 */
#ifndef MOEPACK_FETCH_SOURCE_H
#define MOEPACK_FETCH_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/errors.h"

enum mp_fetch_kind { MP_FETCH_HTTP, MP_FETCH_HTTPS, MP_FETCH_FILE, MP_FETCH_S3 };

/* How s3:// sources are reached: what the caller read from its options
 * and environment.  Strings are borrowed. */
struct mp_fetch_s3_config {
	const char *endpoint;     /* "https://host:port", NULL: AWS's */
	const char *region;       /* NULL: "us-east-1" */
	bool virtual_hosted;      /* BUCKET.HOST/KEY instead of HOST/BUCKET/KEY */
};

#define MP_FETCH_URL_MAX 4096

struct mp_fetch_source {
	enum mp_fetch_kind kind;
	char given[MP_FETCH_URL_MAX];  /* as the user wrote it, for messages */
	char url[MP_FETCH_URL_MAX];    /* what libcurl is given for the pack */
	char bucket[256];              /* s3 only */
	char region[64];               /* s3 only: what the signature names */
	bool tls;                      /* https (or s3 on an https endpoint) */
};

/*
 * Parse text into *out.  MP_E_USAGE naming the source when its scheme is
 * none of the four, its host or path is empty, an s3:// source has no key
 * or a bucket name S3 would refuse, a file:// URL names a host other than
 * localhost, or the URL is longer than MP_FETCH_URL_MAX.  s3 may be NULL
 * when no source is s3://.
 */
enum mp_err mp_fetch_source_parse(const char *text, const struct mp_fetch_s3_config *s3,
				  struct mp_fetch_source *out, struct mp_error *err);

/*
 * Whether ENDPOINT is one s3:// sources can be reached on (--s3-endpoint,
 * -o s3_endpoint=, AWS_ENDPOINT_URL): http:// or https://, a host, then
 * any port and path prefix.  NULL when it is (NULL and "" are: AWS's own
 * endpoint for the region), else why not, a phrase starting "the S3
 * endpoint", as mp_fetch_source_parse refuses an s3:// source on it.
 */
const char *mp_fetch_s3_endpoint_problem(const char *endpoint);

/* The URL of the file beside the pack with this suffix (".seal"), into
 * buf; false when it does not fit. */
bool mp_fetch_source_beside(const struct mp_fetch_source *s, const char *suffix, char *buf,
			    size_t size);

/* The file name of a source's URL (its last path component, without a
 * query), malloc'd; NULL when it has none (or out of memory). */
char *mp_fetch_source_name(const char *src);

/* The CA file https trusts when none is given, as curl(1) picks it:
 * CURL_CA_BUNDLE, else SSL_CERT_FILE, else NULL (libcurl's built-in
 * bundle).  libcurl reads none of these variables by itself. */
const char *mp_fetch_ca_file_default(void);

/*
 * How s3:// sources are reached, for both programs: the endpoint given
 * (fetch's --s3-endpoint, the mount's -o s3_endpoint=; NULL when none was)
 * else AWS_ENDPOINT_URL, as the AWS tools read it; the region from
 * AWS_REGION, else AWS_DEFAULT_REGION; virtual-hosted as asked.
 */
struct mp_fetch_s3_config mp_fetch_s3_config_from_env(const char *endpoint,
						      bool virtual_hosted);

#endif
