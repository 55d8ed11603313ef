/* top_json.c - `moepack top --json` (top_json.h). */
#include "config.h"

#include "cli/top_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "base/text.h"
#include "cli/cli.h"
#include "namespace/stats.h" /* mp_iso8601_utc */

/*
 * jansson's JSON_INDENT(2) layout, which the rest of the CLI's JSON has;
 * every control character escaped, as the text may go to a terminal.
 * Counts are written as exact unsigned numbers, which jansson's signed
 * 64-bit integers cannot all be.
 */
static const struct mp_jsonw_style top_style = {
	.indent = 2, .item_sep = ",", .key_sep = ": ", .escapes = MP_JSONW_TERMINAL};

/* A finite number as %.15g; NaN and the infinities, which JSON has not,
 * as null. */
static void real(struct mp_jsonw *w, double v)
{
	char b[32];

	if (isfinite(v))
		snprintf(b, sizeof b, "%.15g", v);
	mp_jsonw_literal(w, isfinite(v) ? b : "null");
}

/* s as a string, NULL as null: valid UTF-8 as it is, anything else as the
 * terminal sees it (cli_text()), which JSON can carry. */
static void text(struct mp_jsonw *w, const char *s)
{
	char *shown = NULL;

	if (!s) {
		mp_jsonw_literal(w, "null");
		return;
	}
	if (!mp_text_is_utf8(s, strlen(s))) {
		if (!(shown = malloc(CLI_TEXT_MAX))) {
			w->out.failed = true;
			return;
		}
		s = cli_text(shown, s);
	}
	mp_jsonw_string(w, s, strlen(s));
	free(shown);
}

/* The text and a newline on standard output, and the writer's buffer
 * freed; 0, or -1 when out of memory, or the errno of a failed write. */
static int print(struct mp_jsonw *w)
{
	int rc = -1;

	mp_buf_add(&w->out, "\n", 1);
	if (!w->out.failed && w->depth == 0)
		rc = cli_write_stdout(w->out.p, w->out.len);
	free(w->out.p);
	return rc;
}

static void key_u64(struct mp_jsonw *w, const char *key, uint64_t v)
{
	mp_jsonw_key(w, key);
	mp_jsonw_u64(w, v);
}

static void key_real(struct mp_jsonw *w, const char *key, double v)
{
	mp_jsonw_key(w, key);
	real(w, v);
}

static void key_text(struct mp_jsonw *w, const char *key, const char *s)
{
	mp_jsonw_key(w, key);
	text(w, s);
}

static void hot_layers_json(const struct top_view *v, struct mp_jsonw *w)
{
	const struct top_sample *s = &v->cur;
	unsigned idx[TOP_HOT_ROWS], nl = top_hot_layers(s, idx, TOP_HOT_ROWS);

	mp_jsonw_key(w, "hottest_layers");
	mp_jsonw_open(w, '[');
	for (unsigned i = 0; i < nl; i++) {
		mp_jsonw_open(w, '{');
		key_u64(w, "layer", s->layer_id[idx[i]]);
		key_u64(w, "reads", s->layer_reads[idx[i]]);
		key_u64(w, "bytes", s->layer_bytes[idx[i]]);
		mp_jsonw_close(w, '}');
	}
	mp_jsonw_close(w, ']');
}

static void hot_experts_json(const struct top_view *v, struct mp_jsonw *w)
{
	const struct top_sample *s = &v->cur;
	size_t nh;
	struct top_hot *h = top_hottest(v, &nh);

	mp_jsonw_key(w, "hottest_experts");
	mp_jsonw_open(w, '[');
	for (size_t i = 0; i < nh && i < TOP_HOT_ROWS; i++) {
		mp_jsonw_open(w, '{');
		key_u64(w, "layer", s->layer_id[h[i].layer]);
		key_u64(w, "expert", h[i].expert);
		key_u64(w, "reads", h[i].reads);
		key_real(w, "reads_per_second", h[i].now);
		mp_jsonw_close(w, '}');
	}
	mp_jsonw_close(w, ']');
	free(h);
}

/* The heat map's cells, and the layer ids each row holds. */
static void heat_cells_json(const struct top_sample *s, const struct top_heat *h, struct mp_jsonw *w)
{
	mp_jsonw_key(w, "row_layers");
	mp_jsonw_open(w, '[');
	for (unsigned r = 0; r < h->rows; r++) {
		unsigned first, last;

		top_heat_row_layers(h, s, r, &first, &last);
		mp_jsonw_open(w, '[');
		mp_jsonw_u64(w, s->layer_id[first]);
		mp_jsonw_u64(w, s->layer_id[last]);
		mp_jsonw_close(w, ']');
	}
	mp_jsonw_close(w, ']');
	mp_jsonw_key(w, "cells");
	mp_jsonw_open(w, '[');
	for (unsigned r = 0; r < h->rows; r++) {
		mp_jsonw_open(w, '[');
		for (unsigned c = 0; c < h->cols; c++)
			mp_jsonw_u64(w, h->cells[(size_t)r * h->cols + c]);
		mp_jsonw_close(w, ']');
	}
	mp_jsonw_close(w, ']');
}

/* The heat map at most 16 x 64 cells. */
static void heat_json(const struct top_view *v, struct mp_jsonw *w)
{
	const struct top_sample *s = &v->cur;
	struct top_heat h;
	bool have = top_heat_make(s, 16, 64, &h);

	mp_jsonw_key(w, "heat_map");
	mp_jsonw_open(w, '{');
	key_u64(w, "layers", s->nlayers);
	key_u64(w, "experts", s->nexperts);
	key_u64(w, "rows", h.rows);
	key_u64(w, "columns", h.cols);
	key_u64(w, "layers_per_row", h.per_row);
	key_u64(w, "experts_per_column", h.per_col);
	heat_cells_json(s, &h, w);
	mp_jsonw_key(w, "note");
	if (s->experts_note[0]) {
		char note[TOP_WHY_MAX + 300];

		snprintf(note, sizeof note, "%s/%s", v->mount, s->experts_note);
		text(w, note);
	} else {
		mp_jsonw_literal(w, "null");
	}
	mp_jsonw_close(w, '}');
	if (have)
		top_heat_free(&h);
}

static void totals_json(const struct top_view *v, struct mp_jsonw *w)
{
	const struct top_sample *s = &v->cur;

	key_text(w, "pack_state", s->pack_state);
	key_text(w, "validation", s->validation);
	key_text(w, "verify", s->verify);
	key_text(w, "mounted_at", s->mounted_at);
	key_real(w, "uptime_seconds", s->uptime);
	key_u64(w, "reads", s->reads);
	key_u64(w, "bytes", s->bytes);
	key_real(w, "bytes_per_second_since_mount", s->uptime > 0 ? (double)s->bytes / s->uptime : 0);
	mp_jsonw_key(w, "bytes_per_second_now");
	if (top_span(v) > 0)
		real(w, top_rate(v, s->bytes, v->prev.bytes));
	else
		mp_jsonw_literal(w, "null");
	key_u64(w, "direct_bytes", s->direct_bytes);
	key_u64(w, "buffered_bytes", s->buffered_bytes);
	key_u64(w, "read_errors", s->errors);
	if (s->remote) {
		/* a pack mounted from its mirrors only */
		mp_jsonw_key(w, "fill");
		mp_jsonw_open(w, '{');
		key_text(w, "state", s->fill_complete ? "complete" : "running");
		key_u64(w, "chunks", s->fill_chunks);
		key_u64(w, "chunks_local", s->fill_local);
		key_u64(w, "bytes_local", s->fill_bytes_local);
		key_u64(w, "pack_size", s->fill_size);
		key_u64(w, "chunks_refetched", s->fill_refetched);
		key_u64(w, "demand_waits", s->fill_waits);
		key_u64(w, "demand_failed", s->fill_failed);
		mp_jsonw_close(w, '}');
	}
	mp_jsonw_key(w, "read_errors_by_errno");
	mp_jsonw_open(w, '{');
	for (unsigned i = 0; i < s->nerrnos; i++)
		key_u64(w, s->errnos[i].name, s->errnos[i].count);
	mp_jsonw_close(w, '}');
}

/* Why the mount cannot be read, and since when. */
static void down_json(const struct top_view *v, struct mp_jsonw *w)
{
	char since[32], why[TOP_WHY_MAX + 4200];

	mp_iso8601_utc(v->down_since, since, sizeof since);
	snprintf(why, sizeof why, "%s: %s", v->mount, v->why);
	key_text(w, "since", since);
	key_text(w, "error", why);
}

int top_print_json(const struct top_view *v)
{
	static const char *const state[] = {[TOP_OK] = "ok", [TOP_GONE] = "gone",
					    [TOP_DENIED] = "denied", [TOP_INVALID] = "invalid"};
	struct mp_jsonw w;

	mp_jsonw_init(&w, &top_style);
	mp_jsonw_open(&w, '{');
	key_text(&w, "mount", v->mount);
	key_text(&w, "mount_state", state[v->state]);
	if (v->state != TOP_OK) {
		down_json(v, &w);
	} else {
		totals_json(v, &w);
		key_text(&w, "sort", top_sort_names[v->sort]);
		hot_layers_json(v, &w);
		hot_experts_json(v, &w);
		heat_json(v, &w);
	}
	mp_jsonw_close(&w, '}');
	return print(&w);
}
