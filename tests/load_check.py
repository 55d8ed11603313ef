#!/usr/bin/env python3
"""load_check.py - the load and fault checks of tests/load.test and
tests/nfs-load.test: many readers at once, with every byte compared with
the pack file itself at the offsets `moepack ls --json` gives (never with
bytes read through the mount or the NFS server).

Each subcommand prints what it did, one line per failure, and exits 1 if
anything failed, 0 otherwise.

  load SECONDS THREADS MOUNT PACK LS_JSON
        THREADS threads read random byte ranges of random role, object and
        whole-pack files of MOUNT for SECONDS, while one thread each runs
        `ls -R`, `stat` and `getfattr -d` on the tree and checks what they
        print (names, sizes, inode numbers, the offset and nbytes xattrs).
  snapshot MOUNT LS_JSON OUT
        write, for a fixed sample of the tree, each path's inode number,
        its generation xattr and its NFS file handle (nodeid and FUSE
        generation, as name_to_handle_at gives it) to OUT, one per line.
  nfs SECONDS CLIENTS URL_PREFIX URL_SUFFIX PACK LS_JSON
        CLIENTS threads each run libnfs's nfs-cat on random expert files
        (URL_PREFIX + "/layers/LLL/EEE/ROLE" + URL_SUFFIX) for SECONDS and
        compare each file with the pack.
"""
import ctypes
import json
import os
import random
import subprocess
import sys
import threading
import time

from fileio import pread_all

failures = []
lock = threading.Lock()


def rounds(deadline):
    """A worker's rounds: until the deadline, and at least one however late
    a loaded machine starts the thread (each kind must complete one)."""
    yield
    while time.monotonic() < deadline:
        yield


def fail(msg):
    with lock:
        failures.append(msg)
        # A broken mount fails every read: a few lines say as much as all.
        if len(failures) <= 20:
            print("load_check: " + msg, flush=True)


def load_entries(ls_json):
    """(relative path, pack offset, length) of every role and object file."""
    with open(ls_json) as f:
        rows = json.load(f)
    files = []
    objects = {}
    for r in rows:
        rel = "layers/%03d/%03d/%s" % (r["layer"], r["expert"], r["role"])
        files.append((rel, r["offset"], r["nbytes"]))
        objects.setdefault((r["layer"], r["expert"]), []).append(r)
    for (layer, expert), roles in objects.items():
        roles.sort(key=lambda r: r["offset"])
        start = roles[0]["offset"]
        end = roles[-1]["offset"] + roles[-1]["nbytes"]
        # object is up|gate|down as they lie in the pack: contiguous
        files.append(("layers/%03d/%03d/object" % (layer, expert), start, end - start))
    return files


def check_load(seconds, nthreads, mount, pack, ls_json):
    files = load_entries(ls_json)
    pack_size = os.path.getsize(pack)
    # The whole pack is a file of the mount too, at offset 0.
    files.append((os.path.basename(pack), 0, pack_size))
    by_path = {os.path.join(mount, rel): (off, n) for rel, off, n in files}
    pack_fd = os.open(pack, os.O_RDONLY)
    deadline = time.monotonic() + seconds
    stats = {"reads": 0, "bytes": 0, "ls": 0, "stat": 0, "getfattr": 0}

    def count(key, n=1):
        with lock:
            stats[key] += n

    def reader(seed):
        rng = random.Random(seed)
        for _ in rounds(deadline):
            rel, base, size = rng.choice(files)
            path = os.path.join(mount, rel)
            # mostly small ranges, sometimes whole files, sometimes past EOF
            length = rng.choice((1, 84, 4096, 65536, 262144, size))
            off = rng.randrange(0, size + 1)
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    got = pread_all(fd, length, off)
                finally:
                    os.close(fd)
            except OSError as e:
                fail("read %s at %d+%d: %s" % (rel, off, length, e))
                continue
            want_n = max(0, min(length, size - off))
            want = pread_all(pack_fd, want_n, base + off)
            if got != want:
                fail("read %s at %d+%d: %d bytes, differ from the pack at %d"
                     % (rel, off, length, len(got), base + off))
            count("reads")
            count("bytes", len(got))

    def lister():
        for _ in rounds(deadline):
            r = subprocess.run(["ls", "-R", mount], capture_output=True, text=True)
            if r.returncode != 0:
                fail("ls -R exited %d: %s" % (r.returncode, r.stderr[:200]))
            elif "object" not in r.stdout or "layers" not in r.stdout:
                fail("ls -R does not list the tree")
            count("ls")

    def stater(seed):
        rng = random.Random(seed)
        for _ in rounds(deadline):
            batch = rng.sample(files, 20)
            r = subprocess.run(["stat", "-c", "%s %i %n"] +
                               [os.path.join(mount, rel) for rel, _, _ in batch],
                               capture_output=True, text=True)
            if r.returncode != 0:
                fail("stat exited %d: %s" % (r.returncode, r.stderr[:200]))
                continue
            inos = set()
            for line in r.stdout.splitlines():
                size, ino, path = line.split(" ", 2)
                inos.add(ino)
                if int(size) != by_path[path][1]:
                    fail("stat %s: size %s, expected %d" % (path, size, by_path[path][1]))
            if len(inos) != len(set(rel for rel, _, _ in batch)):
                fail("stat: %d files share %d inode numbers" % (len(batch), len(inos)))
            count("stat")

    def xattrs(seed):
        rng = random.Random(seed)
        roles = [f for f in files if "/" in f[0]]
        for _ in rounds(deadline):
            rel, base, size = rng.choice(roles)
            path = os.path.join(mount, rel)
            r = subprocess.run(["getfattr", "-d", "--absolute-names", path],
                               capture_output=True, text=True)
            if r.returncode != 0:
                fail("getfattr -d %s exited %d: %s" % (rel, r.returncode, r.stderr[:200]))
                continue
            got = {}
            for line in r.stdout.splitlines():
                if "=" in line:
                    k, v = line.split("=", 1)
                    got[k] = v.strip('"')
            want = {"user.moepack.offset": str(base), "user.moepack.nbytes": str(size)}
            for k, v in want.items():
                if got.get(k) != v:
                    fail("getfattr %s: %s is %r, expected %s" % (rel, k, got.get(k), v))
            count("getfattr")

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(nthreads)]
    threads += [threading.Thread(target=lister),
                threading.Thread(target=stater, args=(1000,)),
                threading.Thread(target=xattrs, args=(2000,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    os.close(pack_fd)
    print("load: %d reads, %d bytes verified by %d threads in %d s; beside them "
          "%d ls -R, %d stat (20 files each), %d getfattr -d; %d errors"
          % (stats["reads"], stats["bytes"], nthreads, seconds, stats["ls"],
             stats["stat"], stats["getfattr"], len(failures)), flush=True)
    for key in stats:
        if stats[key] == 0:
            fail("no %s completed" % key)


MAX_HANDLE_SZ = 128
AT_FDCWD = -100


class FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint),
                ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * MAX_HANDLE_SZ)]


def file_handle(path):
    libc = ctypes.CDLL(None, use_errno=True)
    fh = FileHandle()
    fh.handle_bytes = MAX_HANDLE_SZ
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(AT_FDCWD, path.encode(), ctypes.byref(fh),
                              ctypes.byref(mount_id), 0) != 0:
        return "no-handle(%s)" % os.strerror(ctypes.get_errno())
    return "%d:%s" % (fh.handle_type, bytes(fh.f_handle[:fh.handle_bytes]).hex())


def snapshot(mount, ls_json, out):
    files = load_entries(ls_json)
    rng = random.Random(7)
    sample = ["", "layers", "layers/001", "layers/092"]
    sample += [os.path.dirname(rel) for rel, _, _ in rng.sample(files, 10)]
    sample += [rel for rel, _, _ in rng.sample(files, 40)]
    lines = []
    for rel in sample:
        path = os.path.join(mount, rel)
        try:
            ino = os.stat(path).st_ino
        except OSError as e:
            fail("stat %s: %s" % (rel or "/", e))
            continue
        try:
            gen = os.getxattr(path, "user.moepack.generation").decode()
        except OSError:
            gen = "-"  # directories have none
        lines.append("%s %d %s %s" % (rel or "/", ino, gen, file_handle(path)))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("snapshot: %d paths" % len(lines))


def check_nfs(seconds, nclients, prefix, suffix, pack, ls_json):
    files = load_entries(ls_json)
    pack_fd = os.open(pack, os.O_RDONLY)
    deadline = time.monotonic() + seconds
    stats = {"reads": 0, "bytes": 0}

    def client(seed):
        rng = random.Random(seed)
        for _ in rounds(deadline):
            rel, base, size = rng.choice(files)
            r = subprocess.run(["timeout", os.environ.get("TEST_WAIT", "60"), "nfs-cat",
                                prefix + "/" + rel + suffix],
                               capture_output=True)
            if r.returncode != 0:
                fail("nfs-cat %s exited %d: %s" % (rel, r.returncode, r.stderr[:200]))
                continue
            if r.stdout != pread_all(pack_fd, size, base):
                fail("nfs-cat %s: %d bytes, differ from the pack's %d at %d"
                     % (rel, len(r.stdout), size, base))
            with lock:
                stats["reads"] += 1
                stats["bytes"] += len(r.stdout)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(nclients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    os.close(pack_fd)
    print("nfs: %d whole-file reads, %d bytes verified by %d concurrent nfs-cat "
          "clients in %d s; %d errors"
          % (stats["reads"], stats["bytes"], nclients, seconds, len(failures)), flush=True)
    if stats["reads"] < nclients:
        fail("only %d reads completed" % stats["reads"])


def main(argv):
    if len(argv) == 7 and argv[1] == "load":
        check_load(int(argv[2]), int(argv[3]), argv[4], argv[5], argv[6])
    elif len(argv) == 5 and argv[1] == "snapshot":
        snapshot(argv[2], argv[3], argv[4])
    elif len(argv) == 8 and argv[1] == "nfs":
        check_nfs(int(argv[2]), int(argv[3]), argv[4], argv[5], argv[6], argv[7])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
