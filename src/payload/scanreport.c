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
