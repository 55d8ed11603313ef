/*
 * s3cred.h - S3 credentials from an AWS shared credentials file
 * (~/.aws/credentials: INI sections named by profile, keys
 * aws_access_key_id, aws_secret_access_key, aws_session_token).
 *
 * Reads only the text given: the caller chooses the file and the profile
 * (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE) and prefers the variables
 * AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY when both are set.
 */
#ifndef MOEPACK_FETCH_S3CRED_H
#define MOEPACK_FETCH_S3CRED_H

#include <stdbool.h>
#include <stddef.h>

struct mp_fetch_s3_creds {
	char key_id[256];
	char secret[256];
	char token[4096];
};

/* The profile's credentials from text[0..len) into *out; false when the
 * profile is not there or lacks a key id or secret. */
bool mp_fetch_s3_creds_parse(const char *text, size_t len, const char *profile,
			     struct mp_fetch_s3_creds *out);

/*
 * The credentials as the AWS tools find them: AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) when both are set, else
 * the AWS_PROFILE (or default) section of AWS_SHARED_CREDENTIALS_FILE
 * (or ~/.aws/credentials).  from: where they came from, for messages ("" when
 * none was found: *out is then empty too).
 */
void mp_fetch_s3_creds_load(struct mp_fetch_s3_creds *out, char *from, size_t from_len);

#endif
