#!/usr/bin/env python3
"""mkbuildseed.py SRCDIR OUT - the seed of fuzz_build (see fuzz_build.c for
the container): the test checkpoint of tests/data/build/mkshards.py (sparse,
92 MoE layers, 2 experts) and its config.json, each shard cut to its
metadata, the rest given as the shard's apparent size (a hole)."""
import os
import struct
import subprocess
import sys
import tempfile


def main():
    srcdir, out = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, os.path.join(srcdir, "tests/data/build/mkshards.py"),
                        d, "--sparse"], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "config.json"), "rb") as f:
            cfg = f.read()
        blob = struct.pack("<B", 2) + struct.pack("<I", len(cfg)) + cfg
        for i in range(3):
            path = os.path.join(d, "kimi-k3-test-%05d-of-00003.gguf" % (i + 1))
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                meta = f.read(4 << 20).rstrip(b"\0")
            blob += struct.pack("<IQ", len(meta), size) + meta
    with open(out, "wb") as f:
        f.write(blob)


main()
