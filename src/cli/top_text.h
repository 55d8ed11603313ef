/*
 * top_text.h - a frame of `moepack top` as lines of text: what curses
 * draws, and what --once prints.
 *
 * A frame fits the room it is given, line by line cut at a character
 * boundary, and everything from the mount in it is escaped (cli_text()).
 * It is one of three: the view of a readable mount (state, throughput,
 * errors, the hot tables, the heat map), the view of a mount that cannot be
 * read (gone or invalid, since when, why), or, in a room smaller than
 * TOP_MIN_COLS x TOP_MIN_LINES, a note that says so.
 */
#ifndef MOEPACK_CLI_TOP_TEXT_H
#define MOEPACK_CLI_TOP_TEXT_H

#include <stdbool.h>

#include "cli/top_view.h"

#define TOP_WIDTH_MAX 512
#define TOP_LINES_MAX 200
/* The smallest room a frame fits in: the width of the hot tables side by
 * side, and the header, two rows of each table and one of the heat map. */
#define TOP_MIN_COLS 70
#define TOP_MIN_LINES 12

struct top_frame {
	unsigned width, height;     /* the room, set by the caller */
	bool keys;                  /* the live view: a line of key help last */
	unsigned n;                 /* the lines drawn */
	char line[TOP_LINES_MAX][TOP_WIDTH_MAX + 1];
};

/* Draw v into f's lines (f->n of them) for its width, height and keys. */
void top_render(const struct top_view *v, struct top_frame *f);

#endif
