/*
 * xfer.h - one request to a mirror on libcurl: the options every request
 * shares, the body kept in memory, and the reply judged.
 *
 * Every request: redirects followed at most MP_FETCH_MAX_REDIRS times and
 * only to http(s) (an https source only to https: never a fall back to
 * plain HTTP), TLS peers and host names verified (libcurl's default, never
 * turned off; ca_file/ca_path, when given, are the CAs trusted instead
 * of the system's), the proxy of the standard variables (libcurl's
 * default: http_proxy, HTTPS_PROXY, ALL_PROXY, NO_PROXY),
 * a stall below low_speed bytes/s for low_speed_time s ended
 * (CURLOPT_LOW_SPEED_LIMIT/TIME), the receive rate capped
 * (CURLOPT_MAX_RECV_SPEED_LARGE).  An s3:// source's requests are signed
 * with AWS Signature V4 by libcurl (CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3")
 * and carry x-amz-content-sha256 (S3 wants it with SigV4) and, with a
 * session token, x-amz-security-token.
 *
 * A ranged reply is taken only as 206 with a Content-Range naming exactly
 * the bytes asked for and a body of exactly that length (file:// replies
 * have no status: the length alone).  A 200 carrying the whole file, a
 * short or long body or another range is refused by name.
 */
#ifndef MOEPACK_FETCH_XFER_H
#define MOEPACK_FETCH_XFER_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

#include "base/errors.h"
#include "fetch/source.h"

#define MP_FETCH_MAX_REDIRS 5L
/* CURLOPT_BUFFERSIZE of every request (libcurl's default: 16 KiB) */
#define MP_FETCH_RECV_BUFFER (256L * 1024)

/* What every request shares; strings borrowed. */
struct mp_fetch_net {
	uint64_t low_speed;        /* bytes/s; 0: no stall check */
	long low_speed_time;       /* seconds */
	uint64_t max_rate;         /* bytes/s of one request; 0: none */
	const char *ca_file;       /* CURLOPT_CAINFO; NULL: libcurl's */
	const char *ca_path;       /* CURLOPT_CAPATH; NULL: libcurl's */
	const char *s3_key_id, *s3_secret, *s3_token; /* s3:// only */
	const char *s3_key_from;   /* where the key came from, for messages */
};

/* How a reply ends. */
enum mp_fetch_verdict {
	MP_FETCH_GOOD,       /* the bytes asked for, all of them */
	MP_FETCH_ABSENT,     /* 404 (or no such file): the mirror lacks it */
	MP_FETCH_LATER,      /* 429 or 503: come back after retry_after s */
	MP_FETCH_BAD,        /* anything else: counted against the mirror */
};

struct mp_fetch_xfer {
	CURL *h;
	struct curl_slist *headers;
	unsigned char *buf;        /* the body: borrowed (range) or grown */
	uint64_t cap, got;
	bool grow;                 /* buf is this request's, realloc'd */
	bool overflow;
	bool ranged;
	uint64_t offset, len;      /* the range asked for */
	char content_range[96];    /* of the last response */
	long retry_after;          /* seconds, -1: none said */
	long http_version;         /* CURL_HTTP_VERSION_* of the reply; 0: none */
	char errbuf[CURL_ERROR_SIZE];
	bool s3;                   /* signed: a 401/403 names the key */
	char key_id[128];          /* the access key id, for messages */
	char key_from[256];        /* where it came from */
	void *owner;               /* the caller's */
};

/*
 * Set up x for url on source s: a ranged GET of [offset, offset + len)
 * into buf (len bytes), or, with buf NULL, a whole GET of at most cap
 * bytes into a buffer of its own (the sidecars), or with nobody, a HEAD.
 * MP_E_NOMEM; MP_E_USAGE when libcurl refuses an option (a libcurl too
 * old for it).
 */
enum mp_err mp_fetch_xfer_setup(struct mp_fetch_xfer *x, const struct mp_fetch_source *s,
				const char *url, const struct mp_fetch_net *net,
				unsigned char *buf, uint64_t offset, uint64_t len, uint64_t cap,
				bool nobody, struct mp_error *err);
/*
 * Judge the finished request (res: its CURLcode): the verdict, and for
 * anything but MP_FETCH_GOOD err says why, naming `who` (the mirror) and
 * the range.  A 401 or 403 from an s3:// source names the access key id
 * and where it came from (never the secret), with S3's error code.
 */
enum mp_fetch_verdict mp_fetch_xfer_judge(struct mp_fetch_xfer *x, CURLcode res,
					  const char *who, struct mp_error *err);
void mp_fetch_xfer_cleanup(struct mp_fetch_xfer *x);

/* "1.0", "1.1", "2", "3" for a CURL_HTTP_VERSION_*; "" for 0 or another. */
const char *mp_fetch_http_version_name(long v);

#endif
