#!/bin/sh
# remote.sh - figures of a pack mounted from its mirrors (moepackfs SOURCE
# MOUNTPOINT -o cache=DIR), against the same pack mounted locally and
# against `moepack fetch` of it, all from one loopback nginx
# (tests/servers/nginx.sh).  Not part of `make bench` (run.sh): run it by
# hand from the build directory, as root (rows R1 and R2 are also make
# bench's rows 29-30, on the bench's 8.8 GB pack):
#
#   top_builddir=. top_srcdir=.. sh ../tests/bench/remote.sh
#
# Rows, printed as a Markdown table:
#   R1 time to mount: remote (manifest, seal, signature, head fetched and
#      checked) against a local mount of the same pack, verify=seal
#   R2 fill: time from the remote mount to DIR/NAME.pack in place, against
#      `moepack fetch` of the same pack (goal of issue 28: >= 0.9 of its
#      throughput)
#   R3 cold on-demand: every object read once, O_DIRECT, 16 at a time,
#      through a remote mount with -o fill=off, against reading the filled
#      file natively (page cache dropped)
#
# Environment: BENCH_DIR (default /tmp/moepack-bench-remote), BENCH_EXPERTS
# (demo experts per layer, default 24: a pack of about 1.2 GB).
set -eu

: "${top_builddir:?set top_builddir}"
: "${top_srcdir:?set top_srcdir}"
BENCH_DIR=${BENCH_DIR:-/tmp/moepack-bench-remote}
EXPERTS=${BENCH_EXPERTS:-24}
MOEPACK=$top_builddir/src/moepack
MOEPACKFS=$top_builddir/src/moepackfs
SERVERS=$top_srcdir/tests/servers

rm -rf "$BENCH_DIR"
mkdir -p "$BENCH_DIR/packs" "$BENCH_DIR/m"
P=$BENCH_DIR/packs/a.pack
M=$BENCH_DIR/m
"$MOEPACK" mkdemo -q -o "$P" --experts "$EXPERTS" --alignment 4096 --seed 7 --full-sha256
"$MOEPACK" seal -q "$P"
openssl genpkey -algorithm ed25519 -out "$BENCH_DIR/k.pem" 2>/dev/null
openssl pkey -in "$BENCH_DIR/k.pem" -pubout -out "$BENCH_DIR/k.pub" 2>/dev/null
"$MOEPACK" sign --key "$BENCH_DIR/k.pem" "$P" >/dev/null
SIZE=$(stat -c %s "$P")
sh "$SERVERS/nginx.sh" start "$BENCH_DIR/ns" "$BENCH_DIR/packs" >/dev/null
trap 'fusermount3 -uz "$M" 2>/dev/null; sh "$SERVERS/nginx.sh" stop "$BENCH_DIR/ns" >/dev/null 2>&1' EXIT
. "$BENCH_DIR/ns/env"
URL=$NGINX_HTTP_URL/a.pack
K=trust=$BENCH_DIR/k.pub

now() {
	date +%s.%N
}
secs() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'
}
drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}
wait_file() {
	while [ ! -f "$1" ]; do sleep 0.05; done
}
objects_direct() {
	python3 - "$1" "$2" <<'EOF'
import os, sys, json, threading, mmap
root, ls = sys.argv[1], json.load(open(sys.argv[2]))
objs = sorted({(r["layer"], r["expert"]) for r in ls})
lock = threading.Lock()
work = list(objs)
def reader():
    buf = mmap.mmap(-1, 64 << 20)
    while True:
        with lock:
            if not work:
                return
            layer, expert = work.pop()
        rows = [r for r in ls if r["layer"] == layer and r["expert"] == expert]
        start = min(r["offset"] for r in rows) // 4096 * 4096
        end = max(r["offset"] + r["nbytes"] for r in rows)
        fd = os.open(os.path.join(root, "a.pack"), os.O_RDONLY | os.O_DIRECT)
        pos = start
        while pos < end:
            n = os.preadv(fd, [memoryview(buf)[: min(len(buf), (end - pos + 4095) // 4096 * 4096)]], pos)
            if n <= 0:
                break
            pos += n
        os.close(fd)
ts = [threading.Thread(target=reader) for _ in range(16)]
for t in ts: t.start()
for t in ts: t.join()
EOF
}

echo "| row | remote | against | ratio |"
echo "|---|---:|---:|---:|"

# R1: time to mount
mkdir -p "$BENCH_DIR/c1"
drop_caches
t0=$(now)
"$MOEPACKFS" -o "$K,cache=$BENCH_DIR/c1,fill=off" "$URL" "$M" 2>/dev/null
t1=$(now)
fusermount3 -u "$M"
drop_caches
t2=$(now)
"$MOEPACKFS" -o "verify=seal,$K" "$P" "$M" 2>/dev/null
t3=$(now)
fusermount3 -u "$M"
r=$(secs "$t0" "$t1") l=$(secs "$t2" "$t3")
echo "| R1 time to mount ($SIZE bytes) | $r s | local $l s | $(awk -v a="$r" -v b="$l" 'BEGIN { printf "%.2f", a / b }') |"

# R2: the fill against moepack fetch
mkdir -p "$BENCH_DIR/c2" "$BENCH_DIR/o"
drop_caches
t0=$(now)
"$MOEPACKFS" -o "$K,cache=$BENCH_DIR/c2" "$URL" "$M" 2>/dev/null
wait_file "$BENCH_DIR/c2/a.pack"
t1=$(now)
fusermount3 -u "$M"
cmp "$P" "$BENCH_DIR/c2/a.pack"
drop_caches
t2=$(now)
"$MOEPACK" fetch -q --trust "$BENCH_DIR/k.pub" -o "$BENCH_DIR/o/a.pack" "$URL" >/dev/null
t3=$(now)
r=$(secs "$t0" "$t1") l=$(secs "$t2" "$t3")
echo "| R2 fill to a local pack | $(awk -v s="$SIZE" -v t="$r" 'BEGIN { printf "%.0f MB/s", s / t / 1e6 }') | fetch $(awk -v s="$SIZE" -v t="$l" 'BEGIN { printf "%.0f MB/s", s / t / 1e6 }') | $(awk -v a="$r" -v b="$l" 'BEGIN { printf "%.2f", b / a }') |"

# R3: cold on-demand reads of every object, fill off
"$MOEPACK" ls --json "$P" >"$BENCH_DIR/ls.json"
mkdir -p "$BENCH_DIR/c3"
"$MOEPACKFS" -o "$K,cache=$BENCH_DIR/c3,fill=off" "$URL" "$M" 2>/dev/null
drop_caches
t0=$(now)
objects_direct "$M" "$BENCH_DIR/ls.json"
t1=$(now)
fusermount3 -u "$M"
drop_caches
t2=$(now)
objects_direct "$BENCH_DIR/packs" "$BENCH_DIR/ls.json"
t3=$(now)
r=$(secs "$t0" "$t1") l=$(secs "$t2" "$t3")
echo "| R3 cold on-demand, 16 O_DIRECT readers, whole objects | $r s | native $l s | $(awk -v a="$r" -v b="$l" 'BEGIN { printf "%.2f", b / a }') |"
