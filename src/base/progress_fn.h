/*
 * progress_fn.h - the callback of long work (a full digest, a scan, a
 * build): told the bytes done so far and the total.  Its own header so
 * that the readers and hashers below pack.h take it without depending on
 * the pack.
 */
#ifndef MOEPACK_PROGRESS_FN_H
#define MOEPACK_PROGRESS_FN_H

#include <stdint.h>

typedef void (*mp_progress_fn)(uint64_t done, uint64_t total, void *arg);

#endif
