#!/usr/bin/env python3
"""ep_check.py - an SGLANG-EXPERTPACK-v1 pack mounted by moepackfs, read the
way its users read it (tests/ep-mount.test).

  loader MANIFEST PACK ORIGINAL LAYERS EXPERTS TOP_K
      SGLang's runtime as moepack-pack(5) describes it: its constructor's
      checks, in its order, on PACK with MANIFEST (both through the mount),
      then every object read whole with one O_DIRECT pread at the offset
      the index gives, each compared with ORIGINAL (the pack file itself,
      never through the mount).  Prints "loader: N objects, B bytes, M
      mismatches"; exit 1 on a refusal or a mismatch.
  reads MOUNT ORIGINAL MANIFEST
      Every role and object file of MOUNT read buffered, with O_DIRECT and
      through mmap, compared with ORIGINAL at the offset its xattr names;
      its xattrs (dtype, dtype_id, tensor, sha256, generation, layer,
      expert) compared with what the index and manifest say.  Prints one
      line per failure and "reads: N files"; exit 1 on any failure.

Plain Python 3.
"""
import hashlib
import json
import mmap
import os
import struct
import sys

from fileio import pread_all

# the layouts of moepack-pack(5): a 176-byte header, 328-byte entries
HEADER = struct.Struct("<24sIIIIQQQIIII32s32s32s")
ENTRY = struct.Struct("<HHBBH16s80s6Q32s32s32s4Q16s16sQQ")
MAGIC = b"SGLANG-EXPERTPACK-v1\0\0\0\0"
ALIGN = 4096
ROLES = ("gate", "up", "down")

failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 20:
        print("ep_check: " + msg, flush=True)


def header_fields(raw):
    f = HEADER.unpack(raw[:HEADER.size])
    names = ("magic", "version", "header_bytes", "entry_bytes", "flags", "index_count",
             "data_start", "alignment", "num_layers", "num_experts", "top_k", "role_count",
             "model", "source", "config")
    return dict(zip(names, f))


def index_entries(fd, h):
    """(layer, expert, role) -> (offset, nbytes, checksum, generation, name, dtype)."""
    out = {}
    raw = pread_all(fd, h["index_count"] * h["entry_bytes"], h["header_bytes"])
    for i in range(h["index_count"]):
        b = raw[i * h["entry_bytes"]:(i + 1) * h["entry_bytes"]]
        out.update(entry(b))
    return out


def entry(b):
    """One entry: (layer, expert, role) -> (offset, nbytes, checksum,
    generation, tensor name, dtype, dtype id)."""
    f = ENTRY.unpack(b[:ENTRY.size])
    text = lambda v: v.split(b"\0")[0].decode()
    return {(f[0], f[1], f[2]): (f[11], f[12], f[15], f[22], text(f[6]), text(f[5]), f[4])}


def loader(manifest_path, pack_path, original, layers, experts, top_k):
    pack = os.path.realpath(pack_path)
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    if not manifest.get("complete"):
        sys.exit("loader: expert-pack manifest is not complete")
    fd = os.open(pack, os.O_RDONLY)
    h = header_fields(pread_all(fd, HEADER.size, 0))
    if h["magic"] != MAGIC or h["version"] != 1:
        sys.exit("loader: expert-pack magic or version does not match")
    if (h["num_layers"], h["num_experts"], h["top_k"]) != (layers, experts, top_k):
        sys.exit("loader: expert-pack dimensions (%d, %d, %d) != (%d, %d, %d)" % (
            h["num_layers"], h["num_experts"], h["top_k"], layers, experts, top_k))
    entries = index_entries(fd, h)
    stride = int(manifest["object_stride"])
    if os.fstat(fd).st_size != h["data_start"] + layers * experts * stride:
        sys.exit("loader: expert-pack file size does not match its index")
    role_bytes = entries[(0, 0, 0)][1]
    ref = os.open(original, os.O_RDONLY)
    direct = os.open(pack, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, stride + ALIGN)
    n = total = bad = 0
    for layer in range(layers):
        for expert in range(experts):
            for r in range(3):
                want = h["data_start"] + (layer * experts + expert) * stride + r * role_bytes
                if entries[(layer, expert, r)][0] != want:
                    sys.exit("loader: expert-pack object layout mismatch at (%d, %d, %d)" % (
                        layer, expert, r))
            off = entries[(layer, expert, 0)][0]
            if off % ALIGN or stride % ALIGN:
                sys.exit("loader: expert-pack direct I/O requires aligned objects")
            got = os.preadv(direct, [memoryview(buf)[:stride]], off)
            n += 1
            total += got
            if got != stride or buf[:stride] != pread_all(ref, stride, off):
                bad += 1
    print("loader: %d objects, %d bytes, %d mismatches" % (n, total, bad))
    return 1 if bad else 0


def xattr(path, name):
    return os.getxattr(path, "user.moepack." + name).decode()


def direct_read(path, size):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, (size + ALIGN - 1) // ALIGN * ALIGN + ALIGN)
        got = os.preadv(fd, [buf], 0)
        return bytes(buf[:got])
    finally:
        os.close(fd)


def mapped(path, size):
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ) as m:
        return bytes(m[:])


def generation(model_hex, source_hex, layer, expert):
    d = hashlib.sha256(("%s:%s:%d:%d" % (model_hex, source_hex, layer, expert)).encode())
    v = int.from_bytes(d.digest()[:8], "little")
    return v or 1


def check_file(path, ref_fd, want):
    """want: offset, nbytes and the xattrs' expected text."""
    data = pread_all(ref_fd, want["nbytes"], want["offset"])
    for how, read in (("buffered", lambda: open(path, "rb").read()),
                      ("O_DIRECT", lambda: direct_read(path, want["nbytes"])),
                      ("mmap", lambda: mapped(path, want["nbytes"]))):
        try:
            got = read()
        except OSError as e:
            fail("%s: %s read: %s" % (path, how, e))
            continue
        if got != data:
            fail("%s: %s read differs from the pack at %d" % (path, how, want["offset"]))
    for name, value in want["xattrs"].items():
        if xattr(path, name) != value:
            fail("%s: user.moepack.%s is %r, want %r" % (path, name, xattr(path, name), value))


def reads(mount, original, manifest_path):
    with open(manifest_path) as f:
        manifest = json.load(f)
    ref = os.open(original, os.O_RDONLY)
    h = header_fields(pread_all(ref, HEADER.size, 0))
    entries = index_entries(ref, h)
    model, source = manifest["model"]["model_identity_sha256"], manifest["source"]["sha256"]
    files = 0
    for layer in range(h["num_layers"]):
        for expert in range(h["num_experts"]):
            d = os.path.join(mount, "layers", "%03d" % layer, "%03d" % expert)
            if sorted(os.listdir(d)) != sorted(ROLES + ("object",)):
                fail("%s: lists %s" % (d, sorted(os.listdir(d))))
            gen = str(generation(model, source, layer, expert))
            es = [entries[(layer, expert, r)] for r in range(3)]
            for r, role in enumerate(ROLES):
                e = es[r]
                check_file(os.path.join(d, role), ref, {
                    "offset": e[0], "nbytes": e[1], "xattrs": {
                        "dtype": e[5], "dtype_id": str(e[6]), "tensor": e[4],
                        "sha256": e[2].hex(), "generation": gen, "layer": str(layer),
                        "expert": str(expert), "offset": str(e[0]), "nbytes": str(e[1])}})
                files += 1
            check_file(os.path.join(d, "object"), ref, {
                "offset": es[0][0], "nbytes": 3 * es[0][1], "xattrs": {
                    "dtype": ",".join(e[5] for e in es), "tensor": ",".join(e[4] for e in es),
                    "sha256": ",".join(e[2].hex() for e in es), "generation": gen}})
            files += 1
    print("reads: %d files" % files)
    return 1 if failures else 0


def main(argv):
    if len(argv) == 8 and argv[1] == "loader":
        return loader(argv[2], argv[3], argv[4], *(int(v) for v in argv[5:8]))
    if len(argv) == 5 and argv[1] == "reads":
        return reads(argv[2], argv[3], argv[4])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
