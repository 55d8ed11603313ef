/* scanreport.c - the wording of the payload scan's findings (scanreport.h). */
#include "config.h"

#include "payload/scanreport.h"

#include <stdio.h>

/* The fp16 bits of a non-finite scale: exponent all ones, so NaN or Inf. */
static const char *fp16_kind(uint16_t h)
{
	if ((h & 0x3ff) == 0)
		return h & 0x8000 ? "-Inf" : "+Inf";
	return "NaN";
}

static void describe_kind(char *buf, size_t len, const struct mp_scan_problem *p)
{
	switch (p->kind) {
	case MP_SCAN_NONFINITE_SCALE:
		snprintf(buf, len, " %s: non-finite scale: %llu in the role, first at "
			 "block %llu (%s = %s, 0x%04x)", mp_role_name(p->role),
			 (unsigned long long)p->count, (unsigned long long)p->first_block,
			 p->first_scale, fp16_kind(p->first_value), p->first_value);
		break;
	case MP_SCAN_ZERO_ROLE:
		snprintf(buf, len, " %s: all-zero role%s", mp_role_name(p->role),
			 p->hole ? " (a hole in the file: never written)" : "");
		break;
	case MP_SCAN_ZERO_SCALES:
		snprintf(buf, len, ": all-zero scales (every block of up, gate and down)");
		break;
	}
}

void mp_scan_problem_describe(char *buf, size_t len, const struct mp_scan_problem *p)
{
	int n = snprintf(buf, len, "layer %u expert %llu", (unsigned)p->layer,
			 (unsigned long long)p->expert);

	if (n < 0 || (size_t)n >= len)
		return;
	describe_kind(buf + n, len - (size_t)n, p);
}

void mp_scan_counts_describe(char *buf, size_t len, const struct mp_scan_summary *s)
{
	snprintf(buf, len, "%llu non-finite scales in %llu roles, %llu all-zero roles, "
		 "%llu experts with all-zero scales",
		 (unsigned long long)s->nonfinite_scales,
		 (unsigned long long)s->nonfinite_roles, (unsigned long long)s->zero_roles,
		 (unsigned long long)s->zero_scale_experts);
}

uint64_t mp_scan_problem_total(const struct mp_scan_summary *s)
{
	return s->nonfinite_roles + s->zero_roles + s->zero_scale_experts;
}
