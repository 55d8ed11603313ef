/*
 * openpack.h - the pack's validation and its seal, before mounting (openpack.c).
 */
#ifndef MOEPACK_DAEMON_OPENPACK_H
#define MOEPACK_DAEMON_OPENPACK_H

#include "daemon/daemon.h"

/*
 * Open and validate d->opt.pack as `moepack verify` does, with the read
 * lease taken first; then the payload scan, the -o verify chosen when none
 * was given, the storage and the seal or the index's digests.  0, or the
 * exit status with its one line printed.
 */
int daemon_open_pack(struct daemon *d);

/*
 * Just before mounting: 0 while the lease taken at the open is unbroken;
 * else the lease is given back and EXIT_IO returned (a writer came while
 * the pack was validated), its line printed.
 */
int daemon_lease_still_held(struct daemon *d);

#endif
