#!/usr/bin/env python3
"""seal_check.py - reads of a mount under -o verify=seal (tests/seal-mount.test).

  loader MOUNT PACK LS_JSON
      The reference loader's pattern: every object file read whole as four
      concurrent O_DIRECT preads of about a quarter each (split points
      rounded to 4 KiB), each compared with the pack file itself at the
      offsets `moepack ls --json` gives.  Prints "loader: N objects, B bytes,
      M mismatches, E errors"; exit 1 when M or E is not 0.
  mmap FILE
      Map FILE and touch every page in a child process; prints "ok SHA256"
      or "SIGBUS" (the child killed by it) or "error ERRNO".
"""
import hashlib
import json
import mmap
import os
import signal
import sys
import threading

from fileio import pread_all

ALIGN = 4096


def objects(ls_json):
    with open(ls_json) as f:
        rows = json.load(f)
    objs = {}
    for r in rows:
        objs.setdefault((r["layer"], r["expert"]), []).append(r)
    for (layer, expert), roles in sorted(objs.items()):
        roles.sort(key=lambda r: r["offset"])
        start = roles[0]["offset"]
        end = roles[-1]["offset"] + roles[-1]["nbytes"]
        yield "layers/%03d/%03d/object" % (layer, expert), start, end - start


def direct_read(path, off, n):
    """n bytes at off with O_DIRECT into an aligned buffer."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        size = (n + ALIGN - 1) // ALIGN * ALIGN
        buf = mmap.mmap(-1, max(size, ALIGN))
        got = os.preadv(fd, [buf], off)
        return bytes(buf[:min(got, n)])
    finally:
        os.close(fd)


def loader(mount, pack, ls_json):
    pack_fd = os.open(pack, os.O_RDONLY)
    nobj = nbytes = mismatches = errors = 0
    for rel, base, size in objects(ls_json):
        path = os.path.join(mount, rel)
        quarter = (size // 4 + ALIGN - 1) // ALIGN * ALIGN
        splits = [(i * quarter, min(quarter, size - i * quarter))
                  for i in range(4) if i * quarter < size]
        results = [None] * len(splits)

        def run(i, off, n):
            try:
                results[i] = direct_read(path, off, n)
            except OSError as e:
                results[i] = e

        threads = [threading.Thread(target=run, args=(i, off, n))
                   for i, (off, n) in enumerate(splits)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for (off, n), got in zip(splits, results):
            if isinstance(got, Exception):
                errors += 1
                sys.stderr.write("loader: %s at %d+%d: %s\n" % (rel, off, n, got))
            elif got != pread_all(pack_fd, n, base + off):
                mismatches += 1
                sys.stderr.write("loader: %s at %d+%d: differs from the pack\n"
                                 % (rel, off, n))
            else:
                nbytes += n
        nobj += 1
    os.close(pack_fd)
    print("loader: %d objects, %d bytes, %d mismatches, %d errors"
          % (nobj, nbytes, mismatches, errors))
    return 1 if mismatches or errors or nobj == 0 else 0


def mapped(path):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            fd = os.open(path, os.O_RDONLY)
            m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
            h = hashlib.sha256()
            for off in range(0, len(m), ALIGN):
                h.update(m[off:off + ALIGN])
            os.write(w, ("ok " + h.hexdigest()).encode())
        except OSError as e:
            os.write(w, ("error %d" % e.errno).encode())
        os._exit(0)
    os.close(w)
    out = b""
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        out += b
    os.close(r)
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGBUS:
        print("SIGBUS")
    else:
        print(out.decode())
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "loader":
        return loader(argv[2], argv[3], argv[4])
    if len(argv) == 3 and argv[1] == "mmap":
        return mapped(argv[2])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
