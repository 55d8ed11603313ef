/*
 * prepare.h - struct mp_fs made ready to mount (prepare.c).
 */
#ifndef MOEPACK_DAEMON_PREPARE_H
#define MOEPACK_DAEMON_PREPARE_H

#include "daemon/daemon.h"

/*
 * Fill d->fs from the validated d->pack and d->opt: tree, counters, the
 * client manifest, attributes, request sizes and buffers, status.json's
 * fixed facts.  0, or an exit status with its one line printed.
 */
int daemon_prepare_fs(struct daemon *d);

#endif
