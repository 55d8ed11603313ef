/* top_text.c - a frame of `moepack top` as lines of text (top_text.h). */
#include "config.h"

#include "cli/top_text.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/text.h"

/* Where the hot layers' table starts: after the widest title of the hot
 * experts' ("HOT EXPERTS (layer 4294967295, sort: reads)"), so that
 * neither moves when the sort or the layer changes. */
#define HOT_RIGHT 44

/* ---- lines ------------------------------------------------------------------------ */

/* The longest prefix of s that fits width bytes without cutting a
 * character (the text is escaped: valid UTF-8). */
static size_t fit(const char *s, size_t width)
{
	size_t n = strlen(s), at = 0;

	while (at < n) {
		size_t k = mp_utf8_seq_len((const unsigned char *)s + at, n - at);

		if (at + (k ? k : 1) > width)
			break;
		at += k ? k : 1;
	}
	return at;
}

static void put(struct top_frame *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct top_frame *f, const char *fmt, ...)
{
	char text[4 * TOP_WIDTH_MAX + 4 * TOP_FIELD_MAX * 4];
	size_t n;
	va_list ap;

	if (f->n >= f->height || f->n >= TOP_LINES_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	n = fit(text, f->width < TOP_WIDTH_MAX ? f->width : TOP_WIDTH_MAX);
	/* no trailing blanks (--once output) */
	while (n > 0 && text[n - 1] == ' ')
		n--;
	memcpy(f->line[f->n], text, n);
	f->line[f->n++][n] = '\0';
}

/* Text (escaped) in as many lines of the width as it takes, broken at
 * spaces where it can be. */
static void put_wrapped(struct top_frame *f, const char *text)
{
	const char *p = text;

	while (*p && f->n < f->height) {
		size_t n = strlen(p), cut = n;

		if (n > f->width) {
			cut = fit(p, f->width);
			for (size_t c = cut; c > 0; c--) {
				if (p[c] == ' ') {
					cut = c;
					break;
				}
			}
		}
		if (cut == 0)
			cut = 1;
		put(f, "%.*s", (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
	}
}

/* Text from the mount as it may be shown. */
static const char *esc(char *buf, size_t len, const char *s)
{
	mp_text_escape(buf, len, s, strlen(s), 0);
	return buf;
}

static void human(char *buf, size_t len, double bytes)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	unsigned u = 0;

	while (bytes >= 1024 && u < 6) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

/* A count in at most width characters: exact when it fits, else in k, M,
 * G, T, P or E (powers of 1000) with one decimal. */
static void count_text(char *buf, size_t len, double v, int decimals, size_t width)
{
	static const char suffix[] = "kMGTPE";

	snprintf(buf, len, "%.*f", decimals, v);
	for (unsigned i = 0; strlen(buf) > width && i < sizeof suffix - 1; i++) {
		v /= 1000;
		snprintf(buf, len, "%.1f%c", v, suffix[i]);
	}
}

/* The width of the layer ids' columns: 5, or the widest id of s. */
static int id_width(const struct top_sample *s)
{
	int w = 5;

	for (unsigned l = 0; l < s->nlayers; l++) {
		char id[16];
		int n = snprintf(id, sizeof id, "%" PRIu32, s->layer_id[l]);

		w = n > w ? n : w;
	}
	return w;
}

/* ---- the header --------------------------------------------------------------------- */

static void render_state(const struct top_view *v, struct top_frame *f)
{
	const struct top_sample *s = &v->cur;
	char p[4 * TOP_FIELD_MAX], val[4 * TOP_FIELD_MAX], ver[4 * TOP_FIELD_MAX];

	put(f, "moepack top  %s   pack %s   validation %s (verify=%s)   up %.0f s", v->shown,
	    esc(p, sizeof p, s->pack_state), esc(val, sizeof val, s->validation),
	    esc(ver, sizeof ver, s->verify), s->uptime);
	if (s->remote) {
		char a[32], b[32];

		human(a, sizeof a, (double)s->fill_bytes_local);
		human(b, sizeof b, (double)s->fill_size);
		put(f, "fill %s %.1f%%: %s of %s, %" PRIu64 "/%" PRIu64 " chunks, refetched %"
		    PRIu64 ", waits %" PRIu64 " (%" PRIu64 " failed)",
		    s->fill_complete ? "complete" : "running",
		    s->fill_size ? 100.0 * (double)s->fill_bytes_local / (double)s->fill_size : 0,
		    a, b, s->fill_local, s->fill_chunks, s->fill_refetched, s->fill_waits,
		    s->fill_failed);
	}
}

static void render_header(const struct top_view *v, struct top_frame *f)
{
	const struct top_sample *s = &v->cur;
	char a[32], b[32], now[40] = "-", errs[TOP_MAX_ERRNOS * 48] = "";
	size_t el = 0;

	render_state(v, f);
	human(a, sizeof a, (double)s->bytes);
	human(b, sizeof b, s->uptime > 0 ? (double)s->bytes / s->uptime : 0);
	if (top_span(v) > 0) {
		human(now, sizeof now - 2, top_rate(v, s->bytes, v->prev.bytes));
		strcat(now, "/s");
	}
	put(f, "reads %" PRIu64 " (%s) since mount, %s/s average, now %s", s->reads, a, b, now);
	human(a, sizeof a, (double)s->direct_bytes);
	human(b, sizeof b, (double)s->buffered_bytes);
	for (unsigned i = 0; i < s->nerrnos; i++)
		el += (size_t)snprintf(errs + el, sizeof errs - el, "%s%s %" PRIu64,
				       i ? " " : " (", s->errnos[i].name, s->errnos[i].count);
	put(f, "direct %s  buffered %s   errors %" PRIu64 "%s%s", a, b, s->errors, errs,
	    el ? ")" : "");
	put(f, "%s", "");
}

/* ---- the hot tables ---------------------------------------------------------------- */

/* Row i of the hot experts (h, nh of them) and of the hot layers (idx, nl). */
static void render_hot_row(const struct top_view *v, struct top_frame *f, int idw, unsigned i,
			   const struct top_hot *h, size_t nh, const unsigned *idx, unsigned nl)
{
	const struct top_sample *s = &v->cur;
	char left[96] = "", right[96] = "", r[32], n[32];

	if (i < nh) {
		count_text(r, sizeof r, (double)h[i].reads, 0, 10);
		count_text(n, sizeof n, h[i].now, 1, 7);
		snprintf(left, sizeof left, "%*" PRIu32 " %6u %10s %7s", idw,
			 s->layer_id[h[i].layer], h[i].expert, r, n);
	}
	if (i < nl) {
		unsigned l = idx[i];
		bool ok = v->have_prev && v->prev.nlayers == s->nlayers;

		human(r, sizeof r, (double)s->layer_bytes[l]);
		human(n, sizeof n, ok ? top_rate(v, s->layer_bytes[l], v->prev.layer_bytes[l]) : 0);
		snprintf(right, sizeof right, "%*" PRIu32 " %10s %9s", idw, s->layer_id[l], r, n);
	}
	put(f, "%-*s%s", HOT_RIGHT, left, right);
}

static void render_hot(const struct top_view *v, struct top_frame *f)
{
	const struct top_sample *s = &v->cur;
	unsigned idx[TOP_HOT_ROWS], nl = top_hot_layers(s, idx, TOP_HOT_ROWS), used = f->n, rows;
	int idw = id_width(s);
	size_t nh;
	struct top_hot *h = top_hottest(v, &nh);
	char title[96], left[64], right[64];

	rows = f->height > used + 14 ? TOP_HOT_ROWS : (f->height > used + 8 ? 4 : 2);
	if (v->layer >= 0)
		snprintf(left, sizeof left, "layer %ld", v->layer);
	else
		snprintf(left, sizeof left, "all layers");
	snprintf(title, sizeof title, "HOT EXPERTS (%s, sort: %s)", left,
		 top_sort_names[v->sort]);
	put(f, "%-*s%s", HOT_RIGHT, title, "HOT LAYERS (bytes)");
	/* the column heads in the widths of the rows */
	snprintf(left, sizeof left, "%*s %6s %10s %7s", idw, "layer", "expert", "reads", "now/s");
	snprintf(right, sizeof right, "%*s %10s %9s", idw, "layer", "bytes", "now/s");
	put(f, "%-*s%s", HOT_RIGHT, left, right);
	for (unsigned i = 0; i < rows; i++)
		render_hot_row(v, f, idw, i, h, nh, idx, nl);
	put(f, "%s", "");
	free(h);
}

/* ---- the heat map ------------------------------------------------------------------ */

static char shade(uint64_t v, uint64_t max)
{
	static const char ramp[] = " .:-=+*#%@";

	if (!v || !max)
		return ' ';
	return ramp[1 + (int)(sqrt((double)v / (double)max) * 8.0 + 0.5)];
}

/* "rows of 4" or, when the last row holds fewer, "rows of 4, the last 1". */
static void fold_text(char *buf, size_t len, const char *what, unsigned n, unsigned per)
{
	if (per && n % per)
		snprintf(buf, len, "%s of %u, the last %u", what, per, n % per);
	else
		snprintf(buf, len, "%s of %u", what, per);
}

/* The label of row r: the ids of the first and the last layer it holds. */
static void row_label(char *buf, size_t len, const struct top_heat *h,
		      const struct top_sample *s, unsigned r)
{
	unsigned first, last;

	top_heat_row_layers(h, s, r, &first, &last);
	if (first == last)
		snprintf(buf, len, "%" PRIu32, s->layer_id[first]);
	else
		snprintf(buf, len, "%" PRIu32 "-%" PRIu32, s->layer_id[first], s->layer_id[last]);
}

static void render_heat_rows(const struct top_sample *s, struct top_frame *f,
			     const struct top_heat *h, int lw)
{
	for (unsigned r = 0; r < h->rows; r++) {
		char row[TOP_WIDTH_MAX + 1], label[32];
		unsigned c;

		for (c = 0; c < h->cols && c < TOP_WIDTH_MAX; c++)
			row[c] = shade(h->cells[(size_t)r * h->cols + c], h->max);
		row[c] = '\0';
		row_label(label, sizeof label, h, s, r);
		put(f, "%*s |%s|", lw, label, row);
	}
}

/* The heat map, folded to the room left: rows of whole layers, labelled
 * with the ids they hold, and columns of whole experts. */
static void render_heat(const struct top_view *v, struct top_frame *f)
{
	const struct top_sample *s = &v->cur;
	unsigned room = f->height > f->n + 1 + f->keys ? f->height - f->n - 1 - f->keys : 1;
	unsigned per, rows = top_fold(s->nlayers, room, &per), cols;
	struct top_heat h = {.per_row = per, .rows = rows};
	char rl[64], cl[64], label[32];
	int lw = 5;

	for (unsigned r = 0; r < rows; r++) {
		row_label(label, sizeof label, &h, s, r);
		lw = (int)strlen(label) > lw ? (int)strlen(label) : lw;
	}
	cols = f->width > (unsigned)lw + 3 ? f->width - (unsigned)lw - 3 : 1;
	if (!top_heat_make(s, room, cols, &h)) {
		put(f, "HEAT: reads over %u layers x %u experts", s->nlayers, s->nexperts);
		if (!s->nlayers) {
			put(f, "  (status.json lists no layers)");
		} else if (s->experts_note[0]) {
			char note[sizeof s->experts_note + sizeof v->shown + 32];

			snprintf(note, sizeof note, "  (no per-expert counts: %s/%s)", v->shown,
				 s->experts_note);
			put_wrapped(f, note);
		} else {
			put(f, "  (no per-expert counts: the mount has no expert_reads attributes)");
		}
		return;
	}
	fold_text(rl, sizeof rl, "rows", s->nlayers, h.per_row);
	fold_text(cl, sizeof cl, "columns", s->nexperts, h.per_col);
	put(f, "HEAT: reads over %u layers (%s) x %u experts (%s)", s->nlayers, rl, s->nexperts, cl);
	render_heat_rows(s, f, &h, lw);
	top_heat_free(&h);
}

/* ---- a mount that cannot be read, a room too small --------------------------------- */

/* A duration as "12 s", "3 min 5 s", "2 h 10 min". */
static void duration(char *buf, size_t len, long long s)
{
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(buf, len, "%lld s", s);
	else if (s < 3600)
		snprintf(buf, len, "%lld min %lld s", s / 60, s % 60);
	else
		snprintf(buf, len, "%lld h %lld min", s / 3600, s / 60 % 60);
}

static void render_down(const struct top_view *v, struct top_frame *f)
{
	char when[40] = "?", took[48], why[TOP_WHY_MAX], line[sizeof why + sizeof v->shown + 4];
	time_t since = v->down_since;
	struct tm tm;

	if (localtime_r(&since, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
	duration(took, sizeof took, (long long)(time(NULL) - since));
	/* the reason holds escaped text (JSON errors) already */
	mp_text_escape(why, sizeof why, v->why, strlen(v->why), MP_TEXT_ESCAPED);
	put(f, "moepack top  %s", v->shown);
	put(f, "%s", "");
	put(f, "%s: %s since %s (%s)", v->shown, v->state == TOP_GONE ? "gone"
	    : v->state == TOP_DENIED ? "permission denied" : "invalid", when, took);
	snprintf(line, sizeof line, "%s: %s", v->shown, why);
	put_wrapped(f, line);
	if (f->keys)
		put(f, "looking at %s again every second", v->shown);
	put(f, "%s", "");
}

/* The note of a room too small, in lines of its width. */
static void render_small(struct top_frame *f)
{
	char msg[200];

	snprintf(msg, sizeof msg, "terminal too small: %ux%u; moepack top needs at least %ux%u "
		 "(q quits)", f->width, f->height, TOP_MIN_COLS, TOP_MIN_LINES);
	put_wrapped(f, msg);
}

void top_render(const struct top_view *v, struct top_frame *f)
{
	f->n = 0;
	if (f->width == 0 || f->height == 0)
		return;
	if (f->width < TOP_MIN_COLS || f->height < TOP_MIN_LINES) {
		render_small(f);
		return;
	}
	if (v->state != TOP_OK) {
		render_down(v, f);
		if (f->keys)
			put(f, "q quit");
		return;
	}
	render_header(v, f);
	render_hot(v, f);
	render_heat(v, f);
	if (f->keys)
		put(f, "q quit   l choose a layer   s sort (%s)", top_sort_names[v->sort]);
}
