/*
 * benchutil.h - what readbench and loaderbench share: the page they align
 * O_DIRECT to, the generator that picks objects, and how an object is cut
 * into the page-aligned pieces a loader reads at once.
 */
#ifndef MOEPACK_BENCHUTIL_H
#define MOEPACK_BENCHUTIL_H

#include <stdint.h>

#define PAGE 4096u

static inline uint64_t round_up(uint64_t v, uint64_t unit)
{
	return (v + unit - 1) / unit * unit;
}

static inline uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Piece i of `parts` of len bytes, cut on page boundaries so that O_DIRECT
 * takes it: [*begin, *begin + *n), empty past the end. */
static inline void part_bounds(uint64_t len, unsigned parts, unsigned i, uint64_t *begin,
			       uint64_t *n)
{
	uint64_t step = round_up((len + parts - 1) / parts, PAGE);
	uint64_t b = (uint64_t)i * step, e = b + step < len ? b + step : len;

	*begin = b < len ? b : len;
	*n = e > *begin ? e - *begin : 0;
}

#endif
