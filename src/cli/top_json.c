/* top_json.c - `moepack top --json` (top_json.h). */
#include "config.h"

#include "cli/top_json.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli/jsonw.h"
#include "namespace/stats.h" /* mp_iso8601_utc */

static void key_u64(struct jw *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	jw_u64(w, v);
}

static void key_real(struct jw *w, const char *key, double v)
{
	jw_key(w, key);
	jw_real(w, v);
}

static void key_text(struct jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	jw_text(w, s);
}

static void hot_layers_json(const struct top_view *v, struct jw *w)
{
	const struct top_sample *s = &v->cur;
	unsigned idx[TOP_HOT_ROWS], nl = top_hot_layers(s, idx, TOP_HOT_ROWS);

	jw_key(w, "hottest_layers");
	jw_open(w, '[');
	for (unsigned i = 0; i < nl; i++) {
		jw_open(w, '{');
		key_u64(w, "layer", s->layer_id[idx[i]]);
		key_u64(w, "reads", s->layer_reads[idx[i]]);
		key_u64(w, "bytes", s->layer_bytes[idx[i]]);
		jw_close(w, '}');
	}
	jw_close(w, ']');
}

static void hot_experts_json(const struct top_view *v, struct jw *w)
{
	const struct top_sample *s = &v->cur;
	size_t nh;
	struct top_hot *h = top_hottest(v, &nh);

	jw_key(w, "hottest_experts");
	jw_open(w, '[');
	for (size_t i = 0; i < nh && i < TOP_HOT_ROWS; i++) {
		jw_open(w, '{');
		key_u64(w, "layer", s->layer_id[h[i].layer]);
		key_u64(w, "expert", h[i].expert);
		key_u64(w, "reads", h[i].reads);
		key_real(w, "reads_per_second", h[i].now);
		jw_close(w, '}');
	}
	jw_close(w, ']');
	free(h);
}

/* The heat map's cells, and the layer ids each row holds. */
static void heat_cells_json(const struct top_sample *s, const struct top_heat *h, struct jw *w)
{
	jw_key(w, "row_layers");
	jw_open(w, '[');
	for (unsigned r = 0; r < h->rows; r++) {
		unsigned first, last;

		top_heat_row_layers(h, s, r, &first, &last);
		jw_open(w, '[');
		jw_u64(w, s->layer_id[first]);
		jw_u64(w, s->layer_id[last]);
		jw_close(w, ']');
	}
	jw_close(w, ']');
	jw_key(w, "cells");
	jw_open(w, '[');
	for (unsigned r = 0; r < h->rows; r++) {
		jw_open(w, '[');
		for (unsigned c = 0; c < h->cols; c++)
			jw_u64(w, h->cells[(size_t)r * h->cols + c]);
		jw_close(w, ']');
	}
	jw_close(w, ']');
}

/* The heat map at most 16 x 64 cells. */
static void heat_json(const struct top_view *v, struct jw *w)
{
	const struct top_sample *s = &v->cur;
	struct top_heat h;
	bool have = top_heat_make(s, 16, 64, &h);

	jw_key(w, "heat_map");
	jw_open(w, '{');
	key_u64(w, "layers", s->nlayers);
	key_u64(w, "experts", s->nexperts);
	key_u64(w, "rows", h.rows);
	key_u64(w, "columns", h.cols);
	key_u64(w, "layers_per_row", h.per_row);
	key_u64(w, "experts_per_column", h.per_col);
	heat_cells_json(s, &h, w);
	jw_key(w, "note");
	if (s->experts_note[0]) {
		char note[TOP_WHY_MAX + 300];

		snprintf(note, sizeof note, "%s/%s", v->mount, s->experts_note);
		jw_text(w, note);
	} else {
		jw_null(w);
	}
	jw_close(w, '}');
	if (have)
		top_heat_free(&h);
}

static void totals_json(const struct top_view *v, struct jw *w)
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
	jw_key(w, "bytes_per_second_now");
	if (top_span(v) > 0)
		jw_real(w, top_rate(v, s->bytes, v->prev.bytes));
	else
		jw_null(w);
	key_u64(w, "direct_bytes", s->direct_bytes);
	key_u64(w, "buffered_bytes", s->buffered_bytes);
	key_u64(w, "read_errors", s->errors);
	jw_key(w, "read_errors_by_errno");
	jw_open(w, '{');
	for (unsigned i = 0; i < s->nerrnos; i++)
		key_u64(w, s->errnos[i].name, s->errnos[i].count);
	jw_close(w, '}');
}

/* Why the mount cannot be read, and since when. */
static void down_json(const struct top_view *v, struct jw *w)
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
	struct jw w;

	jw_init(&w);
	jw_open(&w, '{');
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
	jw_close(&w, '}');
	return jw_print(&w);
}
