#!/usr/bin/env python3
"""mount_check.py - the checks of tests/mount.test that need system calls
the shell does not have: mmap, O_DIRECT with aligned buffers, concurrent
readers, and NFS-style file handles (name_to_handle_at / open_by_handle_at).

Each subcommand prints one line per failure and exits 1 if anything failed,
0 otherwise.  Reference bytes always come from files written by
`moepack cat`, never from the mount itself.

  mmap FILE REF             MAP_SHARED and MAP_PRIVATE views equal REF
  odirect FILE REF          O_DIRECT reads (whole, chunked, 4 threads) equal
                            REF; reads at and past EOF return 0 bytes
  concurrent SECONDS FILE REF [FILE REF...]
                            8 threads read random ranges and compare
  eio FILE OFFSET           an O_DIRECT read at OFFSET fails with EIO
  rofs FILE                 opening FILE for writing fails with EROFS
  blksize FILE N            st_blksize of FILE is N
  handle-save PATH OUT      write PATH's file handle to OUT (hex)
  handle-open MOUNT IN KIND REF|NAMES
                            open the saved handle under MOUNT: KIND "file"
                            compares the bytes with REF, KIND "dir"
                            compares the listing with NAMES (comma list)
  handle-stale MOUNT IN     opening the saved handle fails with ESTALE
  change FILE REF STATUS EXPECT CMD
                            map FILE (MAP_SHARED) and check it against REF,
                            run the shell command CMD and, without
                            reading pack bytes, wait for status.json
                            (STATUS) to say pack_state EXPECT ("changed",
                            detected between CMD and that read) or, for
                            "ok", for a snapshot rendered 1.2 s after CMD
                            that still says "ok"; then a child touching
                            the mapping must die of SIGBUS ("changed",
                            retried until the watcher dropped the pages) or
                            still see REF ("ok")
  status-after STATUS OUT    copy STATUS (status.json) to OUT once it is a
                            snapshot rendered after this command started
  snapshot-read FILE OUT    copy FILE (status.json or metrics) to OUT as
                            one snapshot served it, and print its st_size
                            and mode (octal) of that snapshot: what one
                            read saw, between two stats that agree
  status-pieces STATUS SECONDS BUSYFILE
                            read STATUS in 4 KiB pieces (buffered and
                            O_DIRECT) for SECONDS while a thread reads
                            BUSYFILE: every sequence within one snapshot
                            (same ctime) is one report (parses, totals =
                            sums of its layers)
"""
import json
import signal
import subprocess
import ctypes
import errno
import mmap
import os
import random
import sys
import threading
import time

failures = []

# How long a check waits for something that must happen (seconds): a
# ceiling for a loaded machine, not a speed target.  tests/lib.sh exports
# TEST_WAIT (60 s, more in a sanitizer build).
POLL_CEILING = max(60, int(os.environ.get("TEST_WAIT", "60")))


def fail(msg):
    failures.append(msg)
    print("mount_check: " + msg)


def read_ref(path):
    with open(path, "rb") as f:
        return f.read()


def check_mmap(path, ref_path):
    ref = read_ref(ref_path)
    with open(path, "rb") as f:
        for name, flags, prot in (
            ("MAP_SHARED", mmap.MAP_SHARED, mmap.PROT_READ),
            ("MAP_PRIVATE", mmap.MAP_PRIVATE, mmap.PROT_READ),
        ):
            m = mmap.mmap(f.fileno(), 0, flags=flags, prot=prot)
            if len(m) != len(ref):
                fail("%s %s: %d bytes mapped, expected %d" % (name, path, len(m), len(ref)))
            elif m[:] != ref:
                fail("%s %s: bytes differ from the reference" % (name, path))
            # touch pages out of order too: faults in the middle first
            for off in range(len(ref) - 1, -1, -65536):
                if m[off] != ref[off]:
                    fail("%s %s: byte %d differs" % (name, path, off))
                    break
            m.close()
        # a private writable copy may change; the file must not
        m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE,
                      prot=mmap.PROT_READ | mmap.PROT_WRITE)
        m[0:4] = b"\xde\xad\xbe\xef"
        m.close()
        m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        if m[0:4] != ref[0:4]:
            fail("MAP_PRIVATE write leaked into %s" % path)
        m.close()


def read_fd(fd):
    """The rest of fd, read until end of file."""
    data = b""
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return data
        data += chunk


def aligned_buffer(size):
    # anonymous mappings are page aligned, as O_DIRECT wants
    return mmap.mmap(-1, size)


def check_odirect(path, ref_path):
    ref = read_ref(ref_path)
    size = len(ref)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = aligned_buffer(max(size, 4096) + (1 << 20))
        n = os.preadv(fd, [buf], 0)
        if n != size or buf[:n] != ref:
            fail("O_DIRECT whole read of %s: %d bytes, expected %d%s"
                 % (path, n, size, "" if n != size else ", bytes differ"))
        # 4 KiB-aligned chunks of 64 KiB
        chunk = aligned_buffer(65536)
        for off in range(0, size, 65536):
            n = os.preadv(fd, [chunk], off)
            want = ref[off:off + 65536]
            if n != len(want) or chunk[:n] != want:
                fail("O_DIRECT chunk at %d of %s differs" % (off, path))
                break
        for off in (size, size + 4096, size + (1 << 20)):
            n = os.preadv(fd, [chunk], off)
            if n != 0:
                fail("O_DIRECT read at %d (EOF %d) of %s returned %d" % (off, size, path, n))
        # the SGLang way: four concurrent slices of one object
        quarter = (size // 4 + 4095) // 4096 * 4096
        results = {}

        def slice_reader(i):
            b = aligned_buffer(quarter)
            got = os.preadv(fd, [b], i * quarter)
            results[i] = bytes(b[:got])

        threads = [threading.Thread(target=slice_reader, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        joined = b"".join(results[i] for i in range(4))
        if joined != ref:
            fail("concurrent O_DIRECT slices of %s differ" % path)
    finally:
        os.close(fd)


def check_concurrent(seconds, pairs):
    refs = [(p, read_ref(r)) for p, r in pairs]
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    counts = [0]

    def reader(seed):
        rnd = random.Random(seed)
        fds = {p: os.open(p, os.O_RDONLY) for p, _ in refs}
        try:
            while time.monotonic() < deadline:
                p, ref = rnd.choice(refs)
                off = rnd.randrange(0, len(ref))
                length = rnd.randrange(1, 1 << 20)
                got = os.pread(fds[p], length, off)
                if got != ref[off:off + length]:
                    with lock:
                        fail("concurrent read of %s at %d+%d differs" % (p, off, length))
                    return
                with lock:
                    counts[0] += 1
        finally:
            for fd in fds.values():
                os.close(fd)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if counts[0] == 0:
        fail("no concurrent read completed")


def check_eio(path, offset):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = aligned_buffer(65536)
        try:
            n = os.preadv(fd, [buf], offset)
            fail("O_DIRECT read at %d of %s returned %d bytes, expected EIO" % (offset, path, n))
        except OSError as e:
            if e.errno != errno.EIO:
                fail("read at %d of %s: %s, expected EIO" % (offset, path, e))
    finally:
        os.close(fd)


def check_rofs(path):
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_TRUNC,
                  os.O_WRONLY | os.O_APPEND):
        try:
            fd = os.open(path, flags)
            os.close(fd)
            fail("open(%s, %#o) succeeded" % (path, flags))
        except OSError as e:
            if e.errno != errno.EROFS:
                fail("open(%s, %#o): %s, expected EROFS" % (path, flags, e))


def check_blksize(path, want):
    got = os.stat(path).st_blksize
    if got != want:
        fail("st_blksize of %s is %d, expected %d" % (path, got, want))


# ---- file handles (what an NFS server keeps) ---------------------------------

AT_FDCWD = -100
MAX_HANDLE_SZ = 128


class FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint),
                ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * MAX_HANDLE_SZ)]


libc = ctypes.CDLL(None, use_errno=True)


def handle_save(path, out):
    fh = FileHandle()
    fh.handle_bytes = MAX_HANDLE_SZ
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(AT_FDCWD, path.encode(), ctypes.byref(fh),
                              ctypes.byref(mount_id), 0) != 0:
        e = ctypes.get_errno()
        fail("name_to_handle_at(%s): %s" % (path, os.strerror(e)))
        return
    raw = bytes(fh.f_handle[:fh.handle_bytes])
    with open(out, "w") as f:
        f.write("%d %s\n" % (fh.handle_type, raw.hex()))


def handle_load(path):
    with open(path) as f:
        kind, data = f.read().split()
    raw = bytes.fromhex(data)
    fh = FileHandle()
    fh.handle_bytes = len(raw)
    fh.handle_type = int(kind)
    ctypes.memmove(fh.f_handle, raw, len(raw))
    return fh


def handle_open(mount, saved, flags):
    fh = handle_load(saved)
    mfd = os.open(mount, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = libc.open_by_handle_at(mfd, ctypes.byref(fh), flags)
        return fd, ctypes.get_errno()
    finally:
        os.close(mfd)


def check_handle_open(mount, saved, kind, expect):
    flags = os.O_RDONLY | (os.O_DIRECTORY if kind == "dir" else 0)
    fd, err = handle_open(mount, saved, flags)
    if fd < 0:
        fail("open_by_handle_at(%s) under %s: %s" % (saved, mount, os.strerror(err)))
        return
    try:
        if kind == "dir":
            got = sorted(os.listdir(fd))
            want = sorted(expect.split(","))
            if got != want:
                fail("directory by handle lists %s, expected %s" % (got, want))
        else:
            ref = read_ref(expect)
            data = read_fd(fd)
            if data != ref:
                fail("file by handle: %d bytes, differ from %s" % (len(data), expect))
    finally:
        os.close(fd)


def check_handle_stale(mount, saved):
    fd, err = handle_open(mount, saved, os.O_RDONLY)
    if fd >= 0:
        os.close(fd)
        fail("open_by_handle_at(%s) succeeded on another pack" % saved)
    elif err != errno.ESTALE:
        fail("open_by_handle_at(%s): %s, expected ESTALE" % (saved, os.strerror(err)))


def parse_utc(text):
    # "2026-01-31T12:00:00.123456789Z": seconds since the epoch, as a float
    import calendar
    whole, frac = text.rstrip("Z").split(".")
    t = time.strptime(whole, "%Y-%m-%dT%H:%M:%S")
    return calendar.timegm(t) + float("0." + frac)


def status_ctime(status_path):
    return os.stat(status_path).st_ctime


def status_after(status_path, t, out=None):
    """Wait until status.json is a snapshot rendered after the wall-clock
    time t (its ctime is the snapshot's time), then return it parsed (and
    copy its bytes to OUT).  The watcher renders one a second; on a loaded
    machine it may take longer, so the ceiling is generous."""
    deadline = time.monotonic() + POLL_CEILING
    while status_ctime(status_path) <= t:
        if time.monotonic() > deadline:
            fail("%s: no snapshot after %.3f within %d s" % (status_path, t, POLL_CEILING))
            return None
        time.sleep(0.05)
    with open(status_path, "rb") as f:
        text = f.read()
    if out:
        with open(out, "wb") as f:
            f.write(text)
    return json.loads(text)


def snapshot_read(path, out):
    """Copy path to out as one snapshot served it and print the st_size and
    mode that snapshot had.  A new snapshot may replace the file between
    any two system calls, and the daemon keeps nothing per open file (an
    fstat asks for the current one), so: stat, read, stat, until the two
    stats agree on ctime (the snapshot's time) and size (a new snapshot is
    sized at once, its ctime moves a moment later)."""
    deadline = time.monotonic() + POLL_CEILING
    while True:
        fd = os.open(path, os.O_RDONLY)
        try:
            before = os.fstat(fd)
            text = read_fd(fd)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        if (before.st_ctime_ns, before.st_size) == (after.st_ctime_ns, after.st_size):
            break
        if time.monotonic() > deadline:
            fail("%s: a new snapshot during every read for %d s" % (path, POLL_CEILING))
            return
    with open(out, "wb") as f:
        f.write(text)
    print(before.st_size, "%o" % (before.st_mode & 0o7777))


def check_change(path, ref_path, status_path, expect, cmd):
    ref = read_ref(ref_path)
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    if m[:] != ref:
        fail("%s: mapping differs from the reference before the change" % path)
        return
    t0 = time.time()
    if subprocess.call(["sh", "-c", cmd]) != 0:
        fail("the change command failed: %s" % cmd)
        return
    t_end = time.time()
    # status.json is not pack bytes: reading it is no read of the pack.
    # "changed": wait until it says so (the watcher looks every 200 ms, but
    # a loaded machine may delay it); "ok": wait for a snapshot rendered
    # well after the command, so that the watcher has looked at the pack
    # since (each of its rounds looks before it renders).
    d = None
    if expect == "changed":
        deadline = time.monotonic() + POLL_CEILING
        while True:
            with open(status_path) as f:
                d = json.load(f)
            if d["pack_state"] == expect or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    else:
        d = status_after(status_path, t_end + 1.2)
        if d is None:
            return
    t1 = time.time()
    if d["pack_state"] != expect:
        fail("pack_state %r after the change, expected %r" % (d["pack_state"], expect))
    elif expect == "changed":
        at = parse_utc(d["pack_change"]["detected_at"])
        if not (t0 - 0.05 <= at <= t1):
            fail("detected_at %s is not between the change (%.3f) and the read of "
                 "status.json (%.3f)" % (d["pack_change"]["detected_at"], t0, t1))
    # The watcher says "changed" in status.json before it drops the
    # kernel's pages; until then a mapping may still read them.  Touch the
    # mapping in a child until it dies of SIGBUS ("changed"), or once and
    # it must still read the validated bytes ("ok").
    deadline = time.monotonic() + POLL_CEILING
    while True:
        pid = os.fork()
        if pid == 0:
            # the child: touch every page; exit 0 if all equal the reference
            try:
                ok = all(m[off] == ref[off] for off in range(0, len(ref), 4096))
                os._exit(0 if ok else 3)
            except BaseException:
                os._exit(4)
        _, st = os.waitpid(pid, 0)
        if expect != "changed" or os.WIFSIGNALED(st) or time.monotonic() > deadline:
            break
        if not (os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0):
            break
        time.sleep(0.05)
    if expect == "changed":
        if not (os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGBUS):
            fail("%s: the mapping held across the change %s, expected SIGBUS"
                 % (path, "still reads" if os.WIFEXITED(st) else "died otherwise"))
    elif not (os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0):
        fail("%s: the mapping held across the change no longer reads the "
             "validated bytes (status %d)" % (path, st))
    m.close()


def check_status_pieces(status_path, seconds, busy_path):
    """Read status.json in 4 KiB pieces, buffered and O_DIRECT (every piece
    a request), while a thread keeps the counters moving.  A sequence during
    which the snapshot stayed the same (status.json's ctime is the snapshot's
    time, and its size the report's) must be one report: parse, and its totals equal its own layers'
    sums.  A sequence that saw a new snapshot proves nothing and is skipped;
    most must not."""
    stop = threading.Event()

    def churn():
        fd = os.open(busy_path, os.O_RDONLY | os.O_DIRECT)
        buf = aligned_buffer(4096)
        try:
            while not stop.is_set():
                os.preadv(fd, [buf], 0)
        finally:
            os.close(fd)

    busy = threading.Thread(target=churn)
    busy.start()
    # at least SECONDS, and until 10 sequences are checked: on a loaded
    # machine more of them span a new snapshot and are skipped
    deadline = time.time() + seconds
    ceiling = deadline + 120
    checked = skipped = 0
    piece = aligned_buffer(4096)
    try:
        while (time.time() < deadline or checked < 10) and time.time() < ceiling \
                and not failures:
            direct = checked % 2 == 1
            fd = os.open(status_path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
            try:
                st = os.fstat(fd)
                before, size = st.st_ctime_ns, st.st_size
                parts = []
                for off in range(0, size, 4096):
                    n = os.preadv(fd, [piece], off)
                    parts.append(bytes(piece[:n]))
                st = os.fstat(fd)
                after, after_size = st.st_ctime_ns, st.st_size
            finally:
                os.close(fd)
            # a new snapshot is served (and sized) at once, and its ctime
            # moves once the kernel's pages of the old one are gone: in
            # between, a new size with the old ctime says it too
            if before != after or size != after_size:
                skipped += 1
                continue
            checked += 1
            text = b"".join(parts)
            mode = "O_DIRECT" if direct else "buffered"
            # the size said is the report's, and what one snapshot served
            if len(text) != size:
                fail("%s read %d: %d bytes, st_size %d" % (mode, checked, len(text), size))
                break
            try:
                d = json.loads(text)
            except ValueError as e:
                fail("%s read %d in 4 KiB pieces does not parse: %s" % (mode, checked, e))
                break
            for key in ("reads", "bytes"):
                total = sum(row[key] for row in d["layers"])
                if d["counters"][key] != total:
                    fail("%s read %d mixes reports: counters.%s %d, its layers "
                         "sum to %d" % (mode, checked, key, d["counters"][key], total))
                    break
    finally:
        stop.set()
        busy.join()
    if not failures and checked < 10:
        fail("%d sequences checked, %d skipped (a new snapshot during them)"
             % (checked, skipped))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "mmap":
        check_mmap(*args)
    elif cmd == "odirect":
        check_odirect(*args)
    elif cmd == "concurrent":
        rest = args[1:]
        check_concurrent(float(args[0]), list(zip(rest[0::2], rest[1::2])))
    elif cmd == "eio":
        check_eio(args[0], int(args[1]))
    elif cmd == "rofs":
        check_rofs(args[0])
    elif cmd == "blksize":
        check_blksize(args[0], int(args[1]))
    elif cmd == "handle-save":
        handle_save(*args)
    elif cmd == "handle-open":
        check_handle_open(*args)
    elif cmd == "change":
        check_change(*args)
    elif cmd == "status-after":
        status_after(args[0], time.time(), args[1])
    elif cmd == "snapshot-read":
        snapshot_read(*args)
    elif cmd == "status-pieces":
        check_status_pieces(args[0], float(args[1]), args[2])
    elif cmd == "handle-stale":
        check_handle_stale(*args)
    else:
        print("mount_check: unknown check %s" % cmd)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
