#!/usr/bin/env python3
"""lease_check.py - a writer against a mounted pack (tests/lease.test).

  lease_check.py race PACK FILE OFFSET STATUS
      A reader thread reads FILE (a role file of the mount) over and over,
      buffered and with O_DIRECT, each time from a fresh open.  Meanwhile
      this process opens PACK for writing (which waits until the daemon has
      let go of its read lease), writes a marker at OFFSET of the pack (a
      byte of FILE), and lets the reader go on until it has done ten reads
      that began after the open returned.  It fails when any read returned
      the marker, when a read that began after the open returned bytes, or
      when STATUS never says pack_state "changed" with cause "lease".

Exit status 0: all held; 1: a check failed (one line why on stderr).
"""
import json
import mmap
import os
import sys
import threading
import time

MARKER = b"MOEPACK-LEASE-MARKER"
DEADLINE = 60.0


def fail(msg):
    sys.stderr.write("lease_check: %s\n" % msg)
    sys.exit(1)


def read_all(path, direct):
    """The file's bytes, or the errno that stopped the read."""
    flags = os.O_RDONLY | (os.O_DIRECT if direct else 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        return e.errno
    try:
        if not direct:
            chunks = []
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    return b"".join(chunks)
                chunks.append(b)
        buf = mmap.mmap(-1, 1 << 20)
        out = []
        off = 0
        while True:
            n = os.preadv(fd, [buf], off)
            if n <= 0:
                return b"".join(out)
            out.append(bytes(buf[:n]))
            off += n
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


def race(pack, path, offset, status):
    reads = []          # (start, end, ok, has_marker)
    stop = threading.Event()

    def reader():
        direct = False
        while not stop.is_set():
            t0 = time.monotonic()
            got = read_all(path, direct)
            t1 = time.monotonic()
            ok = isinstance(got, bytes)
            reads.append((t0, t1, ok, ok and MARKER in got, got if not ok else None))
            direct = not direct

    th = threading.Thread(target=reader)
    th.start()
    try:
        deadline = time.monotonic() + DEADLINE
        while sum(1 for r in reads if r[2]) < 3:
            if time.monotonic() > deadline:
                fail("the reader never read %s: %r" % (path, reads[-1:]))
            time.sleep(0.01)
        fd = os.open(pack, os.O_RDWR)        # waits for the lease to go
        opened = time.monotonic()
        os.pwrite(fd, MARKER, offset)
        os.fsync(fd)
        written = time.monotonic()
        while sum(1 for r in reads if r[0] > written) < 10:
            if time.monotonic() > deadline:
                fail("the reader stalled after the write")
            time.sleep(0.01)
        os.close(fd)
    finally:
        stop.set()
        th.join()
    bad = [r for r in reads if r[3]]
    if bad:
        fail("%d read(s) returned the writer's bytes" % len(bad))
    late = [r for r in reads if r[0] > opened and r[2]]
    if late:
        fail("%d read(s) that began after the writer's open returned bytes" % len(late))
    errs = set(r[4] for r in reads if r[0] > opened)
    if errs != {5}:
        fail("reads after the open failed with %r, not only EIO (5)" % errs)
    while True:
        try:
            with open(status) as f:
                d = json.load(f)
            if d["pack_state"] == "changed":
                break
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            fail("status.json never said pack_state changed")
        time.sleep(0.1)
    got = (d["pack_change"]["cause"], d["lease"]["state"])
    if got != ("lease", "broken"):
        fail("status.json: cause/lease %r, expected ('lease', 'broken')" % (got,))
    print("%d reads, %d before the open, %d after it, all EIO" %
          (len(reads), sum(1 for r in reads if r[0] <= opened),
           sum(1 for r in reads if r[0] > opened)))


def main(argv):
    if len(argv) == 6 and argv[1] == "race":
        race(argv[2], argv[3], int(argv[4]), argv[5])
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
