/*
 * remotepack.h - a SOURCE that is a mirror's URL (remotepack.c): the pack
 * fetched into -o cache=DIR while it is served, every read checked
 * against the trusted seal (fetch/remote.h does the work).
 */
#ifndef MOEPACK_DAEMON_REMOTEPACK_H
#define MOEPACK_DAEMON_REMOTEPACK_H

#include <stdbool.h>

#include "daemon/daemon.h"

/* Whether the PACK operand is a URL (http://, https://, s3://, file://). */
bool daemon_source_is_url(const char *pack);

/*
 * The options of a pack from mirrors against each other, before anything
 * is read: -o cache= given and a directory that can be written, a root of
 * trust, no option that only a local pack takes; and no such option
 * without a URL.  0, or EXIT_USAGE with its one line printed.
 */
int daemon_check_remote_options(struct daemon *d);

/*
 * Fetch steps 1-4 (remote.h) from the mirrors; then d->opt.pack is the
 * partial pack, which daemon_open_pack validates as any pack.  0, or the
 * exit status with its one line printed.
 */
int daemon_open_remote(struct daemon *d);

/* The seal for the check of every read, d->seal, and the hook that makes
 * a chunk local first.  MP_OK, or the error. */
enum mp_err daemon_remote_seal(struct daemon *d, struct mp_error *err);
void daemon_remote_hook(struct daemon *d);

/* The fill's thread (after daemonizing), and its stop (before the seal's
 * workers stop: readers waiting for a chunk are let go). */
int daemon_remote_start(struct daemon *d);
void daemon_remote_stop(struct daemon *d);

#endif
