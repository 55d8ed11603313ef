/*
 * xfer.c - one request on libcurl (xfer.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fetch/xfer.h"

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct mp_fetch_xfer *x = arg;
	size_t len = size * n;

	if (x->got + len > x->cap) {
		x->overflow = true;
		return 0; /* CURLE_WRITE_ERROR: more than asked for */
	}
	if (x->grow && x->got + len > x->len) {
		uint64_t want = (x->got + len) * 2 > x->cap ? x->cap : (x->got + len) * 2;
		unsigned char *b = realloc(x->buf, (size_t)want);

		if (!b)
			return 0;
		x->buf = b;
		x->len = want;
	}
	memcpy(x->buf + x->got, data, len);
	x->got += len;
	return len;
}

/* Header lines of each response: a new status line forgets the last
 * response's (a redirect's) Content-Range and Retry-After. */
static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
	struct mp_fetch_xfer *x = arg;
	size_t len = size * n;

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		x->content_range[0] = '\0';
		x->retry_after = -1;
	} else if (len > 14 && strncasecmp(line, "content-range:", 14) == 0) {
		snprintf(x->content_range, sizeof x->content_range, "%.*s", (int)(len - 14),
			 line + 14);
		x->content_range[strcspn(x->content_range, "\r\n")] = '\0';
	} else if (len > 12 && strncasecmp(line, "retry-after:", 12) == 0) {
		x->retry_after = strtol(line + 12, NULL, 10);
	}
	return len;
}

static enum mp_err set_s3(struct mp_fetch_xfer *x, const struct mp_fetch_source *s,
			  const struct mp_fetch_net *net, struct mp_error *err)
{
	char sigv4[128], hdr[2048];
	struct curl_slist *l;

	snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", s->region);
	l = curl_slist_append(x->headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	if (l && net->s3_token && *net->s3_token) {
		x->headers = l;
		snprintf(hdr, sizeof hdr, "x-amz-security-token: %s", net->s3_token);
		l = curl_slist_append(x->headers, hdr);
	}
	if (!l)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	x->headers = l;
	if (curl_easy_setopt(x->h, CURLOPT_AWS_SIGV4, sigv4) != CURLE_OK ||
	    curl_easy_setopt(x->h, CURLOPT_USERNAME, net->s3_key_id ? net->s3_key_id : "") ||
	    curl_easy_setopt(x->h, CURLOPT_PASSWORD, net->s3_secret ? net->s3_secret : ""))
		return mp_fail(err, MP_E_USAGE, "invalid usage: this libcurl cannot sign S3 "
			       "requests (CURLOPT_AWS_SIGV4)");
	return MP_OK;
}

static enum mp_err set_common(struct mp_fetch_xfer *x, const struct mp_fetch_source *s,
			      const char *url, const struct mp_fetch_net *net,
			      struct mp_error *err)
{
	CURL *h = x->h;
	CURLcode rc = curl_easy_setopt(h, CURLOPT_URL, url);

	if (!rc)
		rc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR,
				      s->kind == MP_FETCH_FILE ? "file" : s->tls ? "https" : "http,https");
	if (!rc)
		rc = curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, s->tls ? "https" : "http,https");
	if (!rc)
		rc = curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	if (!rc)
		rc = curl_easy_setopt(h, CURLOPT_MAXREDIRS, MP_FETCH_MAX_REDIRS);
	if (!rc && net->low_speed)
		rc = curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, (long)net->low_speed);
	if (!rc && net->low_speed)
		rc = curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, net->low_speed_time);
	if (!rc && net->max_rate)
		rc = curl_easy_setopt(h, CURLOPT_MAX_RECV_SPEED_LARGE, (curl_off_t)net->max_rate);
	if (!rc)
		rc = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
	if (!rc)
		rc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	/* libcurl's receive buffer, and so the most each write callback
	 * gets: 16 KiB by default, which on loopback is a recv() and a
	 * callback per 16 KiB; 256 KiB took a third off the CPU time.  Not
	 * with a rate cap: libcurl 7.88 then overshoots --max-rate several
	 * times over (13 MB at 2 MB/s took 0.9 s instead of 3.5) */
	if (!rc && !net->max_rate)
		rc = curl_easy_setopt(h, CURLOPT_BUFFERSIZE, MP_FETCH_RECV_BUFFER);
	if (!rc && net->ca_file && *net->ca_file)
		rc = curl_easy_setopt(h, CURLOPT_CAINFO, net->ca_file);
	if (!rc && net->ca_path && *net->ca_path)
		rc = curl_easy_setopt(h, CURLOPT_CAPATH, net->ca_path);
	/* HTTP/2 over TLS when the server offers it (ALPN), HTTP/1.1 in the
	 * clear: cleartext HTTP/2 (h2c) with many ranges on one connection
	 * failed with curl 7.88 here */
	if (!rc && s->kind != MP_FETCH_FILE)
		rc = curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	if (rc)
		return mp_fail(err, MP_E_USAGE, "invalid usage: libcurl refuses an option: %s",
			       curl_easy_strerror(rc));
	return s->kind == MP_FETCH_S3 ? set_s3(x, s, net, err) : MP_OK;
}

enum mp_err mp_fetch_xfer_setup(struct mp_fetch_xfer *x, const struct mp_fetch_source *s,
				const char *url, const struct mp_fetch_net *net,
				unsigned char *buf, uint64_t offset, uint64_t len, uint64_t cap,
				bool nobody, struct mp_error *err)
{
	char range[64];
	enum mp_err rc;

	memset(x, 0, sizeof *x);
	x->retry_after = -1;
	x->s3 = s->kind == MP_FETCH_S3;
	snprintf(x->key_id, sizeof x->key_id, "%s", x->s3 && net->s3_key_id && *net->s3_key_id
						     ? net->s3_key_id : "(none)");
	snprintf(x->key_from, sizeof x->key_from, "%s", net->s3_key_from && *net->s3_key_from
							 ? net->s3_key_from : "nowhere");
	x->h = curl_easy_init();
	if (!x->h)
		return mp_fail(err, MP_E_NOMEM, "out of memory (curl_easy_init)");
	if ((rc = set_common(x, s, url, net, err)))
		return rc;
	x->ranged = buf != NULL;
	x->grow = !buf && !nobody;
	x->buf = buf;
	x->offset = offset;
	x->len = x->ranged ? len : 0;
	x->cap = x->ranged ? len : cap;
	snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, offset, offset + len - 1);
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(x->h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
	if (nobody)
		curl_easy_setopt(x->h, CURLOPT_NOBODY, 1L);
	if (x->ranged)
		curl_easy_setopt(x->h, CURLOPT_RANGE, range);
	if (x->headers)
		curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->headers);
	return MP_OK;
}

/* "bytes A-B/T" naming exactly the range asked for. */
static bool range_ok(const struct mp_fetch_xfer *x)
{
	uint64_t a, b;
	const char *p = x->content_range;

	while (*p == ' ')
		p++;
	if (sscanf(p, "bytes %" SCNu64 "-%" SCNu64 "/", &a, &b) != 2)
		return false;
	return a == x->offset && b == x->offset + x->len - 1;
}

/* S3's <Code>...</Code> of an error body, into buf ("" when none). */
static void s3_error_code(const struct mp_fetch_xfer *x, char *buf, size_t size)
{
	const char *p, *e;
	size_t n = x->got < 4096 ? (size_t)x->got : 4096;
	char body[4097];

	buf[0] = '\0';
	if (!x->buf || !n)
		return;
	memcpy(body, x->buf, n);
	body[n] = '\0';
	if (!(p = strstr(body, "<Code>")) || !(e = strstr(p, "</Code>")))
		return;
	p += 6;
	for (size_t i = 0; p + i < e && i + 1 < size; i++) {
		char c = p[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
			return (void)(buf[0] = '\0');
		buf[i] = c;
		buf[i + 1] = '\0';
	}
}

static enum mp_fetch_verdict judge_http(struct mp_fetch_xfer *x, long code, const char *who,
					struct mp_error *err)
{
	const char *what = x->ranged ? "range" : "file";

	if (x->s3 && (code == 401 || code == 403)) {
		char c[64];

		s3_error_code(x, c, sizeof c);
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: S3 refused the "
			       "credential (HTTP %ld%s%s): access key id \"%s\" from %s; check "
			       "its secret, and its rights on the bucket", who, code, c[0] ? " " : "",
			       c, x->key_id, x->key_from), MP_FETCH_BAD;
	}

	if (code == 404 || code == 410)
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: %s not found (HTTP %ld)",
			       who, what, code), MP_FETCH_ABSENT;
	if (code == 429 || code == 503)
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: busy (HTTP %ld), "
			       "retry after %ld s", who, code, x->retry_after), MP_FETCH_LATER;
	if (x->ranged && code == 200)
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: a 200 with the whole "
			       "file in reply to a range request", who), MP_FETCH_BAD;
	if (code != (x->ranged ? 206 : 200))
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: HTTP %ld", who, code),
		       MP_FETCH_BAD;
	if (x->ranged && !range_ok(x))
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: Content-Range \"%s\" "
			       "is not bytes %" PRIu64 "-%" PRIu64, who, x->content_range,
			       x->offset, x->offset + x->len - 1), MP_FETCH_BAD;
	return MP_FETCH_GOOD;
}

enum mp_fetch_verdict mp_fetch_xfer_judge(struct mp_fetch_xfer *x, CURLcode res,
					  const char *who, struct mp_error *err)
{
	long code = 0;
	enum mp_fetch_verdict v;

	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
	if (curl_easy_getinfo(x->h, CURLINFO_HTTP_VERSION, &x->http_version) != CURLE_OK)
		x->http_version = 0;
	if (res == CURLE_FILE_COULDNT_READ_FILE || res == CURLE_REMOTE_FILE_NOT_FOUND)
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: no such file", who),
		       MP_FETCH_ABSENT;
	if (code && (v = judge_http(x, code, who, err)) != MP_FETCH_GOOD)
		return v;
	if (res == CURLE_WRITE_ERROR && x->overflow)
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: the body is longer "
			       "than %" PRIu64 " bytes", who, x->cap), MP_FETCH_BAD;
	if (res == CURLE_PEER_FAILED_VERIFICATION || res == CURLE_SSL_CONNECT_ERROR ||
	    res == CURLE_SSL_CERTPROBLEM || res == CURLE_SSL_CIPHER ||
	    res == CURLE_SSL_CACERT_BADFILE || res == CURLE_SSL_ISSUER_ERROR ||
	    res == CURLE_SSL_PINNEDPUBKEYNOTMATCH || res == CURLE_SSL_INVALIDCERTSTATUS)
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: TLS failure, never "
			       "retried in the clear: %s (a private CA: --ca-file)", who,
			       x->errbuf[0] ? x->errbuf : curl_easy_strerror(res)), MP_FETCH_BAD;
	if (res != CURLE_OK)
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: %s", who,
			       x->errbuf[0] ? x->errbuf : curl_easy_strerror(res)), MP_FETCH_BAD;
	if (x->ranged && x->got != x->len)
		return mp_fail(err, MP_E_FETCH_MIRROR, "mirror failed: %s: a short body, %" PRIu64
			       " of %" PRIu64 " bytes at byte %" PRIu64, who, x->got, x->len,
			       x->offset), MP_FETCH_BAD;
	return MP_FETCH_GOOD;
}

const char *mp_fetch_http_version_name(long v)
{
	switch (v) {
	case CURL_HTTP_VERSION_1_0: return "1.0";
	case CURL_HTTP_VERSION_1_1: return "1.1";
	case CURL_HTTP_VERSION_2_0: return "2";
	case CURL_HTTP_VERSION_3: return "3";
	default: return "";
	}
}

void mp_fetch_xfer_cleanup(struct mp_fetch_xfer *x)
{
	if (x->h)
		curl_easy_cleanup(x->h);
	curl_slist_free_all(x->headers);
	if (x->grow)
		free(x->buf);
	x->h = NULL;
	x->headers = NULL;
	x->buf = NULL;
}
