#!/usr/bin/env python3
"""mixed_check.py - many readers of one mount at once, O_DIRECT, buffered
and mmap mixed, on the same objects and on different ones
(tests/mixed-readers.test).

  mixed MOUNT PACK LS_JSON THREADS ROUNDS SEED
      THREADS threads (reader kind by thread: O_DIRECT, buffered, mmap, in
      turn), each doing ROUNDS reads.  Every other read is of one of four
      objects all threads share, the others of an object of the thread's
      own; a read is a whole object file, a range of it, a whole role file,
      or a range of the whole-pack file across objects.  Buffered readers
      and mappings drop the file's cached pages first
      (POSIX_FADV_DONTNEED), so that their reads reach the daemon; O_DIRECT
      ranges are page-aligned, into page-aligned buffers.  Every byte is
      compared with the pack file itself, read natively.  Prints
        mixed: T threads, R reads (D direct, B buffered, M mmap), N bytes, X mismatches, E errors
      and one line per mismatch or error; exits 1 when X or E is not 0.
"""
import json
import mmap
import os
import random
import sys
import threading

from fileio import pread_all

PAGE = 4096
KINDS = ("direct", "buffered", "mmap")


def load_layout(mount, pack_name, ls_json):
    with open(ls_json) as f:
        rows = json.load(f)
    objs = {}
    for r in rows:
        objs.setdefault((r["layer"], r["expert"]), []).append(r)
    objects, roles = [], []
    for (layer, expert), rs in sorted(objs.items()):
        rs.sort(key=lambda r: r["offset"])
        base = "%s/layers/%03d/%03d" % (mount, layer, expert)
        start = rs[0]["offset"]
        end = rs[-1]["offset"] + rs[-1]["nbytes"]
        objects.append((base + "/object", start, end - start))
        roles.append([(base + "/" + r["role"], r["offset"], r["nbytes"]) for r in rs])
    return objects, roles, os.path.join(mount, pack_name)


class Readers:
    def __init__(self, mount, pack, ls_json, threads, rounds, seed):
        self.objects, self.roles, self.whole = load_layout(
            mount, os.path.basename(pack), ls_json)
        self.pack_fd = os.open(pack, os.O_RDONLY)
        self.pack_size = os.fstat(self.pack_fd).st_size
        self.threads, self.rounds, self.seed = threads, rounds, seed
        self.lock = threading.Lock()
        self.reads = dict.fromkeys(KINDS, 0)
        self.nbytes = self.mismatches = self.errors = 0
        self.lines = []

    def native(self, off, n):
        out = bytearray()
        while len(out) < n:
            b = os.pread(self.pack_fd, n - len(out), off + len(out))
            if not b:
                break
            out += b
        return bytes(out)

    def target(self, rng, tid):
        """(path, pack offset of the file, file size, offset, length)"""
        n = len(self.objects)
        obj = rng.randrange(4) if rng.random() < 0.5 else 4 + tid % (n - 4)
        path, base, size = self.objects[obj]
        what = rng.randrange(4)
        if what == 0:
            return path, base, size, 0, size
        if what == 1:
            off = rng.randrange(size)
            return path, base, size, off, rng.randrange(1, size - off + 1)
        if what == 2:
            path, base, size = self.roles[obj][rng.randrange(3)]
            return path, base, size, 0, size
        off = rng.randrange(max(1, self.pack_size - (2 << 20)))
        return self.whole, 0, self.pack_size, off, rng.randrange(1, 2 << 20)

    def read(self, kind, path, off, n):
        if kind == "direct":
            lo = off // PAGE * PAGE
            hi = (off + n + PAGE - 1) // PAGE * PAGE
            fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
            buf = mmap.mmap(-1, hi - lo)
            try:
                got = os.preadv(fd, [buf], lo)
                return bytes(buf[off - lo:min(got, off - lo + n)])
            finally:
                buf.close()
                os.close(fd)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            if kind == "buffered":
                return pread_all(fd, n, off)
            m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
            try:
                return m[off:off + n]
            finally:
                m.close()
        finally:
            os.close(fd)

    def one(self, rng, tid, kind):
        path, base, size, off, n = self.target(rng, tid)
        n = min(n, size - off)
        try:
            got = self.read(kind, path, off, n)
        except OSError as e:
            with self.lock:
                self.errors += 1
                self.lines.append("%s %s at %d+%d: %s" % (kind, path, off, n, e))
            return
        want = self.native(base + off, n)
        with self.lock:
            self.reads[kind] += 1
            self.nbytes += len(got)
            if got != want:
                self.mismatches += 1
                self.lines.append("%s %s at %d+%d: %d bytes differ from the pack (%d read)"
                                  % (kind, path, off, n,
                                     sum(a != b for a, b in zip(got, want))
                                     + abs(len(got) - len(want)), len(got)))

    def worker(self, tid):
        rng = random.Random(self.seed * 1000 + tid)
        kind = KINDS[tid % len(KINDS)]
        for _ in range(self.rounds):
            self.one(rng, tid, kind)

    def run(self):
        ts = [threading.Thread(target=self.worker, args=(i,)) for i in range(self.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for line in self.lines[:20]:
            print(line)
        print("mixed: %d threads, %d reads (%d direct, %d buffered, %d mmap), %d bytes, "
              "%d mismatches, %d errors"
              % (self.threads, sum(self.reads.values()), self.reads["direct"],
                 self.reads["buffered"], self.reads["mmap"], self.nbytes,
                 self.mismatches, self.errors))
        return 1 if self.mismatches or self.errors else 0


def main(argv):
    if len(argv) == 8 and argv[1] == "mixed":
        r = Readers(argv[2], argv[3], argv[4], int(argv[5]), int(argv[6]), int(argv[7]))
        if len(r.objects) < 5 + int(argv[5]):
            sys.stderr.write("mixed: the pack needs more objects than threads + 4\n")
            return 2
        return r.run()
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
