/*
 * source.c - parsing a fetch source (source.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fetch/source.h"

static enum mp_err bad(struct mp_error *err, const char *text, const char *why)
{
	return mp_fail(err, MP_E_USAGE, "invalid usage: source %s: %s", text, why);
}

/* A bucket name S3 takes: 3..63 of [a-z0-9.-], starting and ending with a
 * letter or digit (and so usable in a host name, for virtual hosting). */
static bool bucket_ok(const char *b, size_t n)
{
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = b[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && c != '.' && c != '-')
			return false;
		if (!alnum && (i == 0 || i == n - 1))
			return false;
	}
	return true;
}

static bool fits(char *buf, size_t size, int n)
{
	return n >= 0 && (size_t)n < size;
}

/* The length of ENDPOINT's host[:port][/prefix], without trailing '/'s;
 * sep is its "://". */
static size_t endpoint_rest(const char *sep)
{
	size_t len = strlen(sep + 3);

	while (len && sep[3 + len - 1] == '/')
		len--;
	return len;
}

const char *mp_fetch_s3_endpoint_problem(const char *ep)
{
	const char *sep;
	size_t len;

	if (!ep || !*ep)
		return NULL;
	sep = strstr(ep, "://");
	if (!sep || sep == ep || !sep[3])
		return "the S3 endpoint is not a URL (http://HOST or https://HOST)";
	if (!(sep - ep == 4 && strncasecmp(ep, "http", 4) == 0) &&
	    !(sep - ep == 5 && strncasecmp(ep, "https", 5) == 0))
		return "the S3 endpoint is neither http:// nor https://";
	len = endpoint_rest(sep);
	if (!len)
		return "the S3 endpoint has no host";
	if (len >= MP_FETCH_URL_MAX)
		return "the S3 endpoint is longer than this tool takes";
	return NULL;
}

/* ENDPOINT as scheme://host[:port][/prefix], without a trailing '/'. */
static enum mp_err split_endpoint(const char *ep, char *scheme, size_t ss, char *rest,
				  size_t rs, const char *text, struct mp_error *err)
{
	const char *why = mp_fetch_s3_endpoint_problem(ep), *sep = strstr(ep, "://");
	size_t len;

	if (why)
		return bad(err, text, why);
	len = endpoint_rest(sep);
	if ((size_t)(sep - ep) >= ss || len >= rs)
		return bad(err, text, "the S3 endpoint is longer than this tool takes");
	snprintf(scheme, ss, "%.*s", (int)(sep - ep), ep);
	snprintf(rest, rs, "%.*s", (int)len, sep + 3);
	return MP_OK;
}

static enum mp_err parse_s3(const char *text, const struct mp_fetch_s3_config *s3,
			    struct mp_fetch_source *out, struct mp_error *err)
{
	const char *b = text + 5, *slash = strchr(b, '/');
	const char *region = s3 && s3->region && *s3->region ? s3->region : "us-east-1";
	char scheme[16], host[MP_FETCH_URL_MAX], aws[300];
	enum mp_err rc;
	int n;

	if (!slash || !slash[1])
		return bad(err, text, "an s3:// source is s3://BUCKET/KEY");
	if (!bucket_ok(b, (size_t)(slash - b)))
		return bad(err, text, "the bucket name is not one S3 accepts");
	if (strlen(region) >= sizeof out->region)
		return bad(err, text, "the region is too long");
	snprintf(out->bucket, sizeof out->bucket, "%.*s", (int)(slash - b), b);
	snprintf(out->region, sizeof out->region, "%s", region);
	snprintf(aws, sizeof aws, "https://s3.%s.amazonaws.com", region);
	rc = split_endpoint(s3 && s3->endpoint && *s3->endpoint ? s3->endpoint : aws, scheme,
			    sizeof scheme, host, sizeof host, text, err);
	if (rc)
		return rc;
	out->kind = MP_FETCH_S3;
	out->tls = strcasecmp(scheme, "https") == 0;
	if (s3 && s3->virtual_hosted)
		n = snprintf(out->url, sizeof out->url, "%s://%s.%s%s", scheme, out->bucket, host,
			     slash);
	else
		n = snprintf(out->url, sizeof out->url, "%s://%s/%s%s", scheme, host, out->bucket,
			     slash);
	return fits(out->url, sizeof out->url, n) ? MP_OK : bad(err, text, "the URL is too long");
}

static enum mp_err parse_http(const char *text, size_t skip, struct mp_fetch_source *out,
			      struct mp_error *err)
{
	const char *host = text + skip, *slash = strchr(host, '/');

	if (!*host || slash == host)
		return bad(err, text, "the URL has no host");
	if (!slash || !slash[1] || slash[strlen(slash) - 1] == '/')
		return bad(err, text, "the URL names no file (the pack's own URL is wanted)");
	snprintf(out->url, sizeof out->url, "%s", text);
	return MP_OK;
}

static enum mp_err parse_file(const char *text, struct mp_fetch_source *out,
			      struct mp_error *err)
{
	const char *path = text + 7;

	if (strncmp(path, "localhost/", 10) == 0)
		path += 9;
	if (path[0] != '/')
		return bad(err, text, "a file:// URL is file:///ABSOLUTE/PATH (no other host)");
	if (!path[1] || path[strlen(path) - 1] == '/')
		return bad(err, text, "the URL names no file");
	out->kind = MP_FETCH_FILE;
	snprintf(out->url, sizeof out->url, "file://%s", path);
	return MP_OK;
}

enum mp_err mp_fetch_source_parse(const char *text, const struct mp_fetch_s3_config *s3,
				  struct mp_fetch_source *out, struct mp_error *err)
{
	memset(out, 0, sizeof *out);
	if (strlen(text) >= MP_FETCH_URL_MAX - 64)
		return bad(err, "(too long)", "the URL is longer than this tool takes");
	snprintf(out->given, sizeof out->given, "%s", text);
	if (strncasecmp(text, "https://", 8) == 0) {
		out->kind = MP_FETCH_HTTPS;
		out->tls = true;
		return parse_http(text, 8, out, err);
	}
	if (strncasecmp(text, "http://", 7) == 0) {
		out->kind = MP_FETCH_HTTP;
		return parse_http(text, 7, out, err);
	}
	if (strncasecmp(text, "file://", 7) == 0)
		return parse_file(text, out, err);
	if (strncasecmp(text, "s3://", 5) == 0)
		return parse_s3(text, s3, out, err);
	return bad(err, text, "not an http://, https://, file:// or s3:// URL");
}

bool mp_fetch_source_beside(const struct mp_fetch_source *s, const char *suffix, char *buf,
			    size_t size)
{
	const char *q = strpbrk(s->url, "?#");
	int n = q ? snprintf(buf, size, "%.*s%s%s", (int)(q - s->url), s->url, suffix, q)
		  : snprintf(buf, size, "%s%s", s->url, suffix);

	return fits(buf, size, n);
}

char *mp_fetch_source_name(const char *src)
{
	const char *end = src + strcspn(src, "?#"), *base = end;

	while (base > src && base[-1] != '/')
		base--;
	return base < end ? strndup(base, (size_t)(end - base)) : NULL;
}

const char *mp_fetch_ca_file_default(void)
{
	const char *env[] = {"CURL_CA_BUNDLE", "SSL_CERT_FILE"};

	for (size_t i = 0; i < sizeof env / sizeof *env; i++)
		if (getenv(env[i]) && *getenv(env[i]))
			return getenv(env[i]);
	return NULL;
}

struct mp_fetch_s3_config mp_fetch_s3_config_from_env(const char *endpoint,
						      bool virtual_hosted)
{
	const char *region = getenv("AWS_REGION");

	if (!region || !*region)
		region = getenv("AWS_DEFAULT_REGION");
	return (struct mp_fetch_s3_config){
		.endpoint = endpoint ? endpoint : getenv("AWS_ENDPOINT_URL"),
		.region = region && *region ? region : NULL, .virtual_hosted = virtual_hosted};
}
