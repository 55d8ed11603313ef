#!/usr/bin/env python3
"""rot_check.py - bytes that change below the file system, and what readers
of a moepackfs mount get then (tests/bitrot.test, tests/bitrot-nfs.test).

  phys FILE OFFSET IMAGE
      The byte of IMAGE that holds byte OFFSET of FILE, a file of the ext4
      file system IMAGE holds (loop-mounted from offset 0): the extent
      `filefrag -v -b4096 FILE` lists for OFFSET's block.  Checked: that
      4096-byte block of IMAGE is the block of FILE.  Prints the offset.
  flip FILE OFFSET
      XOR the byte at OFFSET of FILE with 0x40 by pwrite(2) (size and
      everything else kept), fsync(2).  Prints "OLD NEW" (decimal).
  reads FILE REF OFFSET
      Read all of FILE three ways: buffered (64 KiB preads, its cached
      pages dropped first with POSIX_FADV_DONTNEED), O_DIRECT (64 KiB
      preads into a page-aligned buffer) and mmap (every page touched in a
      child; a page that raises SIGBUS is counted as failed and the next
      child goes on after it).  Each piece that reads is compared with REF
      (the file's bytes as they were, taken beforehand).  One line per way:
        WAY ok=N eio=N other_errors=N mismatches=N at_offset=WHAT
      where WHAT is what the piece holding OFFSET gave: "eio", "original"
      (REF's byte), "changed" (any other) or "error".
  seqread FILE BYTES PIECE
      Read the first BYTES of FILE in reads of PIECE bytes, one after the
      other, with POSIX_FADV_RANDOM (no read-ahead: each read is one
      request of the mount, each starting where the last ended).
  byte FILE OFFSET
      The byte at OFFSET of FILE as storage has it now: an O_DIRECT read of
      its page, which neither uses nor fills the page cache.  Prints it in
      decimal.
  direct FILE OFFSET LENGTH REF
      One O_DIRECT pread of LENGTH bytes at OFFSET (4 KiB multiples):
      prints "eio", "original" (the bytes equal REF's at OFFSET) or
      "changed".
"""
import mmap
import os
import re
import signal
import subprocess
import sys

BLOCK = 4096
PIECE = 65536


def phys(path, offset, image):
    out = subprocess.run(["filefrag", "-v", "-b%d" % BLOCK, path], check=True,
                         capture_output=True, text=True).stdout
    block = offset // BLOCK
    for line in out.splitlines():
        m = re.match(r"\s*\d+:\s*(\d+)\.\.\s*(\d+):\s*(\d+)\.\.\s*(\d+):", line)
        if not m:
            continue
        first, last, pfirst = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if first <= block <= last:
            where = (pfirst + block - first) * BLOCK + offset % BLOCK
            with open(path, "rb") as f, open(image, "rb") as img:
                f.seek(block * BLOCK)
                img.seek(where - offset % BLOCK)
                if f.read(BLOCK) != img.read(BLOCK):
                    sys.stderr.write("phys: block %d of %s is not at %d of %s\n"
                                     % (block, path, where, image))
                    return 1
            print(where)
            return 0
    sys.stderr.write("phys: no extent of %s holds block %d:\n%s" % (path, block, out))
    return 1


def flip(path, offset):
    fd = os.open(path, os.O_RDWR)
    try:
        old = os.pread(fd, 1, offset)[0]
        if os.pwrite(fd, bytes([old ^ 0x40]), offset) != 1:
            raise OSError("short write")
        os.fsync(fd)
    finally:
        os.close(fd)
    print("%d %d" % (old, old ^ 0x40))
    return 0


class Tally:
    def __init__(self, ref, offset):
        self.ref, self.offset = ref, offset
        self.ok = self.eio = self.other = self.mismatches = 0
        self.at = "none"

    def error(self, off, n, err):
        hit = off <= self.offset < off + n
        if err == 5:
            self.eio += 1
            if hit:
                self.at = "eio"
        else:
            self.other += 1
            if hit:
                self.at = "error"

    def data(self, off, got):
        self.ok += 1
        if got != self.ref[off:off + len(got)]:
            self.mismatches += 1
        if off <= self.offset < off + len(got):
            same = got[self.offset - off] == self.ref[self.offset]
            self.at = "original" if same else "changed"

    def line(self, way):
        return ("%s ok=%d eio=%d other_errors=%d mismatches=%d at_offset=%s"
                % (way, self.ok, self.eio, self.other, self.mismatches, self.at))


def read_buffered(path, t, size):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        for off in range(0, size, PIECE):
            n = min(PIECE, size - off)
            try:
                t.data(off, os.pread(fd, n, off))
            except OSError as e:
                t.error(off, n, e.errno)
    finally:
        os.close(fd)


def read_direct(path, t, size):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, PIECE)
    try:
        for off in range(0, size, PIECE):
            n = min(PIECE, size - off)
            try:
                got = os.preadv(fd, [buf], off)
                t.data(off, bytes(buf[:min(got, n)]))
            except OSError as e:
                t.error(off, n, e.errno)
    finally:
        buf.close()
        os.close(fd)


def map_child(path, first, w):
    """Touch pages from `first` on; report each one's bytes to the parent."""
    fd = os.open(path, os.O_RDONLY)
    m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    for page in range(first, (len(m) + BLOCK - 1) // BLOCK):
        data = m[page * BLOCK:(page + 1) * BLOCK]
        os.write(w, b"%d %s\n" % (page, data.hex().encode()))
    os._exit(0)


def read_mapped(path, t, size):
    pages = (size + BLOCK - 1) // BLOCK
    page = 0
    while page < pages:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            map_child(path, page, w)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            for line in f:
                num, hexdata = line.split()
                page = int(num)
                t.data(page * BLOCK, bytes.fromhex(hexdata.decode()))
                page += 1
        _, st = os.waitpid(pid, 0)
        if os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGBUS:
            t.error(page * BLOCK, BLOCK, 5)
            page += 1
        elif page < pages:
            t.error(page * BLOCK, BLOCK, -1)
            page += 1


def reads(path, ref_path, offset):
    with open(ref_path, "rb") as f:
        ref = f.read()
    size = os.stat(path).st_size
    if size != len(ref):
        sys.stderr.write("reads: %s is %d bytes, %s %d\n" % (path, size, ref_path, len(ref)))
        return 1
    for way, fn in (("buffered", read_buffered), ("direct", read_direct),
                    ("mmap", read_mapped)):
        t = Tally(ref, offset)
        fn(path, t, size)
        print(t.line(way))
    return 0


def seqread(path, nbytes, piece):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        for off in range(0, nbytes, piece):
            os.pread(fd, min(piece, nbytes - off), off)
    finally:
        os.close(fd)
    return 0


def direct(path, offset, length, ref_path):
    with open(ref_path, "rb") as f:
        f.seek(offset)
        want = f.read(length)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, (length + BLOCK - 1) // BLOCK * BLOCK)
    try:
        got = os.preadv(fd, [buf], offset)
        print("original" if bytes(buf[:got]) == want else "changed")
    except OSError as e:
        print("eio" if e.errno == 5 else "error %d" % e.errno)
    finally:
        buf.close()
        os.close(fd)
    return 0


def byte(path, offset):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, BLOCK)
    try:
        os.preadv(fd, [buf], offset // BLOCK * BLOCK)
        print(buf[offset % BLOCK])
    finally:
        buf.close()
        os.close(fd)
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "phys":
        return phys(argv[2], int(argv[3]), argv[4])
    if len(argv) == 4 and argv[1] == "flip":
        return flip(argv[2], int(argv[3]))
    if len(argv) == 5 and argv[1] == "reads":
        return reads(argv[2], argv[3], int(argv[4]))
    if len(argv) == 5 and argv[1] == "seqread":
        return seqread(argv[2], int(argv[3]), int(argv[4]))
    if len(argv) == 4 and argv[1] == "byte":
        return byte(argv[2], int(argv[3]))
    if len(argv) == 6 and argv[1] == "direct":
        return direct(argv[2], int(argv[3]), int(argv[4]), argv[5])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
