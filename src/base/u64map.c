/* u64map.c - open-addressing hash map of 64-bit keys and values. */
#include "config.h"

#include "base/u64map.h"

#include <stdlib.h>

#define FIRST_CAP 16

/* splitmix64's finaliser: every key bit moves every slot bit. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static struct mp_u64map_slot *probe(const struct mp_u64map *m, uint64_t key)
{
	size_t i = (size_t)mix(key) & (m->cap - 1);

	while (m->slots[i].used && m->slots[i].key != key)
		i = (i + 1) & (m->cap - 1);
	return &m->slots[i];
}

static bool grow(struct mp_u64map *m)
{
	struct mp_u64map old = *m;
	size_t cap = old.cap ? old.cap * 2 : FIRST_CAP;

	if (cap < old.cap)
		return false;
	m->slots = calloc(cap, sizeof *m->slots);
	if (!m->slots) {
		*m = old;
		return false;
	}
	m->cap = cap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.slots[i].used)
			*probe(m, old.slots[i].key) = old.slots[i];
	free(old.slots);
	return true;
}

uint64_t *mp_u64map_put(struct mp_u64map *m, uint64_t key, bool *fresh)
{
	struct mp_u64map_slot *s;

	*fresh = false;
	if (m->cap) {
		s = probe(m, key);
		if (s->used)
			return &s->value;
	}
	if ((m->count + 1) * 2 > m->cap && !grow(m))
		return NULL;
	s = probe(m, key);
	*s = (struct mp_u64map_slot){key, 0, true};
	m->count++;
	*fresh = true;
	return &s->value;
}

uint64_t *mp_u64map_find(const struct mp_u64map *m, uint64_t key)
{
	struct mp_u64map_slot *s;

	if (!m->cap)
		return NULL;
	s = probe(m, key);
	return s->used ? &s->value : NULL;
}

void mp_u64map_free(struct mp_u64map *m)
{
	free(m->slots);
	*m = (struct mp_u64map)MP_U64MAP_INIT;
}
