#!/usr/bin/env python3
"""checkseal.py PACK SEAL [PACK_SHA256|-] - check a builder's PACK.seal on its own.

Independent of moepack's C code: parses the seal (moepack-pack(5)), recomputes
the chunk layout of a pack whose objects are contiguous (header and index up
to the first object, then each role of each object cut into chunk_size
pieces from its own start), hashes every chunk of PACK and compares.  Prints
"OK CHUNKS unanchored|anchored" or the first problem, exit 1.
"""
import hashlib
import struct
import sys


def main():
    pack, seal = sys.argv[1], sys.argv[2]
    want_sha = sys.argv[3] if len(sys.argv) > 3 else "-"
    s = open(seal, "rb").read()
    if s[:16] != b"MOEPACKSEALv1\0\0\0":
        return "bad magic"
    version, hsize, flags, res = struct.unpack_from("<IIII", s, 16)
    csize, count, psize = struct.unpack_from("<QQQ", s, 32)
    pack_sha, index_sha = s[56:88], s[88:120]
    if (version, hsize, res) != (1, 128, 0) or len(s) != 128 + 32 * count + 32:
        return "bad header or size"
    if hashlib.sha256(s[:-32]).digest() != s[-32:]:
        return "bad seal digest"
    p = open(pack, "rb").read()
    if len(p) != psize:
        return "pack size %d, seal says %d" % (len(p), psize)
    n, data_start = struct.unpack_from("<QQ", p, 24)
    if hashlib.sha256(p[:40 + 152 * n]).digest() != index_sha:
        return "index digest differs"
    entries = [struct.unpack_from("<QQ", p, 40 + 152 * i + 136) for i in range(n)]
    ranges = [(0, entries[0][0])] + [(off, off + nb) for off, nb in entries]
    chunks = []
    for a, b in ranges:
        for x in range(a, b, csize):
            chunks.append((x, min(b, x + csize)))
    if chunks[-1][1] != len(p) or len(chunks) != count:
        return "layout has %d chunks, seal %d" % (len(chunks), count)
    for k, (a, b) in enumerate(chunks):
        if hashlib.sha256(p[a:b]).digest() != s[128 + 32 * k:160 + 32 * k]:
            return "chunk %d [%d, %d) differs" % (k, a, b)
    anchored = not (flags & 1)
    if anchored and pack_sha != hashlib.sha256(p).digest():
        return "anchored pack_sha256 is not the pack's"
    if anchored != (want_sha != "-") or (anchored and pack_sha.hex() != want_sha):
        return "anchoring differs from the manifest"
    print("OK %d %s" % (count, "anchored" if anchored else "unanchored"))
    return None


if __name__ == "__main__":
    problem = main()
    if problem:
        print("BAD " + problem)
        sys.exit(1)
