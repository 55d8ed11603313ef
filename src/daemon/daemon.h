/*
 * daemon.h - struct daemon, what lives as long as the mount, for the
 * files of moepackfs's start-up (daemon.c).
 *
 * main() (moepackfs.c) zeroes one, and the steps fill it in order:
 * options (options.c), the pack and its seal (openpack.c), the metrics
 * file's checks (metricsfile.c), struct mp_fs (prepare.c), the mount
 * (mountpoint.c), then the loop.  Each step returns 0 or an exit status
 * of prog.h, having printed its one line.
 */
#ifndef MOEPACK_DAEMON_DAEMON_H
#define MOEPACK_DAEMON_DAEMON_H

#include <stdbool.h>

#include "daemon/fsstate.h"
#include "fetch/remote.h"
#include "fetch/s3cred.h"
#include "daemon/options.h"
#include "daemon/prog.h"
#include "seal/seal.h"
#include "seal/sign.h"

/*
 * Threads serving requests unless -o max_threads says otherwise.  The
 * loader reads 16 objects at once, and the kernel cuts each O_DIRECT read
 * of one into 12 requests that it sends together: 192 in flight, each a
 * read from storage that waits for the device.  With fewer threads the
 * device sees fewer reads at once and the mount falls behind a native
 * reader (moepackfs(1), PERFORMANCE, has the figures).
 */
#define DEFAULT_THREADS 192u
/* Everything that lives as long as the mount. */
struct daemon {
	struct options opt;
	struct fuse_cmdline_opts cmd;
	struct mp_pack *pack;
	struct mp_fs fs;
	char *client_manifest;
	char *client_path;
	char *manifest_real;
	char *pack_real;
	/* -o trust='s key files, split once (trust_split holds them): the
	 * signature check and check_metrics_file read the same list */
	char *trust_split;
	const char *trust_keys[MP_MAX_TRUSTED_KEYS];
	int ntrust;
	bool stats_ok;
	bool fs_ok;
	/* how pack bytes are read, and the buffers requests read them into */
	struct mp_storage storage;
	bool storage_ok;
	struct mp_bufpool reqbufs;
	bool reqbufs_ok;
	/* -o verify=seal */
	struct mp_seal *seal;
	struct mp_seal_layout layout;
	bool layout_ok;
	struct mp_sealcheck check;
	bool check_ok;
	struct mp_status_seal status_seal;
	char seal_hex[MP_SHA256_HEX];
	bool seal_by_default;     /* PACK.seal found, nothing asked for */
	char verify_note[MP_MSG_MAX + 1100]; /* the line saying which, once mounted */
	/* SOURCE a mirror's URL (remotepack.c): opt.pack is then the partial */
	struct mp_remote *remote;
	char *source_url;
	char *remote_name;        /* NAME of DIR/NAME.pack: the mount's pack file */
	bool curl_ok;
	struct fuse_session *se;  /* the session, once made: readers' waits end with it */
	const char *sources[1 + MIRRORS_MAX];
	struct mp_fetch_s3_creds creds;
	char creds_from[4200];
};

/*
 * "moepackfs: MESSAGE" and "Try 'moepackfs --help' ..." on stderr; returns
 * EXIT_USAGE.
 */
int daemon_usage_failure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line for a failure of the pack, "moepackfs: PACK: message", escaped;
 * returns the code's exit status. */
int daemon_pack_failure(const struct daemon *d, enum mp_err rc, const struct mp_error *err);

/* PACK.seal (or -o seal=): a malloc'd path, NULL when out of memory. */
char *daemon_seal_path_of(const struct daemon *d);

/* Free what d holds, whatever step it reached. */
void daemon_free(struct daemon *d);

#endif
