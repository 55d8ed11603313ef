/*
 * search.h - binary search over sorted 64-bit offsets: which chunk, object
 * or run of a table holds a given offset.
 */
#ifndef MOEPACK_SEARCH_H
#define MOEPACK_SEARCH_H

#include <stdint.h>

/* The last i < n with a[i] <= key, for an ascending a of n >= 1 entries
 * with a[0] <= key. */
static inline uint64_t mp_last_at_most(const uint64_t *a, uint64_t n, uint64_t key)
{
	uint64_t lo = 0, hi = n; /* a[lo] <= key < a[hi], a[n] taken as past key */

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (a[mid] <= key)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

#endif
