/*
 * le.h - little-endian integers in byte buffers: every number on disk in
 * the pack, seal and demo payload formats, the same bytes on any host.
 * memcpy and a byte swap on big-endian hosts: one load or store each.
 */
#ifndef MOEPACK_LE_H
#define MOEPACK_LE_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define MP_LE16(v) __builtin_bswap16(v)
#define MP_LE32(v) __builtin_bswap32(v)
#define MP_LE64(v) __builtin_bswap64(v)
#else
#define MP_LE16(v) (v)
#define MP_LE32(v) (v)
#define MP_LE64(v) (v)
#endif

static inline uint16_t mp_le16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof v);
	return MP_LE16(v);
}

static inline uint32_t mp_le32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof v);
	return MP_LE32(v);
}

static inline uint64_t mp_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof v);
	return MP_LE64(v);
}

static inline void mp_put_le16(unsigned char *p, uint16_t v)
{
	v = MP_LE16(v);
	memcpy(p, &v, sizeof v);
}

static inline void mp_put_le32(unsigned char *p, uint32_t v)
{
	v = MP_LE32(v);
	memcpy(p, &v, sizeof v);
}

static inline void mp_put_le64(unsigned char *p, uint64_t v)
{
	v = MP_LE64(v);
	memcpy(p, &v, sizeof v);
}

#endif
