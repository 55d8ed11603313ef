/*
 * top_json.h - `moepack top --json`: the view as one JSON object.
 *
 * The same data as the text frame (top_text.h), from the same tables:
 * every count exact up to 2^64-1, every text from the mount a valid JSON
 * string (jsonw.h).  A mount that cannot be read gives an object that says
 * so: "mount_state" "gone" or "invalid", since when, and why.
 */
#ifndef MOEPACK_CLI_TOP_JSON_H
#define MOEPACK_CLI_TOP_JSON_H

#include "cli/top_view.h"

/* The object on standard output: 0, -1 when out of memory, or the errno of
 * a failed write. */
int top_print_json(const struct top_view *v);

#endif
