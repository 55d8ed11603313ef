/*
 * u64map.h - a hash map from 64-bit keys to 64-bit values.
 *
 * Open addressing, grown by doubling so that it stays at most half full:
 * memory is about 32 bytes per key put.  Whoever puts keys taken from a
 * file bounds their number first (nothing here knows a limit).  Not safe
 * for concurrent use; one owner.
 */
#ifndef MOEPACK_U64MAP_H
#define MOEPACK_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mp_u64map_slot {
	uint64_t key, value;
	bool used;
};

struct mp_u64map {
	struct mp_u64map_slot *slots;
	size_t cap, count; /* cap is 0 or a power of two */
};

#define MP_U64MAP_INIT {NULL, 0, 0}

/*
 * The value of key, inserted as 0 (and *fresh set) when it was not there;
 * NULL when out of memory (the map is unchanged then).  The pointer is valid
 * until the next put.
 */
uint64_t *mp_u64map_put(struct mp_u64map *m, uint64_t key, bool *fresh);
/* The value of key, or NULL when it is not there. */
uint64_t *mp_u64map_find(const struct mp_u64map *m, uint64_t key);
void mp_u64map_free(struct mp_u64map *m);

#endif
