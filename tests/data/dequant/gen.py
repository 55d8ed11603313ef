#!/usr/bin/env python3
"""gen.py - regenerate the Q2_K / Q3_K / MXFP4 dequantization fixtures.

Every K-quant block here is written by ggml's own quantizer, then (for the
NaN, Inf and subnormal cases) has its fp16 super-block scale bytes patched;
MXFP4 blocks are ggml-quantized too, or built byte by byte to sweep every
scale byte and code.  ggml's own dequantizer turns the result into float32.
ggml is reached through tests/ggml.py, which loads libggml-base.so with
ctypes (it says where it looks: GGML_NODE_MODULES, GGML_LIB).  See README
in this directory.

Usage: gen.py [--out DIR] [--seed N] [--exhaustive]
Writes DIR/q2_k.bin, DIR/q2_k.f32, DIR/q3_k.bin, DIR/q3_k.f32, DIR/mxfp4.bin,
DIR/mxfp4.f32 and DIR/cases.txt (one line per block: index and what it
covers).  --exhaustive also writes DIR/mxfp4_all.bin and .f32: 4096 MXFP4
blocks, 16 for each scale byte 0..255, in which every one of the 32
positions holds every nibble 0..15 once (too big to commit; the tests make
it when ggml is at hand).
Exit 77 (with the reason on stderr) when ggml cannot be loaded.
"""
import argparse
import array
import os
import random
import struct
import sys

BLOCK = {"Q2_K": 84, "Q3_K": 110, "MXFP4": 17}
WEIGHTS = {"Q2_K": 256, "Q3_K": 256, "MXFP4": 32}
# Offsets of the fp16 scales inside a block: Q2_K d, dmin; Q3_K d.
SCALES = {"Q2_K": (80, 82), "Q3_K": (108,)}


def load_ggml():
    """tests/ggml.py, which finds libggml-base.so (see there)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    import ggml
    why = ggml.unusable()
    if why:
        return None, why
    return ggml.get(), None


def quantize(g, t, n, seed, sigma):
    # random.Random(seed).gauss(0, sigma), n times, rounded to float32
    # (sigma is at most 1e37: float32 holds every draw)
    rng = random.Random(seed)
    src = array.array("f", (rng.gauss(0.0, sigma) for _ in range(n)))
    return g.quantize(t, src, nrows=n // WEIGHTS[t])


def patch(block, offset, half):
    b = bytearray(block)
    b[offset:offset + 2] = struct.pack("<H", half)
    return bytes(b)


def mxfp4_block(e, qs):
    return bytes([e]) + bytes(qs)


def mxfp4_cases(go, seed):
    """(label, block bytes) for the committed MXFP4 blocks: ggml-quantized
    data at small, ordinary and huge scales, then every scale byte once
    with every code in both halves (weight j: nibble j, weight j + 16:
    nibble 15 - j), then random bytes."""
    rnd = random.Random(seed)
    out = []

    def add(label, data):
        for i in range(len(data) // 17):
            out.append(("%s #%d" % (label, i), data[i * 17:(i + 1) * 17]))

    add("gaussian sigma 1", quantize(go, "MXFP4", 4 * 32, seed, 1.0))
    add("gaussian sigma 1e-36 (small scales)", quantize(go, "MXFP4", 2 * 32, seed + 1, 1e-36))
    # ggml's quantizer computes e = floor(log2(amax)) - 2 + 127, which is
    # negative here and wraps in the cast to uint8_t: e = 252 or 253, with
    # which the large codes are huge or Inf
    add("gaussian sigma 1e-39 (subnormal input: ggml's e wraps)",
        quantize(go, "MXFP4", 2 * 32, seed + 4, 1e-39))
    add("gaussian sigma 1e30 (large scales)", quantize(go, "MXFP4", 2 * 32, seed + 2, 1e30))
    add("gaussian sigma 1e37 (scales near the top)",
        quantize(go, "MXFP4", 2 * 32, seed + 3, 1e37))
    add("all-zero input", quantize(go, "MXFP4", 32, seed, 0.0))
    add("all-zero bytes", bytes(17))
    for e in range(256):
        add("e = %d, every code" % e,
            mxfp4_block(e, (j | (15 - j) << 4 for j in range(16))))
    add("random bytes", bytes(rnd.getrandbits(8) for _ in range(8 * 17)))
    return out


def mxfp4_exhaustive():
    """16 blocks per scale byte: in block k, weight j has nibble (j + k) % 16
    and weight j + 16 nibble (j + k + 8) % 16, so that over the 16 blocks
    every position holds every nibble once."""
    return b"".join(mxfp4_block(e, (((j + k) & 15) | ((j + k + 8) & 15) << 4
                                    for j in range(16)))
                    for e in range(256) for k in range(16))


def cases(go, t, seed):
    """(label, block bytes) for every fixture block of type t."""
    if t == "MXFP4":
        return mxfp4_cases(go, seed)
    bb = BLOCK[t]
    rnd = random.Random(seed)
    out = []

    def add(label, data):
        for i in range(len(data) // bb):
            out.append(("%s #%d" % (label, i), data[i * bb:(i + 1) * bb]))

    add("gaussian sigma 1", quantize(go, t, 4 * 256, seed, 1.0))
    add("gaussian sigma 1e4 (large scales)", quantize(go, t, 2 * 256, seed + 1, 1e4))
    add("gaussian sigma 2e-6 (subnormal scales)", quantize(go, t, 2 * 256, seed + 2, 2e-6))
    add("gaussian sigma 1e-9 (scales underflow)", quantize(go, t, 256, seed + 3, 1e-9))
    add("all-zero input", quantize(go, t, 256, seed, 0.0))
    add("all-zero bytes", bytes(bb))

    base = quantize(go, t, 256, seed + 4, 1.0)
    halves = [
        (0x7C00, "+Inf"), (0xFC00, "-Inf"), (0x7E00, "quiet NaN"),
        (0x7C01, "signalling NaN"), (0xFE55, "negative NaN with payload"),
        (0x0001, "smallest subnormal"), (0x03FF, "largest subnormal"),
        (0x8200, "negative subnormal"), (0x0400, "smallest normal"),
        (0x7BFF, "largest finite"), (0x8000, "negative zero"),
    ]
    for off_i, off in enumerate(SCALES[t]):
        name = ("d", "dmin")[off_i]
        for h, what in halves:
            add("%s = %s (0x%04x)" % (name, what, h), patch(base, off, h))
    # Random bytes everywhere, scales included: every exponent is possible.
    add("random bytes", bytes(rnd.getrandbits(8) for _ in range(3 * bb)))
    return out


def write(go, out, t, name, data):
    """DIR/name.bin and what ggml's dequantizer makes of it, DIR/name.f32."""
    f32 = go.dequantize(t, data)
    assert len(f32) == WEIGHTS[t] * (len(data) // BLOCK[t])
    if sys.byteorder != "little":
        f32.byteswap()
    with open(os.path.join(out, name + ".bin"), "wb") as f:
        f.write(data)
    with open(os.path.join(out, name + ".f32"), "wb") as f:
        f.write(f32.tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--exhaustive", action="store_true")
    a = ap.parse_args()
    go, why = load_ggml()
    if go is None:
        print("gen.py: ggml cannot be used: %s" % why, file=sys.stderr)
        return 77
    os.makedirs(a.out, exist_ok=True)
    lines = []
    for t in ("Q2_K", "Q3_K", "MXFP4"):
        blocks = cases(go, t, a.seed)
        write(go, a.out, t, t.lower(), b"".join(b for _, b in blocks))
        lines += ["%s %d %s" % (t, i, label) for i, (label, _) in enumerate(blocks)]
    if a.exhaustive:
        write(go, a.out, "MXFP4", "mxfp4_all", mxfp4_exhaustive())
    with open(os.path.join(a.out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
