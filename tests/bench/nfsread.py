#!/usr/bin/env python3
"""nfsread.py - the NFS side of `make bench` row 8: read files of an NFSv4
export with libnfs (one client context, one TCP connection, as a loader
process would hold), in BLOCK-sized preads, and print readbench's
key=value format:

    nfsread.py [-b BLOCK] [-n PASSES] [-c PACK] URL LIST

URL is the export's root (nfs://127.0.0.1/PSEUDO?version=4&nfsport=PORT);
LIST has lines "PATH PACK_OFFSET LENGTH", PATH inside the export.  Each
pass reads every file of LIST in order; the output line is

    mode=nfs bytes=N seconds=S MBps=M passes=P (median pass)

Timing covers the reads only: the mount (NFSv4 session setup) and the
opens come first.  With -c PACK a first, untimed pass compares every byte
with PACK at PACK_OFFSET and the script exits 1 on a difference.  Exit 2 on
bad usage, 3 when the export cannot be mounted or a file cannot be read.
"""
import ctypes
import ctypes.util
import getopt
import os
import re
import sys
import time


def main(argv):
    try:
        opts, args = getopt.getopt(argv[1:], "b:n:c:")
    except getopt.GetoptError as e:
        print("nfsread: %s" % e, file=sys.stderr)
        return 2
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    o = dict(opts)
    block = int(o.get("-b", 1 << 20))
    passes = int(o.get("-n", 3))
    pack = o.get("-c")
    url, list_path = args
    with open(list_path) as f:
        files = [(p, int(off), int(n)) for p, off, n in (line.split() for line in f if line.strip())]

    name = ctypes.util.find_library("nfs") or "libnfs.so.13"
    lib = ctypes.CDLL(name)
    vp, cp, u64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64

    class Url(ctypes.Structure):
        _fields_ = [("server", cp), ("path", cp), ("file", cp)]

    lib.nfs_init_context.restype = vp
    lib.nfs_get_error.restype, lib.nfs_get_error.argtypes = cp, [vp]
    lib.nfs_set_version.argtypes = [vp, ctypes.c_int]
    lib.nfs_set_timeout.argtypes = [vp, ctypes.c_int]
    lib.nfs4_set_client_name.argtypes = [vp, cp]
    lib.nfs_parse_url_dir.restype = ctypes.POINTER(Url)
    lib.nfs_parse_url_dir.argtypes = [vp, cp]
    lib.nfs_mount.argtypes = [vp, cp, cp]
    lib.nfs_open.argtypes = [vp, cp, ctypes.c_int, ctypes.POINTER(vp)]
    lib.nfs_close.argtypes = [vp, vp]
    # libnfs 6 (soname 16) turned pread's (offset, count, buf) around.
    soname = re.search(r"\.so\.(\d+)", name)
    old_pread = soname is None or int(soname.group(1)) < 16
    if old_pread:
        lib.nfs_pread.argtypes = [vp, vp, u64, u64, cp]
    else:
        lib.nfs_pread.argtypes = [vp, vp, cp, ctypes.c_size_t, u64]

    def err(what):
        print("nfsread: %s: %s" % (what, (lib.nfs_get_error(ctx) or b"?").decode()),
              file=sys.stderr)
        return 3

    ctx = lib.nfs_init_context()
    lib.nfs_set_version(ctx, 4)
    lib.nfs_set_timeout(ctx, 60000)
    lib.nfs4_set_client_name(ctx, b"moepack-bench-%d" % os.getpid())
    u = lib.nfs_parse_url_dir(ctx, url.encode())
    if not u:
        return err("url " + url)
    if lib.nfs_mount(ctx, u.contents.server, u.contents.path) != 0:
        return err("mount " + url)
    handles = []
    for path, _, _ in files:
        fh = vp()
        if lib.nfs_open(ctx, path.encode(), os.O_RDONLY, ctypes.byref(fh)) != 0:
            return err("open " + path)
        handles.append(fh)
    buf = ctypes.create_string_buffer(block)

    def read_file(fh, length, sink=None):
        done = 0
        while done < length:
            want = min(block, length - done)
            if old_pread:
                got = lib.nfs_pread(ctx, fh, done, want, buf)
            else:
                got = lib.nfs_pread(ctx, fh, buf, want, done)
            if got <= 0:
                return -1
            if sink is not None:
                sink.append(buf.raw[:got])
            done += got
        return done

    if pack:
        pfd = os.open(pack, os.O_RDONLY)
        for fh, (path, off, n) in zip(handles, files):
            chunks = []
            if read_file(fh, n, chunks) != n:
                return err("read " + path)
            if b"".join(chunks) != os.pread(pfd, n, off):
                print("nfsread: %s differs from the pack at %d" % (path, off), file=sys.stderr)
                return 1
        os.close(pfd)

    times = []
    total = sum(n for _, _, n in files)
    for _ in range(passes):
        t0 = time.monotonic()
        for fh, (path, _, n) in zip(handles, files):
            if read_file(fh, n) != n:
                return err("read " + path)
        times.append(time.monotonic() - t0)
    for fh in handles:
        lib.nfs_close(ctx, fh)
    times.sort()
    median = times[len(times) // 2]
    print("mode=nfs bytes=%d seconds=%.6f MBps=%.1f passes=%d"
          % (total, median, total / 1e6 / median, passes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
