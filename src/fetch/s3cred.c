/*
 * s3cred.c - the AWS shared credentials file's format (s3cred.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/s3cred.h"

/* s[0..n) without blanks at either end. */
static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r'))
		(*n)--;
}

static void set(char *dst, size_t cap, const char *v, size_t n)
{
	snprintf(dst, cap, "%.*s", (int)(n < cap ? n : cap - 1), v);
}

/* One "key = value" line of the wanted section. */
static void line_in_section(const char *s, size_t n, struct mp_fetch_s3_creds *out)
{
	const char *eq = memchr(s, '=', n), *v;
	size_t kn, vn;

	if (!eq)
		return;
	kn = (size_t)(eq - s);
	v = eq + 1;
	vn = n - kn - 1;
	trim(&s, &kn);
	trim(&v, &vn);
	if (kn == 17 && strncmp(s, "aws_access_key_id", kn) == 0)
		set(out->key_id, sizeof out->key_id, v, vn);
	else if (kn == 21 && strncmp(s, "aws_secret_access_key", kn) == 0)
		set(out->secret, sizeof out->secret, v, vn);
	else if (kn == 17 && strncmp(s, "aws_session_token", kn) == 0)
		set(out->token, sizeof out->token, v, vn);
}

bool mp_fetch_s3_creds_parse(const char *text, size_t len, const char *profile,
			     struct mp_fetch_s3_creds *out)
{
	const char *p = text, *end = text + len;
	bool in = false;

	memset(out, 0, sizeof *out);
	if (!profile || !*profile)
		profile = "default";
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *s = p;
		size_t n = (size_t)((nl ? nl : end) - p);

		p = nl ? nl + 1 : end;
		trim(&s, &n);
		if (n && (s[0] == '#' || s[0] == ';'))
			continue;
		if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
			const char *name = s + 1;
			size_t nn = n - 2;

			trim(&name, &nn);
			in = nn == strlen(profile) && strncmp(name, profile, nn) == 0;
		} else if (in) {
			line_in_section(s, n, out);
		}
	}
	return out->key_id[0] && out->secret[0];
}

void mp_fetch_s3_creds_load(struct mp_fetch_s3_creds *out, char *from, size_t from_len)
{
	const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
	const char *file = getenv("AWS_SHARED_CREDENTIALS_FILE"), *home = getenv("HOME");
	const char *profile = getenv("AWS_PROFILE");
	char path[4096], *text = NULL;
	size_t len = 0;
	FILE *f;

	memset(out, 0, sizeof *out);
	snprintf(from, from_len, "%s", "");
	if (id && *id && secret && *secret) {
		snprintf(from, from_len, "AWS_ACCESS_KEY_ID");
		snprintf(out->key_id, sizeof out->key_id, "%s", id);
		snprintf(out->secret, sizeof out->secret, "%s", secret);
		snprintf(out->token, sizeof out->token, "%s",
			 getenv("AWS_SESSION_TOKEN") ? getenv("AWS_SESSION_TOKEN") : "");
		return;
	}
	snprintf(path, sizeof path, "%s", file ? file : "");
	if (!file && home)
		snprintf(path, sizeof path, "%s/.aws/credentials", home);
	f = path[0] ? fopen(path, "re") : NULL;
	/* a credentials file is small: the first MiB is read */
	if (f && (text = malloc(1u << 20)))
		len = fread(text, 1, (1u << 20) - 1, f);
	if (text && mp_fetch_s3_creds_parse(text, len, profile, out))
		snprintf(from, from_len, "profile \"%.64s\" of %.4000s",
			 profile && *profile ? profile : "default", path);
	if (f)
		fclose(f);
	free(text);
}
