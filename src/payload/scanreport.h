/*
 * scanreport.h - the wording of the payload scan's findings.
 *
 * `moepack verify --payload` and `moepackfs -o verify=payload` report the
 * same scan; these functions are the one place that words it, so that the
 * two programs say the same thing about the same pack.
 */
#ifndef MOEPACK_SCANREPORT_H
#define MOEPACK_SCANREPORT_H

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
