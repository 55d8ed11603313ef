/* scanreport.c - the wording of the payload scan's findings (scanreport.h). */
#include "config.h"

#include "payload/scanreport.h"

#include <stdio.h>
#include <string.h>

void mp_scan_problem_raw_scale(char *buf, size_t len, const struct mp_scan_problem *p)
{
	int digits = 4;

	for (unsigned i = 0; p->codec && i < p->codec->nscales; i++)
		if (strcmp(p->codec->scales[i].name, p->first_scale) == 0)
			digits = 2 * (int)p->codec->scales[i].bytes;
	snprintf(buf, len, "0x%0*x", digits, (unsigned)p->first_value);
}

static void describe_kind(char *buf, size_t len, const struct mp_scan_problem *p)
{
	char value[96];

	switch (p->kind) {
	case MP_SCAN_NONFINITE_SCALE:
		/* what the scale's bits mean is its type's to say */
		if (p->codec)
			p->codec->describe_scale(value, sizeof value, p->first_value);
		else
			mp_scan_problem_raw_scale(value, sizeof value, p);
		snprintf(buf, len, " %s: non-finite scale: %llu in the role, first at "
			 "block %llu (%s = %s)", mp_role_name(p->role),
			 (unsigned long long)p->count, (unsigned long long)p->first_block,
			 p->first_scale, value);
		break;
	case MP_SCAN_ZERO_ROLE:
		snprintf(buf, len, " %s: all-zero role%s", mp_role_name(p->role),
			 p->hole ? " (a hole in the file: never written)" : "");
		break;
	case MP_SCAN_ZERO_SCALES:
		if (p->role < MP_ROLE_COUNT)
			snprintf(buf, len, " %s: all-zero scales (every block of the role)",
				 mp_role_name(p->role));
		else
			snprintf(buf, len, ": all-zero scales (every block of up, gate and down)");
		break;
	}
}

/* where (already in buf, n bytes), then what */
static void describe_at(char *buf, size_t len, int n, const struct mp_scan_problem *p)
{
	if (n < 0 || (size_t)n >= len)
		return;
	describe_kind(buf + n, len - (size_t)n, p);
}

void mp_scan_problem_describe(char *buf, size_t len, const struct mp_scan_problem *p)
{
	describe_at(buf, len, snprintf(buf, len, "layer %u expert %llu", (unsigned)p->layer,
				       (unsigned long long)p->expert), p);
}

bool mp_scan_problem_same(const struct mp_scan_problem *a, const struct mp_scan_problem *b)
{
	if (a->kind != b->kind || a->role != b->role || a->codec != b->codec)
		return false;
	if (a->kind == MP_SCAN_ZERO_ROLE)
		return a->hole == b->hole;
	if (a->kind == MP_SCAN_NONFINITE_SCALE)
		return a->count == b->count && a->first_block == b->first_block &&
		       a->first_value == b->first_value &&
		       strcmp(a->first_scale, b->first_scale) == 0;
	return true;
}

void mp_scan_run_describe(char *buf, size_t len, const struct mp_scan_problem *first,
			  const struct mp_scan_problem *last, uint64_t experts)
{
	int n;

	if (first->layer == last->layer)
		n = snprintf(buf, len, "layer %u experts %llu to %llu (%llu experts)",
			     (unsigned)first->layer, (unsigned long long)first->expert,
			     (unsigned long long)last->expert, (unsigned long long)experts);
	else
		n = snprintf(buf, len, "layer %u expert %llu to layer %u expert %llu (%llu "
			     "experts)", (unsigned)first->layer, (unsigned long long)first->expert,
			     (unsigned)last->layer, (unsigned long long)last->expert,
			     (unsigned long long)experts);
	describe_at(buf, len, n, first);
}

/* ---- runs ---------------------------------------------------------------- */

/* The expert's place in pack order. */
static uint64_t object_of(const struct mp_scan_runs *r, const struct mp_scan_problem *p)
{
	long li = mp_pack_layer_index(r->pack, p->layer);

	return mp_pack_object(r->pack, li < 0 ? 0 : (uint64_t)li, p->expert);
}

static void emit(const struct mp_scan_runs *r, const struct mp_scan_problem *p,
		 const struct mp_scan_problem *last, uint64_t experts)
{
	char line[MP_MSG_MAX];

	if (experts == 1)
		mp_scan_problem_describe(line, sizeof line, p);
	else
		mp_scan_run_describe(line, sizeof line, p, last, experts);
	r->emit(line, r->arg);
}

/* The run so far, one line per finding. */
static void flush_run(struct mp_scan_runs *r)
{
	for (size_t i = 0; i < r->nrun; i++)
		emit(r, &r->run[i], &r->last, r->experts);
	r->nrun = 0;
	r->experts = 0;
}

/* The findings of one expert (cur) join the run when they are its
 * findings and the expert comes right after the run's last. */
static void close_expert(struct mp_scan_runs *r)
{
	bool same = r->experts && r->ncur == r->nrun && r->cur_object == r->last_object + 1;

	for (size_t i = 0; same && i < r->ncur; i++)
		same = mp_scan_problem_same(&r->cur[i], &r->run[i]);
	if (!same) {
		flush_run(r);
		memcpy(r->run, r->cur, r->ncur * sizeof r->cur[0]);
		r->nrun = r->ncur;
	}
	r->experts++;
	r->last = r->cur[0];
	r->last_object = r->cur_object;
	r->ncur = 0;
}

void mp_scan_runs_init(struct mp_scan_runs *r, const struct mp_pack *pack,
		       void (*emit_line)(const char *line, void *arg), void *arg)
{
	*r = (struct mp_scan_runs){.pack = pack, .emit = emit_line, .arg = arg};
}

void mp_scan_runs_add(struct mp_scan_runs *r, const struct mp_scan_problem *p)
{
	uint64_t object = object_of(r, p);

	if (r->ncur && object != r->cur_object)
		close_expert(r);
	if (r->ncur == MP_SCAN_RUN_FINDINGS) {
		/* more findings than an expert can have: said as they come */
		flush_run(r);
		emit(r, p, p, 1);
		return;
	}
	r->cur[r->ncur++] = *p;
	r->cur_object = object;
}

void mp_scan_runs_finish(struct mp_scan_runs *r)
{
	if (r->ncur)
		close_expert(r);
	flush_run(r);
}

void mp_scan_counts_describe(char *buf, size_t len, const struct mp_scan_summary *s)
{
	int n = snprintf(buf, len, "%llu non-finite scales in %llu roles, %llu all-zero roles, "
			 "%llu experts with all-zero scales",
			 (unsigned long long)s->nonfinite_scales,
			 (unsigned long long)s->nonfinite_roles,
			 (unsigned long long)s->zero_roles,
			 (unsigned long long)s->zero_scale_experts);

	/* only types that report roles on their own (MXFP4) can add to it */
	if (s->zero_scale_roles && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", %llu roles with all-zero scales",
			 (unsigned long long)s->zero_scale_roles);
}

uint64_t mp_scan_problem_total(const struct mp_scan_summary *s)
{
	return s->nonfinite_roles + s->zero_roles + s->zero_scale_experts + s->zero_scale_roles;
}
