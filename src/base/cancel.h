/*
 * cancel.h - a request to stop long work (a build, its final check), made
 * by a signal handler and looked at by every loop that copies, hashes or
 * compares.
 *
 * The caller owns the struct (a program's signal handler has no way to
 * reach it but a variable of its own) and passes a pointer down through
 * the options of the work; the library keeps no flag of its own.  A NULL
 * pointer is a request never made.
 */
#ifndef MOEPACK_CANCEL_H
#define MOEPACK_CANCEL_H

#include <signal.h>

#include "base/errors.h"

struct mp_cancel {
	volatile sig_atomic_t sig; /* the signal that asked, or 0 */
};

/* Async-signal-safe: what a handler calls with its signal's number. */
static inline void mp_cancel_request(struct mp_cancel *c, int sig)
{
	c->sig = sig;
}

/* The signal that asked for a stop, or 0 (also for c NULL). */
static inline int mp_cancel_sig(const struct mp_cancel *c)
{
	return c ? (int)c->sig : 0;
}

/*
 * MP_OK when no stop was asked; else MP_E_INTERRUPTED, "build interrupted
 * by signal N while DOING", DOING made by the printf-style format from the
 * work and its file (escaped as every message is).
 */
enum mp_err mp_cancel_check(const struct mp_cancel *c, struct mp_error *err,
			    const char *doing_fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Sleep ms milliseconds (none for ms <= 0), woken early by a stop asked
 * meanwhile: the builders' test hooks slow their loops with it.
 */
void mp_cancel_sleep_ms(const struct mp_cancel *c, long ms);

#endif
