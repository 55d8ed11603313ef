/*
 * scanreport.h - the wording of the payload scan's findings.
 *
 * `moepack verify --payload` and `moepackfs -o verify=payload` report the
 * same scan; these functions are the one place that words it, so that the
 * two programs say the same thing about the same pack.
 */
#ifndef MOEPACK_SCANREPORT_H
#define MOEPACK_SCANREPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "payload/scan.h"

/*
 * One problem, e.g. "layer 3 expert 7 up: all-zero role" or "layer 3
 * expert 7 down: non-finite scale: 1 in the role, first at block 9 (e =
 * 0xff, weight = code x 2^127: |code| >= 2 is Inf)", without the
 * pack's path or a newline.  Truncated to fit len (always terminated when
 * len > 0).
 */
void mp_scan_problem_describe(char *buf, size_t len, const struct mp_scan_problem *p);

/* Whether a and b are the same finding but for the expert: kind, role,
 * type and what they say of it. */
bool mp_scan_problem_same(const struct mp_scan_problem *a, const struct mp_scan_problem *b);

/*
 * The finding first (and each of `experts` consecutive experts in pack
 * order up to last) has: "layer 1 expert 0 to layer 92 expert 2 (276
 * experts) up: all-zero role (a hole in the file: never written)", or
 * "layer 3 experts 4 to 9 (6 experts): ..." within one layer.  Only
 * last's layer and expert are read.  Truncated to fit len.
 */
void mp_scan_run_describe(char *buf, size_t len, const struct mp_scan_problem *first,
			  const struct mp_scan_problem *last, uint64_t experts);

/*
 * The problems of a scan, in the order it reports them (pack order, an
 * expert's together), folded into runs: consecutive experts that have the
 * same findings make one line per finding (mp_scan_run_describe), an
 * expert alone its own lines (mp_scan_problem_describe), so that a sparse
 * pack says in four lines what it would say in four per expert.  emit gets
 * each line, without a newline, in pack order.  No allocation; the state
 * is a few problems.
 */
/* more than an expert can have: two findings a role, and its own */
#define MP_SCAN_RUN_FINDINGS (2 * MP_ROLE_COUNT + 2)
struct mp_scan_runs {
	const struct mp_pack *pack;
	void (*emit)(const char *line, void *arg);
	void *arg;
	struct mp_scan_problem cur[MP_SCAN_RUN_FINDINGS]; /* the expert being reported */
	size_t ncur;
	uint64_t cur_object;
	struct mp_scan_problem run[MP_SCAN_RUN_FINDINGS]; /* the run's findings (its first) */
	size_t nrun;
	uint64_t experts;     /* in the run */
	struct mp_scan_problem last; /* where the run ends */
	uint64_t last_object;
};
void mp_scan_runs_init(struct mp_scan_runs *r, const struct mp_pack *pack,
		       void (*emit)(const char *line, void *arg), void *arg);
void mp_scan_runs_add(struct mp_scan_runs *r, const struct mp_scan_problem *p);
/* The last run's lines. */
void mp_scan_runs_finish(struct mp_scan_runs *r);

/*
 * A non-finite scale's raw bits as hex, as wide as the scale: "0x7e00" for
 * an fp16 d or dmin, "0xfd" for MXFP4's byte e.  For --json.
 */
void mp_scan_problem_raw_scale(char *buf, size_t len, const struct mp_scan_problem *p);

/*
 * The counts of a scan, "N non-finite scales in N roles, N all-zero roles,
 * N experts with all-zero scales", then ", N roles with all-zero scales"
 * when there are any (MXFP4 roles only), truncated to fit len.
 */
void mp_scan_counts_describe(char *buf, size_t len, const struct mp_scan_summary *s);

/* How many problems the summary holds (roles and experts at fault). */
uint64_t mp_scan_problem_total(const struct mp_scan_summary *s);

#endif
