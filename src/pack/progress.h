/*
 * progress.h - a one-line terminal progress bar for long byte-counting work
 * (full digests, writing packs), human-readable byte counts, and the one
 * printer of a pack's warnings: the terminal side that moepack(1) and
 * moepackfs(1) share.
 *
 * The bar draws only when its stream is a terminal, redraws at most ten
 * times a second, and erases itself when finished, so that callers can use
 * it unconditionally and scripts never see it.
 */
#ifndef MOEPACK_PROGRESS_H
#define MOEPACK_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

struct progress_bar {
	FILE *out;
	bool enabled;            /* out is a terminal and the caller allows it */
	bool drawn;              /* something is on the line to erase */
	const char *label;       /* short text before the bar; not copied */
	struct timespec start;
	struct timespec last_draw;
};

/*
 * Prepare a bar on `out` labelled `label`.  It stays silent unless `allow`
 * is true and out is a terminal.
 */
void progress_bar_init(struct progress_bar *bar, FILE *out, const char *label, bool allow);

/* An mp_progress_fn: arg is the struct progress_bar. */
void progress_bar_update(uint64_t done, uint64_t total, void *arg);

/* Erase the bar's line, if anything was drawn. */
void progress_bar_finish(struct progress_bar *bar);

struct mp_pack;

/*
 * "PROG: warning: TEXT" on out for each warning the validator left in the
 * pack, escaped as every message a terminal sees.
 */
void print_pack_warnings(FILE *out, const char *prog, const struct mp_pack *pack);

/* "0 B", "512 B", "1.5 KiB", "918 GiB": binary units, 3 significant digits. */
char *format_bytes(char *buf, size_t len, uint64_t bytes);

/* "0:07", "12:34", "3:02:11". */
char *format_duration(char *buf, size_t len, double seconds);

#endif
