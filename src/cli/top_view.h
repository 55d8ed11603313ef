/*
 * top_view.h - what `moepack top` knows of a mount and the tables it shows.
 *
 * A view holds the last two samples (the rates come from their difference
 * over the time between their snapshots), the state of the last look (a
 * mount can go away and come back: the view keeps looking), and the
 * reader's choices (sort, layer).  The tables here are shared by the text
 * frame and --json, so both always show the same: the hottest layers, the
 * hottest experts, and the heat map folded into blocks of whole layers and
 * experts, the same number of each in every block but the last of a row or
 * column.
 */
#ifndef MOEPACK_CLI_TOP_VIEW_H
#define MOEPACK_CLI_TOP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cli/top_sample.h"

enum top_sort { TOP_SORT_READS, TOP_SORT_NOW, TOP_SORT_ID, TOP_SORT_COUNT };
extern const char *const top_sort_names[TOP_SORT_COUNT];

/* The rows of the hot tables. */
#define TOP_HOT_ROWS 10

struct top_view {
	const char *mount;          /* as given */
	char shown[256];            /* as it may be shown: escaped, cut */
	enum top_state state;       /* of the last look */
	char why[TOP_WHY_MAX];      /* its reason, when not TOP_OK */
	time_t down_since;          /* when the looks began to fail; 0: they do not */
	struct top_sample cur, prev; /* cur: the last good sample */
	bool have_prev;             /* prev is of the same mount, for rates */
	enum top_sort sort;
	long layer;                 /* the chosen layer id, -1: all */
};

/* A view of mount, not yet looked at (state TOP_GONE, down_since 0). */
void top_view_init(struct top_view *v, const char *mount);
void top_view_free(struct top_view *v);

/*
 * Look at the mount again.  When the look succeeds the new sample becomes
 * cur and the old one prev; rates need two samples of one mount, so after
 * a failed look, or when mounted_at changed (a remount), prev is not used.
 * When it fails, cur stays as last seen, state and why say what failed and
 * down_since is set if it was not.
 */
void top_view_look(struct top_view *v);

/* Seconds between the two samples' snapshots, 0 without two. */
double top_span(const struct top_view *v);
/* (now - before) per second of top_span(); 0 without, or when it fell. */
double top_rate(const struct top_view *v, uint64_t now, uint64_t before);

/* One expert of the hot table: indexes into cur. */
struct top_hot {
	unsigned layer;
	unsigned expert;
	uint64_t reads;
	double now;                 /* reads per second */
};

/* The experts read (of the chosen layer), sorted by v->sort; *n of them;
 * NULL (and *n 0) when there are none or no memory. */
struct top_hot *top_hottest(const struct top_view *v, size_t *n);

/* The indexes of at most cap layers of s with bytes read, most bytes first
 * (ties: lower id first), in idx; returns how many. */
unsigned top_hot_layers(const struct top_sample *s, unsigned *idx, unsigned cap);

/* n things folded into at most max groups of *per each (the last may hold
 * fewer); returns the number of groups (0 when n or max is 0). */
unsigned top_fold(unsigned n, unsigned max, unsigned *per);

/* The heat map: rows x cols cells, row r the layers (indexes) from
 * r * per_row, column c the experts from c * per_col; sums saturate. */
struct top_heat {
	unsigned rows, cols, per_row, per_col;
	uint64_t *cells, max;
};

/* s's per-expert counts folded into at most max_rows x max_cols cells;
 * false (h empty) when s has none or there is no memory. */
bool top_heat_make(const struct top_sample *s, unsigned max_rows, unsigned max_cols,
		   struct top_heat *h);
void top_heat_free(struct top_heat *h);

/* The layer indexes row r of h covers, first and last. */
void top_heat_row_layers(const struct top_heat *h, const struct top_sample *s, unsigned r,
			 unsigned *first, unsigned *last);

#endif
