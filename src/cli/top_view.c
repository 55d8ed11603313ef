/* top_view.c - what `moepack top` knows of a mount and its tables (top_view.h). */
#include "config.h"

#include "cli/top_view.h"

#include <stdlib.h>
#include <string.h>

#include "base/text.h"

const char *const top_sort_names[TOP_SORT_COUNT] = {"reads", "now", "id"};

void top_view_init(struct top_view *v, const char *mount)
{
	memset(v, 0, sizeof *v);
	v->mount = mount;
	/* cut at a character boundary: the name may be any bytes */
	mp_text_escape(v->shown, sizeof v->shown, mount, strlen(mount), 0);
	v->state = TOP_GONE;
	v->layer = -1;
}

void top_view_free(struct top_view *v)
{
	top_sample_free(&v->cur);
	top_sample_free(&v->prev);
}

void top_view_look(struct top_view *v)
{
	struct top_sample next;
	enum top_state state = top_sample_read(v->mount, &next, v->why, sizeof v->why);
	bool same_mount;

	if (state != TOP_OK) {
		if (!v->down_since)
			v->down_since = time(NULL);
		v->state = state;
		return;
	}
	same_mount = v->state == TOP_OK && strcmp(next.mounted_at, v->cur.mounted_at) == 0;
	top_sample_free(&v->prev);
	v->prev = v->cur;
	v->cur = next;
	v->have_prev = same_mount;
	v->state = TOP_OK;
	v->down_since = 0;
	v->why[0] = '\0';
}

double top_span(const struct top_view *v)
{
	double dt = v->have_prev ? v->cur.at - v->prev.at : 0;

	return dt > 0 ? dt : 0;
}

double top_rate(const struct top_view *v, uint64_t now, uint64_t before)
{
	double dt = top_span(v);

	return dt > 0 && now >= before ? (double)(now - before) / dt : 0;
}

/* ---- the hot tables ------------------------------------------------------------------ */

/* The orders of the experts, one comparison each: "id" by layer and
 * expert, "reads" by reads and then id, "now" by this second's reads and
 * then as "reads". */
static int cmp_hot_id(const void *pa, const void *pb)
{
	const struct top_hot *a = pa, *b = pb;

	if (a->layer != b->layer)
		return a->layer < b->layer ? -1 : 1;
	return a->expert < b->expert ? -1 : a->expert > b->expert;
}

static int cmp_hot_reads(const void *pa, const void *pb)
{
	const struct top_hot *a = pa, *b = pb;

	if (a->reads != b->reads)
		return a->reads < b->reads ? 1 : -1;
	return cmp_hot_id(pa, pb);
}

static int cmp_hot_now(const void *pa, const void *pb)
{
	const struct top_hot *a = pa, *b = pb;

	if (a->now != b->now)
		return a->now < b->now ? 1 : -1;
	return cmp_hot_reads(pa, pb);
}

static int (*const cmp_hot[TOP_SORT_COUNT])(const void *, const void *) = {
	[TOP_SORT_READS] = cmp_hot_reads, [TOP_SORT_NOW] = cmp_hot_now, [TOP_SORT_ID] = cmp_hot_id,
};

struct top_hot *top_hottest(const struct top_view *v, size_t *n)
{
	const struct top_sample *s = &v->cur;
	bool prev_ok = v->have_prev && v->prev.expert_reads &&
		       v->prev.nlayers == s->nlayers && v->prev.nexperts == s->nexperts;
	struct top_hot *h;

	*n = 0;
	if (!s->expert_reads || !(h = malloc((size_t)s->nlayers * s->nexperts * sizeof *h)))
		return NULL;
	for (unsigned l = 0; l < s->nlayers; l++) {
		if (v->layer >= 0 && s->layer_id[l] != (uint64_t)v->layer)
			continue;
		for (unsigned e = 0; e < s->nexperts; e++) {
			size_t i = (size_t)l * s->nexperts + e;

			if (!s->expert_reads[i])
				continue;
			h[*n] = (struct top_hot){.layer = l, .expert = e,
						 .reads = s->expert_reads[i]};
			if (prev_ok)
				h[*n].now = top_rate(v, s->expert_reads[i], v->prev.expert_reads[i]);
			(*n)++;
		}
	}
	qsort(h, *n, sizeof *h, cmp_hot[v->sort]);
	return h;
}

unsigned top_hot_layers(const struct top_sample *s, unsigned *idx, unsigned cap)
{
	unsigned n = 0;

	for (unsigned l = 0; cap > 0 && l < s->nlayers; l++) {
		unsigned i;

		if (!s->layer_bytes[l])
			continue;
		/* full: only a layer above the last one kept gets in, in its place */
		if (n == cap && s->layer_bytes[idx[cap - 1]] >= s->layer_bytes[l])
			continue;
		i = n < cap ? n++ : cap - 1;
		for (; i > 0 && s->layer_bytes[idx[i - 1]] < s->layer_bytes[l]; i--)
			idx[i] = idx[i - 1];
		idx[i] = l;
	}
	return n;
}

/* ---- the heat map ---------------------------------------------------------------------- */

unsigned top_fold(unsigned n, unsigned max, unsigned *per)
{
	*per = 0;
	if (!n || !max)
		return 0;
	*per = (n + max - 1) / max;
	return (n + *per - 1) / *per;
}

bool top_heat_make(const struct top_sample *s, unsigned max_rows, unsigned max_cols,
		   struct top_heat *h)
{
	memset(h, 0, sizeof *h);
	h->rows = top_fold(s->nlayers, max_rows, &h->per_row);
	h->cols = top_fold(s->nexperts, max_cols, &h->per_col);
	if (!s->expert_reads || !h->rows || !h->cols ||
	    !(h->cells = calloc((size_t)h->rows * h->cols, sizeof *h->cells))) {
		memset(h, 0, sizeof *h);
		return false;
	}
	for (unsigned l = 0; l < s->nlayers; l++) {
		uint64_t *row = h->cells + (size_t)(l / h->per_row) * h->cols;

		for (unsigned e = 0; e < s->nexperts; e++) {
			uint64_t *c = &row[e / h->per_col], v = s->expert_reads[(size_t)l * s->nexperts + e];

			*c = *c > UINT64_MAX - v ? UINT64_MAX : *c + v;
		}
	}
	for (size_t i = 0; i < (size_t)h->rows * h->cols; i++)
		h->max = h->cells[i] > h->max ? h->cells[i] : h->max;
	return true;
}

void top_heat_free(struct top_heat *h)
{
	free(h->cells);
	memset(h, 0, sizeof *h);
}

void top_heat_row_layers(const struct top_heat *h, const struct top_sample *s, unsigned r,
			 unsigned *first, unsigned *last)
{
	*first = r * h->per_row;
	*last = *first + h->per_row < s->nlayers ? *first + h->per_row - 1 : s->nlayers - 1;
}
