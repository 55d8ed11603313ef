#!/usr/bin/env python3
"""load_expert.py - read one expert's role from a moepackfs mount.

    python3 contrib/load_expert.py /srv/models/kimi 17 5 up

maps MOUNT/layers/017/005/up (no copy: the pages come straight from the
mount's page cache), checks its extended attributes, and decodes the scales
of the first GGML k-quant block.  Q2_K blocks are 84 bytes per 256 weights
(scales[16], qs[64], then d and dmin as IEEE half floats); Q3_K blocks are
110 bytes (hmask[32], qs[64], scales[12], then d).
"""
import mmap
import os
import struct
import sys

BLOCKS = {
    # dtype: (block bytes, offset of d, offset of dmin or None)
    "Q2_K": (84, 80, 82),
    "Q3_K": (110, 108, None),
}


def xattr(path, name):
    return os.getxattr(path, "user.moepack." + name).decode()


def main(argv):
    if len(argv) != 5:
        print("usage: load_expert.py MOUNT LAYER EXPERT up|gate|down", file=sys.stderr)
        return 2
    mount, layer, expert, role = argv[1], int(argv[2]), int(argv[3]), argv[4]
    # expert directories are zero-padded to at least three digits
    width = max(3, len(str(len(os.listdir(os.path.join(mount, "layers", "%03d" % layer))) - 1)))
    path = os.path.join(mount, "layers", "%03d" % layer, "%0*d" % (width, expert), role)

    dtype = xattr(path, "dtype")
    nbytes = int(xattr(path, "nbytes"))
    print("%s: %s %s, %d bytes, shape %s, pack offset %s, generation %s" % (
        path, xattr(path, "tensor"), dtype, nbytes, xattr(path, "shape"),
        xattr(path, "offset"), xattr(path, "generation")))
    if dtype not in BLOCKS:
        print("no decoder here for %s" % dtype, file=sys.stderr)
        return 1
    block, d_at, dmin_at = BLOCKS[dtype]

    with open(path, "rb") as f:
        view = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    try:
        if len(view) != nbytes or nbytes % block:
            print("size %d is not whole %s blocks" % (len(view), dtype), file=sys.stderr)
            return 1
        (d,) = struct.unpack_from("<e", view, d_at)
        line = "first block: d = %g" % d
        if dmin_at is not None:
            (dmin,) = struct.unpack_from("<e", view, dmin_at)
            line += ", dmin = %g" % dmin
        print(line + " (%d blocks)" % (nbytes // block))
    finally:
        view.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
