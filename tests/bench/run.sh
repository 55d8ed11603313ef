#!/bin/sh
# run.sh - `make bench`: moepackfs against the pack file read natively.
#
# Every throughput row reads the same byte ranges twice in the same run:
# through a moepackfs mount (per-role or per-object files) and straight from
# the pack file at the ranges' offsets, with tests/bench/readbench doing the
# reading both times.  The dense bench pack (~2.2 GB, K3-sized objects) sits
# in the page cache; "first read" rows use a fresh mount so that FUSE's own
# page cache starts empty.  A MISS is a figure, not an error: the script
# fails only when a tool fails or FUSE returns other bytes than the pack.
#
# Row 10 reads expert objects over NFSv4 from nfs-ganesha on 127.0.0.1
# (tests/nfs_lib.sh, the shipped export) with a libnfs client
# (tests/bench/nfsread.py) against readbench on the same objects of the
# local mount.
#
# Environment: top_builddir, top_srcdir (set by make); BENCH_DIR (default
# /tmp/moepack-bench); BENCH_ROWS (e.g. "1 2 3", default all);
# BENCH_MOUNT_OPTS (extra moepackfs options, e.g. "-o readahead_kb=1008");
# BENCH_CLEAN=1 to delete the bench packs afterwards.

set -eu

: "${top_builddir:?run me through make bench}"
: "${top_srcdir:?run me through make bench}"
BENCH_DIR=${BENCH_DIR:-/tmp/moepack-bench}
BENCH_ROWS=${BENCH_ROWS:-1 2 3 4 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33}
# Rounds of the hot-path rows (17-21): each a cold pass of every side.
HOT_ROUNDS=${HOT_ROUNDS:-3}
BENCH_MOUNT_OPTS=${BENCH_MOUNT_OPTS:-}

MOEPACK=$top_builddir/src/moepack
MOEPACKFS=$top_builddir/src/moepackfs
READBENCH=$top_builddir/tests/bench/readbench
CHECKBENCH=$top_builddir/tests/bench/checkbench
LOADERBENCH=$top_builddir/tests/bench/loaderbench
EPBENCH=$top_builddir/tests/bench/epbench
DEQUANTBENCH=$top_builddir/tests/bench/dequantbench
RESULTS=$top_builddir/bench-results.md

# Dense pack: K3 object geometry (up/gate Q2_K 3,612,672 B, down Q3_K
# 4,730,880 B: 11.96 MB objects), 2 experts x 92 layers = 2.2 GB.
DENSE_ARGS="--experts 2 --hidden 3584 --inter 3072 --alignment 4096 --full-sha256"
# The hot path's pack: K3 objects, 92 layers x 8 experts = 8.8 GB, sealed;
# read cold, so it must not fit the page cache of a smaller machine either.
HOT_ARGS="--experts 8 --hidden 3584 --inter 3072 --alignment 4096 --full-sha256"
# Full Kimi K3 geometry with the payload left as a hole (~986 GB apparent).
K3_ARGS="--sparse --experts 896 --hidden 3584 --inter 3072"
K3_ENTRIES=$((1 + 92 + 92 * 896 + 92 * 896 * 4))
SEED=20240611

DENSE=$BENCH_DIR/dense.pack
HOT=$BENCH_DIR/hot.pack
# The same K3 geometry, sealed and signed (rows 32-33), apart from k3.pack:
# a seal beside k3.pack would change what rows 1 and 7 measure.
K3S=$BENCH_DIR/k3s.pack
MNT_HOT=$BENCH_DIR/mnt-hot
K3=$BENCH_DIR/k3.pack
MNT_DENSE=$BENCH_DIR/mnt-dense
MNT_K3=$BENCH_DIR/mnt-k3
MNT_SEAL=$BENCH_DIR/mnt-seal
ROWS=$BENCH_DIR/rows.tsv
SAMPLES=$BENCH_DIR/samples
NOTES=$BENCH_DIR/notes.txt
FAILED=0

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

want_row() {
	case " $BENCH_ROWS " in *" $1 "*) return 0 ;; esac
	return 1
}

# Rows 3 to 7, 10 and 11 mount; rows 1, 2, 8, 9 and 12 only need the CLI.
fuse_rows=no
for n in 3 4 6 7 10 11 14 15 16 17 18 19 20 21 23; do want_row $n && fuse_rows=yes; done
for tool in "$MOEPACK" "$READBENCH" "$DEQUANTBENCH" "$CHECKBENCH" "$LOADERBENCH"; do
	[ -x "$tool" ] || die "$tool is not built"
done
[ $fuse_rows = no ] || [ -x "$MOEPACKFS" ] || die "$MOEPACKFS is not built"
for tool in python3 openssl fusermount3 pgrep; do
	command -v "$tool" >/dev/null || die "$tool is not installed"
done

is_mounted() {
	# /proc/self/mountinfo field 5 is the mount point (spaces escaped).
	awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

unmount() {
	if is_mounted "$1"; then
		fusermount3 -u "$1" 2>/dev/null || fusermount3 -uz "$1" ||
			say "cannot unmount $1"
	fi
}

. "$top_srcdir/tests/nfs_lib.sh"
NFS_DIR=$BENCH_DIR/ganesha
NFS_EXPORT_DIR=$MNT_DENSE
NFS_EXAMPLE=$top_srcdir/contrib/nfs-ganesha.conf

# unmount_gone MOUNTPOINT: unmount, then wait (60 s at most) for the daemon
# that served it to end: a remote mount's daemon holds its cache until then.
unmount_gone() {
	_pid=$(daemon_pid "$1") || _pid=
	unmount "$1"
	_n=0
	while [ -n "$_pid" ] && [ -d "/proc/$_pid" ] && [ "$_n" -lt 1200 ]; do
		sleep 0.05
		_n=$((_n + 1))
	done
	[ -z "$_pid" ] || [ ! -d "/proc/$_pid" ] || say "moepackfs $_pid still runs after its unmount"
}

# Rows 32-33: the remote mount's cache of the full K3 geometry (985.6 GB,
# preallocated) on a file system of its own, made on a sparse image file in
# BENCH_DIR and loop-mounted at LOOP_MNT: preallocation there writes extent
# metadata only.  loop_up makes it (LOOP_WHY says why not when it fails),
# loop_down takes it all away again.
LOOP_IMG=$BENCH_DIR/remote-cache.img
LOOP_MNT=$BENCH_DIR/remote-cache
LOOP_DEV=
LOOP_WHY=
loop_down() {
	if is_mounted "$LOOP_MNT"; then
		umount "$LOOP_MNT" || umount -l "$LOOP_MNT" || say "cannot unmount $LOOP_MNT"
	fi
	[ -z "$LOOP_DEV" ] || losetup -d "$LOOP_DEV" || say "cannot detach $LOOP_DEV"
	LOOP_DEV=
	rm -f "$LOOP_IMG"
	rmdir "$LOOP_MNT" 2>/dev/null || :
}
loop_up() {
	PATH=$PATH:/usr/sbin:/sbin
	[ -e /dev/loop-control ] || { LOOP_WHY="no /dev/loop-control"; return 1; }
	command -v losetup >/dev/null || { LOOP_WHY="no losetup"; return 1; }
	if command -v mkfs.xfs >/dev/null; then
		LOOP_FS=xfs
	elif command -v mkfs.ext4 >/dev/null; then
		LOOP_FS=ext4
	else
		LOOP_WHY="neither mkfs.xfs nor mkfs.ext4"
		return 1
	fi
	loop_down
	# 1.1 TB apparent; a small log, few inodes, nothing discarded or
	# zeroed at mkfs: the image holds a few MB until the cache is written
	truncate -s 1100G "$LOOP_IMG" || { LOOP_WHY="no 1.1 TB sparse file in $BENCH_DIR"; return 1; }
	case $LOOP_FS in
	xfs) mkfs.xfs -q -K -l size=64m "$LOOP_IMG" ;;
	ext4) mkfs.ext4 -q -F -i 67108864 -O ^has_journal \
		-E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$LOOP_IMG" ;;
	esac >/dev/null 2>&1 || { LOOP_WHY="mkfs.$LOOP_FS failed"; loop_down; return 1; }
	# direct I/O to the image where it can: no second copy in the page cache
	LOOP_DEV=$(losetup --find --show --direct-io=on "$LOOP_IMG" 2>/dev/null) ||
		LOOP_DEV=$(losetup --find --show "$LOOP_IMG" 2>/dev/null) ||
		{ LOOP_DEV=; LOOP_WHY="losetup refuses $LOOP_IMG"; loop_down; return 1; }
	mkdir -p "$LOOP_MNT"
	mount -o discard "$LOOP_DEV" "$LOOP_MNT" 2>/dev/null ||
		{ LOOP_WHY="cannot mount $LOOP_DEV ($LOOP_FS)"; loop_down; return 1; }
}

# The nginx of rows 31-33 (its state directory, while it runs) and their
# files: the objects row 31's aria2c fetches, aria2c's output, a cache dir.
RNS=
R_OBJ=$BENCH_DIR/r31-objects
R_OUT=$BENCH_DIR/r31-out
R_CACHE=$BENCH_DIR/r31-cache
MNT_R=$BENCH_DIR/mnt-rows

cleanup() {
	# ganesha first: it holds the mount it exports.
	[ -z "$GANESHA_PID" ] || ganesha_stop || say "cannot stop ganesha $GANESHA_PID"
	unmount "$MNT_DENSE"
	unmount "$MNT_K3"
	unmount "$MNT_SEAL"
	unmount "$MNT_HOT"
	# the remote mount before the file system of its cache
	if is_mounted "$MNT_R"; then unmount_gone "$MNT_R"; fi
	[ -z "$RNS" ] || sh "$top_srcdir/tests/servers/nginx.sh" stop "$RNS" >/dev/null 2>&1 || :
	loop_down
	rm -rf "$R_OBJ" "$R_OUT" "$R_CACHE"
	rm -f "$BENCH_DIR/remote-status.json"
	if [ "${BENCH_CLEAN:-0}" = 1 ]; then
		# Only names this script makes: BENCH_DIR may be a shared directory.
		rm -f "$DENSE" "$DENSE".* "$K3" "$K3".* "$HOT" "$HOT".* "$BENCH_DIR"/dense.* \
			"$BENCH_DIR"/deepseek.pack "$BENCH_DIR"/deepseek.pack.manifest.json \
			"$K3S" "$K3S".* "$ROWS" "$NOTES" "$SAMPLES".*
		rmdir "$MNT_DENSE" "$MNT_K3" "$MNT_SEAL" "$MNT_HOT" "$MNT_R" 2>/dev/null || :
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_pack() { # PACK MOUNTPOINT
	unmount "$2"
	mkdir -p "$2"
	# verify=index unless the options say otherwise (a later -o verify wins):
	# a seal beside the pack would make verify=seal the default
	# shellcheck disable=SC2086 # BENCH_MOUNT_OPTS is a list of words
	"$MOEPACKFS" -o verify=index $BENCH_MOUNT_OPTS "$1" "$2" >&2 ||
		die "moepackfs $1 $2 failed"
	is_mounted "$2" || die "moepackfs returned but $2 is not mounted"
}

# rb MODE ARGS...: readbench's key=value line in RB_OUT, or the script stops.
# (Never inside a pipeline: a failure there would not stop anything.)
rb() {
	RB_OUT=$("$READBENCH" "$@") || die "readbench $* failed"
}

# sample SET [KEY]: keep KEY (MBps) of the last readbench line in sample set
# SET; take_median SET: MEDIAN of the set, which starts over.  FUSE and
# native runs of a row alternate, so that load from elsewhere on the machine
# hits both sides alike.
sample() {
	kv "${2:-MBps}" "$RB_OUT" >>"$SAMPLES.$1"
}
take_median() {
	MEDIAN=$(median <"$SAMPLES.$1") || die "no samples in $1"
	rm -f "$SAMPLES.$1"
}

# kv KEY LINE: the value of KEY in a readbench line.
kv() {
	printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

median() { # numbers on stdin, one per line
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) exit 1
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

calc() { awk "BEGIN { printf \"%.${2:-2}f\", $1 }"; }

# row SCENARIO MOEPACKFS NATIVE RATIO TARGET RESULT
row() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$ROWS"
	say "$(printf '%s | ' "$@")"
}

# ratio_row SCENARIO FUSE_MBPS NATIVE_MBPS MIN_RATIO [NOTE]
ratio_row() {
	ratio=$(calc "$2 / $3")
	result=$(awk -v r="$ratio" -v t="$4" 'BEGIN { print (r >= t) ? "PASS" : "MISS" }')
	row "$1" "$(calc "$2" 0) MB/s" "$(calc "$3" 0) MB/s" "$ratio" ">= $4" "$result"
}

# limit_row SCENARIO VALUE UNIT MAX BASELINE
limit_row() {
	result=$(awk -v v="$2" -v t="$4" 'BEGIN { print (v < t) ? "PASS" : "MISS" }')
	row "$1" "$2 $3" "$5" "-" "< $4 $3" "$result"
}

# make_pack PACK ARGS: reuse PACK if it was made with ARGS and still verifies.
make_pack() {
	if [ -f "$1" ] && [ -f "$1.args" ] && [ "$(cat "$1.args")" = "$2" ] &&
		"$MOEPACK" verify "$1" >/dev/null 2>&1; then
		say "reusing $1"
		return
	fi
	say "making $1 ($2)"
	rm -f "$1" "$1.args"
	# shellcheck disable=SC2086 # ARGS is a list of words
	"$MOEPACK" mkdemo --quiet --out "$1" $2 || die "moepack mkdemo --out $1 $2 failed"
	printf '%s\n' "$2" >"$1.args"
}

# signed_pack PACK ARGS [SEAL_OPTION]: make_pack, then sealed (moepack seal
# [SEAL_OPTION]) and signed with FK (made once: a new key voids the
# signatures of the old one, which are made again).
FK=$BENCH_DIR/fetch-key
signed_pack() {
	make_pack "$1" "$2"
	if [ ! -f "$1.seal" ] || [ ! "$1.seal" -nt "$1" ]; then
		# shellcheck disable=SC2086 # no option is no word
		"$MOEPACK" seal -q ${3:-} "$1" >&2 || die "moepack seal $1 failed"
	fi
	if [ ! -f "$FK.pub" ] || [ ! -f "$FK.pem" ]; then
		openssl genpkey -algorithm ed25519 -out "$FK.pem" 2>/dev/null &&
			openssl pkey -in "$FK.pem" -pubout -out "$FK.pub" 2>/dev/null ||
			die "cannot make the key $FK.pem"
	fi
	if [ ! -f "$1.sig" ] || [ "$1.sig" -ot "$1.seal" ] || [ "$1.sig" -ot "$FK.pub" ]; then
		"$MOEPACK" sign -q --key "$FK.pem" "$1" >&2 || die "cannot sign $1"
	fi
}

warm() { cat "$1" >/dev/null; }

# snapshot_after MOUNT: MOUNT/status.json once it is a snapshot made after
# now (its ctime is when it was made: moepackfs(1)), so that it counts
# every read done before the call; at most 10 s.
snapshot_after() {
	python3 - "$1/status.json" <<'EOF2'
import os, sys, time
start = time.time_ns()
while os.stat(sys.argv[1]).st_ctime_ns <= start and time.time_ns() - start < 10 ** 10:
    time.sleep(0.05)
sys.stdout.write(open(sys.argv[1]).read())
EOF2
}

# The daemon serving MOUNTPOINT: a moepackfs process with it as an argument.
daemon_pid() {
	for pid in $(pgrep -f moepackfs); do
		[ -r "/proc/$pid/cmdline" ] || continue
		if tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qxF "$1" &&
			tr '\0' '\n' <"/proc/$pid/cmdline" | head -n1 | grep -q 'moepackfs$'; then
			echo "$pid"
			return
		fi
	done
	return 1
}

# Range lists from `moepack ls --json`: per role and per object, once as
# files of the mount and once as ranges of the pack.  Directory names are
# taken from a probe mount, so zero padding is whatever moepackfs chose.
make_lists() { # PACK MOUNTPOINT OUTPREFIX
	mount_pack "$1" "$2"
	"$MOEPACK" ls --json "$1" >"$3.ls.json" || die "moepack ls --json $1 failed"
	python3 - "$1" "$2" "$3" <<'EOF' || die "cannot build range lists for $1"
import json, os, sys

pack, mnt, out = sys.argv[1:4]
# A JSON array of {"layer", "expert", "role", "offset", "nbytes", ...}.
roles = {(e["layer"], e["expert"], e["role"]): (e["offset"], e["nbytes"])
         for e in json.load(open(out + ".ls.json"))}
if not roles:
    sys.exit("moepack ls --json listed no entries")

layers_dir = os.path.join(mnt, "layers")
layer_names = {int(n): n for n in os.listdir(layers_dir)}
first = sorted(layer_names)[0]
expert_names = {int(n): n for n in os.listdir(os.path.join(layers_dir, layer_names[first]))}

keys = sorted({(l, e) for l, e, _ in roles})
with open(out + ".roles.native", "w") as rn, open(out + ".roles.fuse", "w") as rf, \
        open(out + ".objects.native", "w") as on, open(out + ".objects.fuse", "w") as of:
    for l, e in keys:
        d = os.path.join(layers_dir, layer_names[l], expert_names[e])
        for r in ("up", "gate", "down"):
            o, n = roles[(l, e, r)]
            rn.write(f"{pack} {o} {n}\n")
            rf.write(f"{os.path.join(d, r)} 0 {n}\n")
        up, down = roles[(l, e, "up")], roles[(l, e, "down")]
        size = down[0] + down[1] - up[0]
        on.write(f"{pack} {up[0]} {size}\n")
        of.write(f"{os.path.join(d, 'object')} 0 {size}\n")
    pack_size = os.path.getsize(pack)
    whole = os.path.join(mnt, os.path.basename(pack))
    if os.stat(whole).st_size != pack_size:
        sys.exit(f"{whole}: size is not the pack's {pack_size} bytes")
    with open(out + ".whole.native", "w") as wn, open(out + ".whole.fuse", "w") as wf:
        wn.write(f"{pack} 0 {pack_size}\n")
        wf.write(f"{whole} 0 {pack_size}\n")
    # One object's sizes are enough to catch a tree that disagrees with ls.
    l, e = keys[-1]
    d = os.path.join(layers_dir, layer_names[l], expert_names[e])
    for r in ("up", "gate", "down", "object"):
        want = size if r == "object" else roles[(l, e, r)][1]
        if os.stat(os.path.join(d, r)).st_size != want:
            sys.exit(f"{d}/{r}: size is not the {want} bytes moepack ls implies")
EOF
	unmount "$2"
}


# json_seal MNT KEY: status.json's seal.KEY; json_storage MNT: the bytes the
# daemon read from storage, every way.
json_seal() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["seal"][sys.argv[2]])' \
		"$1/status.json" "$2"
}
json_storage() {
	python3 -c 'import json, sys; print(sum(json.load(open(sys.argv[1]))["storage"]["bytes_read"].values()))' \
		"$1/status.json"
}

# The bdi readahead a FUSE mount ended up with (what the kernel asks for).
mount_readahead() {
	dev=$(mountpoint -d "$1" 2>/dev/null) || { echo "?"; return; }
	cat "/sys/class/bdi/$dev/read_ahead_kb" 2>/dev/null || echo "?"
}

mkdir -p "$BENCH_DIR"
: >"$ROWS"
: >"$NOTES"
rm -f "$SAMPLES".*
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$NOTES"
START=$(date +%s)

#
# Row 1: validation at full Kimi K3 scale (index and manifest only).
#
if want_row 1 || want_row 7; then
	make_pack "$K3" "$K3_ARGS"
fi
if want_row 1; then
	rb run -n 7 -- "$MOEPACK" verify "$K3"
	ms=$(calc "$(kv median_seconds "$RB_OUT") * 1000" 1)
	mb=$(calc "$(kv maxrss_kb "$RB_OUT") / 1024" 1)
	ref="Python loader 6.5-8.5 s (not run)"
	limit_row "1. verify K3 sparse (247,296 entries), median of 7" "$ms" ms 100 "$ref"
	limit_row "1. verify K3 sparse, peak RSS" "$mb" MB 64 "-"
fi

#
# Rows 2-6 share the dense pack and its range lists.
#
if want_row 2 || want_row 3 || want_row 4 || want_row 5 || want_row 6 || want_row 9 ||
	want_row 10 || want_row 13 || want_row 14 || want_row 15 || want_row 16; then
	make_pack "$DENSE" "$DENSE_ARGS"
	DENSE_SIZE=$(stat -c %s "$DENSE")
	L=$BENCH_DIR/dense
	if [ $fuse_rows = yes ]; then
		make_lists "$DENSE" "$MNT_DENSE" "$L"
		objects=$(wc -l <"$L.objects.native")
		say "dense pack: $DENSE_SIZE bytes, $objects objects"
	fi
	warm "$DENSE"
fi

if want_row 2; then
	# Whole processes, alternating, so that load from elsewhere on the
	# machine falls on both alike; the median of 5 wall times each.
	for _ in 1 2 3 4 5; do
		rb run -n 1 -- "$MOEPACK" verify --full "$DENSE"
		sample ours median_seconds
		rb run -n 1 -- openssl dgst -sha256 "$DENSE"
		sample theirs median_seconds
	done
	take_median ours
	ours=$(calc "$DENSE_SIZE / 1e6 / $MEDIAN" 1)
	take_median theirs
	theirs=$(calc "$DENSE_SIZE / 1e6 / $MEDIAN" 1)
	ratio_row "2. verify --full vs openssl dgst -sha256, 2.2 GB warm, 5 alternating runs, median" \
		"$ours" "$theirs" 1.1
fi

if want_row 3 || want_row 4; then
	warm "$DENSE"
	# A fresh mount per FUSE pass: its page cache is empty each time.
	for i in 1 2 3; do
		rb seq "$L.roles.native"
		sample native
		mount_pack "$DENSE" "$MNT_DENSE"
		rb seq "$L.roles.fuse"
		sample first
		[ "$i" = 3 ] || unmount "$MNT_DENSE"
	done
	take_median native
	native=$MEDIAN
	take_median first
	if want_row 3; then
		ratio_row "3. seq 1 MiB reads of role files, first read (fresh mount)" \
			"$MEDIAN" "$native" 0.25
	fi
	if want_row 4; then
		echo "seq: FUSE bdi read_ahead_kb=$(mount_readahead "$MNT_DENSE")" >>"$NOTES"
		# The last mount's cache is full: re-read it.
		for _ in 1 2 3; do
			rb seq "$L.roles.fuse"
			sample again
			rb seq "$L.roles.native"
			sample native
		done
		take_median native
		native=$MEDIAN
		take_median again
		ratio_row "4. seq 1 MiB re-read, FUSE page cache kept" "$MEDIAN" "$native" 0.8
	fi
	unmount "$MNT_DENSE"
fi

if want_row 3; then
	# The same bytes as one file (MOUNT/<pack>): what 552 opens, lookups and
	# read-ahead ramps cost on top of the data path.
	for _ in 1 2 3; do
		rb seq "$L.whole.native"
		sample native
		mount_pack "$DENSE" "$MNT_DENSE"
		rb seq "$L.whole.fuse"
		sample whole
		unmount "$MNT_DENSE"
	done
	take_median native
	native=$MEDIAN
	take_median whole
	row "3. (reference) same, whole pack as one file MOUNT/$(basename "$DENSE")" \
		"$(calc "$MEDIAN" 0) MB/s" "$(calc "$native" 0) MB/s" "$(calc "$MEDIAN / $native")" \
		"reference" "-"
fi

if want_row 6; then
	warm "$DENSE"
	sums=$BENCH_DIR/mmap-sums
	: >"$sums"
	# Pass 1 on a fresh mount each time; the last mount stays for pass 2.
	for i in 1 2 3; do
		rb mmap "$L.roles.native"
		echo "native $(kv sum "$RB_OUT")" >>"$sums"
		sample native
		mount_pack "$DENSE" "$MNT_DENSE"
		rb mmap "$L.roles.fuse"
		echo "fuse-first $(kv sum "$RB_OUT")" >>"$sums"
		sample first
		[ "$i" = 3 ] || unmount "$MNT_DENSE"
	done
	for _ in 1 2 3; do
		rb mmap "$L.roles.fuse"
		echo "fuse-cached $(kv sum "$RB_OUT")" >>"$sums"
		sample again
		rb mmap "$L.roles.native"
		echo "native $(kv sum "$RB_OUT")" >>"$sums"
		sample native2
	done
	unmount "$MNT_DENSE"
	take_median native
	native=$MEDIAN
	take_median first
	first=$MEDIAN
	take_median native2
	native2=$MEDIAN
	take_median again
	again=$MEDIAN
	ratio_row "6. mmap role files, sum every word, first touch (fresh mount)" \
		"$first" "$native" 0.25
	ratio_row "6. mmap, pages already in FUSE page cache (second pass)" \
		"$again" "$native2" 0.45
	if [ "$(cut -d' ' -f2 "$sums" | sort -u | wc -l)" != 1 ]; then
		say "FUSE and native word sums differ:"
		sort "$sums" | uniq -c >&2
		row "6. mmap word sums FUSE = native" "differ" "see stderr" "-" "equal" "FAIL"
		FAILED=1
	else
		echo "mmap: FUSE and native word sums equal ($(head -n1 "$sums" | cut -d' ' -f2))" \
			>>"$NOTES"
	fi
	rm -f "$sums"
fi

#
# Row 10: expert objects over NFSv4 (nfs-ganesha, libnfs) against the same
# objects read from the local mount.
#
if want_row 10; then
	why=$(ganesha_missing)
	if [ -n "$why" ]; then
		row "10. expert objects over NFSv4 via nfs-ganesha vs local mount" "skipped" \
			"$why" "-" "reference" "-"
	else
		# Every 8th object (23 of 184, 275 MB): both sides read exactly these.
		# (libnfs cannot go faster than one connection; the point is the
		# ratio, not a figure for a real NFS client.)
		awk 'NR % 8 == 1' "$L.objects.fuse" >"$L.nfs.fuse"
		awk 'NR % 8 == 1' "$L.objects.native" >"$L.nfs.native"
		# Export-relative paths with the pack offsets, for nfsread.py -c.
		sed "s|^$MNT_DENSE||" "$L.nfs.fuse" | cut -d' ' -f1 |
			paste -d' ' - "$L.nfs.native" | cut -d' ' -f1,3,4 >"$L.nfs.list"
		nfs_bytes=$(awk '{ n += $3 } END { print n }' "$L.nfs.list")
		warm "$DENSE"
		mount_pack "$DENSE" "$MNT_DENSE"
		mkdir -p "$NFS_DIR"
		ganesha_start || die "nfs-ganesha does not start: see $NFS_DIR/ganesha.log"
		url=$(ganesha_url "")
		# Untimed: fills FUSE's page cache for both sides and checks every
		# byte read over NFS against the pack.
		rb seq "$L.nfs.fuse"
		NFS_OUT=$(python3 "$top_srcdir/tests/bench/nfsread.py" -n 1 -c "$DENSE" \
			"$url" "$L.nfs.list") || {
			FAILED=1
			row "10. NFS bytes = pack bytes" "differ or unreadable" "see stderr" "-" \
				"equal" "FAIL"
		}
		if [ "$FAILED" = 0 ]; then
			for _ in 1 2 3; do
				NFS_OUT=$(python3 "$top_srcdir/tests/bench/nfsread.py" -n 1 \
					"$url" "$L.nfs.list") || die "nfsread.py failed"
				kv MBps "$NFS_OUT" >>"$SAMPLES.nfs"
				rb seq "$L.nfs.fuse"
				sample local
			done
			take_median nfs
			nfs=$MEDIAN
			take_median local
			row "10. 12 MiB expert objects over NFSv4 (ganesha, libnfs, 1 MiB reads) vs local mount" \
				"$(calc "$nfs" 0) MB/s" "$(calc "$MEDIAN" 0) MB/s (local mount)" \
				"$(calc "$nfs / $MEDIAN")" "reference" "-"
			echo "nfs: $((nfs_bytes / 1000000)) MB per pass, $(wc -l <"$L.nfs.list") objects; both sides from FUSE's page cache; bytes over NFS checked against the pack" >>"$NOTES"
		fi
		ganesha_stop || say "cannot stop ganesha"
		GANESHA_PID=
		unmount "$MNT_DENSE"
	fi
fi

#
# Row 7: the full K3 tree through FUSE.
#
if want_row 7; then
	ready=$BENCH_DIR/k3-ready
	found=$BENCH_DIR/k3-find
	rss=$BENCH_DIR/k3-rss
	: >"$ready"
	: >"$found"
	: >"$rss"
	slow_find=no
	warm_find=
	for _ in 1 2 3; do
		unmount "$MNT_K3"
		mkdir -p "$MNT_K3"
		# moepackfs returns once the mount is up: its wall time is mount-to-ready.
		# shellcheck disable=SC2086
		rb run -n 1 -- "$MOEPACKFS" $BENCH_MOUNT_OPTS "$K3" "$MNT_K3"
		is_mounted "$MNT_K3" || die "moepackfs returned but $MNT_K3 is not mounted"
		kv median_seconds "$RB_OUT" >>"$ready"
		# A find far over its target is not repeated: the row says so.
		if [ "$slow_find" = no ]; then
			rb run -n 1 -O "$BENCH_DIR/k3-find.out" -- find "$MNT_K3/layers"
			seconds=$(kv median_seconds "$RB_OUT")
			echo "$seconds" >>"$found"
			count=$(wc -l <"$BENCH_DIR/k3-find.out")
			slow_find=$(awk -v s="$seconds" 'BEGIN { print (s > 10) ? "yes" : "no" }')
			pid=$(daemon_pid "$MNT_K3") || die "no moepackfs process serves $MNT_K3"
			awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" >>"$rss"
			if [ -z "$warm_find" ]; then
				# For scale: the same walk with the kernel's dentries cached.
				rb run -n 1 -- find "$MNT_K3/layers"
				warm_find=$(kv median_seconds "$RB_OUT")
			fi
		fi
		unmount "$MNT_K3"
	done
	finds=$(wc -l <"$found")
	rm -f "$BENCH_DIR/k3-find.out"
	# Native baseline: the same names as plain directories and empty files
	# on the bench disk, walked with the kernel's caches warm (made once).
	tree=$BENCH_DIR/k3-tree
	if [ "$(cat "$tree.stamp" 2>/dev/null)" != "$K3_ENTRIES" ]; then
		say "making $tree (the K3 tree as plain files, once)"
		rm -rf "$tree" "$tree.stamp"
		python3 - "$tree/layers" <<'PY'
import os, sys
root = sys.argv[1]
for layer in range(1, 93):
    for expert in range(896):
        d = os.path.join(root, "%03d" % layer, "%03d" % expert)
        os.makedirs(d)
        for name in ("up", "gate", "down", "object"):
            os.close(os.open(os.path.join(d, name), os.O_CREAT | os.O_WRONLY, 0o444))
PY
		echo "$K3_ENTRIES" >"$tree.stamp"
	fi
	find "$tree/layers" >/dev/null
	rb run -n 3 -O "$BENCH_DIR/k3-find.out" -- find "$tree/layers"
	native_find=$(kv median_seconds "$RB_OUT")
	[ "$(wc -l <"$BENCH_DIR/k3-find.out")" = "$K3_ENTRIES" ] ||
		die "the plain-file K3 tree has $(wc -l <"$BENCH_DIR/k3-find.out") entries"
	rm -f "$BENCH_DIR/k3-find.out"
	limit_row "7. K3 sparse: mount to ready, median of 3" \
		"$(calc "$(median <"$ready")" 3)" s 0.5 "-"
	fuse_find=$(median <"$found")
	row "7. K3 sparse: find MOUNT/layers ($count entries), fresh mount, median of $finds" \
		"$(calc "$fuse_find" 2) s" "$(calc "$native_find" 2) s (plain files, warm)" \
		"$(calc "$native_find / $fuse_find" 2)" "< 3 s" \
		"$(awk -v v="$fuse_find" 'BEGIN { print (v < 3) ? "PASS" : "MISS" }')"
	limit_row "7. K3 sparse: daemon peak RSS (VmHWM) after find, max of $finds" \
		"$(calc "$(sort -n "$rss" | tail -n1) / 1024" 1)" MB 64 "-"
	echo "find: a second find on the same mount (dentries cached) took $(calc "$warm_find" 2) s" \
		>>"$NOTES"
	if [ "$count" != "$K3_ENTRIES" ]; then
		row "7. K3 tree entry count" "$count" "-" "-" "= $K3_ENTRIES" "FAIL"
		FAILED=1
	fi
	rm -f "$ready" "$found" "$rss"
fi
#
# Row 8: dequantization, ours against ggml's reference on the same blocks.
#
if want_row 8; then
	DQ_OUT=$("$DEQUANTBENCH" -n 15) || die "dequantbench failed"
	for t in Q2_K Q3_K MXFP4; do
		ours=$(kv "${t}_ours_MBps" "$DQ_OUT")
		ggml=$(kv "${t}_ggml_MBps" "$DQ_OUT")
		name="8. dequantize $t to float32 (16 MiB out), vs ggml dequantize_row, median of 15"
		if [ -z "$ggml" ] || [ "$ggml" = none ]; then
			row "$name" "$ours MB/s" "no ggml library" "-" ">= 1.0" "NO BASELINE"
			continue
		fi
		ratio_row "$name" "$ours" "$ggml" 1.0
		if [ "$(kv "${t}_identical" "$DQ_OUT")" != yes ]; then
			row "8. $t output bit-identical to ggml" "no" "-" "-" "= yes" "FAIL"
			FAILED=1
		fi
	done
	case $DQ_OUT in
	*why=*) echo "dequantize baseline missing: ${DQ_OUT#*why=}" >>"$NOTES" ;;
	*) echo "dequantize baseline: $(kv ggml "$DQ_OUT")" >>"$NOTES" ;;
	esac
fi

#
# Row 9: the payload scan against the full digest, both warm, and the two
# together (one read) against the digest alone.
#
if want_row 9; then
	warm "$DENSE"
	# The three commands alternate, so that load from elsewhere on the
	# machine falls on all of them alike.
	for i in 1 2 3; do
		rb run -n 1 -- "$MOEPACK" verify --full "$DENSE"
		sample full median_seconds
		rb run -n 1 -- "$MOEPACK" verify --payload "$DENSE"
		sample scan median_seconds
		rb run -n 1 -- "$MOEPACK" verify --full --payload "$DENSE"
		sample both median_seconds
	done
	take_median full
	full=$(calc "$DENSE_SIZE / 1e6 / $MEDIAN" 1)
	take_median scan
	scan=$(calc "$DENSE_SIZE / 1e6 / $MEDIAN" 1)
	take_median both
	both=$(calc "$DENSE_SIZE / 1e6 / $MEDIAN" 1)
	ratio_row "9. verify --payload vs verify --full, 2.2 GB warm, median of 3" \
		"$scan" "$full" 2
	ratio_row "9. verify --full --payload (one read) vs verify --full, 2.2 GB warm" \
		"$both" "$full" 0.9
fi

#
# Row 11: the .f32 files of -o dequant read through a fresh mount against
# `moepack dump --f32` of the same roles in one process each (decoding with
# no FUSE in between), both warm, alternating, median of 3.
#
if want_row 11; then
	warm "$DENSE"
	DQ_ROLES="1 23 46 69 92"
	DQ_LIST=$BENCH_DIR/dense.f32.fuse
	dq_bytes=0
	mount_pack_dequant() {
		unmount "$MNT_DENSE"
		mkdir -p "$MNT_DENSE"
		# shellcheck disable=SC2086 # BENCH_MOUNT_OPTS is a list of words
		"$MOEPACKFS" $BENCH_MOUNT_OPTS -o dequant "$DENSE" "$MNT_DENSE" >&2 ||
			die "moepackfs -o dequant failed"
	}
	mount_pack_dequant
	: >"$DQ_LIST"
	for l in $DQ_ROLES; do
		for r in up gate down; do
			f=$MNT_DENSE/layers/$(printf %03d "$l")/000/$r.f32
			n=$(stat -c %s "$f") || die "no $f"
			printf '%s 0 %s\n' "$f" "$n" >>"$DQ_LIST"
			dq_bytes=$((dq_bytes + n))
		done
	done
	# the same bytes must come out both ways
	l=${DQ_ROLES%% *}
	"$MOEPACK" dump --f32 "$DENSE" "$l" 0 down >"$BENCH_DIR/dense.f32.ref" ||
		die "moepack dump failed"
	if cmp -s "$BENCH_DIR/dense.f32.ref" "$MNT_DENSE/layers/$(printf %03d "$l")/000/down.f32"; then
		echo "dequant: down.f32 of layer $l expert 0 equals moepack dump --f32" >>"$NOTES"
	else
		row "11. .f32 through the mount equals dump --f32" "differs" "-" "-" "equal" "FAIL"
		FAILED=1
	fi
	rm -f "$BENCH_DIR/dense.f32.ref"
	unmount "$MNT_DENSE"
	dq_dump="for l in $DQ_ROLES; do for r in up gate down; do"
	dq_dump="$dq_dump '$MOEPACK' dump --f32 '$DENSE' \$l 0 \$r >/dev/null || exit 1; done; done"
	for _ in 1 2 3; do
		rb run -n 1 -- sh -c "$dq_dump"
		sample dump median_seconds
		mount_pack_dequant
		rb seq "$DQ_LIST"
		sample f32
		unmount "$MNT_DENSE"
	done
	take_median dump
	dump=$(calc "$dq_bytes / 1e6 / $MEDIAN" 1)
	take_median f32
	ratio_row "11. -o dequant: read .f32 files (15 roles, fresh mount) vs dump --f32" \
		"$MEDIAN" "$dump" 0.5
fi

#
# Row 12: moepack build against cp + sync of the same shard bytes.
#
if want_row 13; then
	# verify --seal hashes chunks on --jobs threads, verify --full the whole
	# file on one; the same warm pack, commands alternating, median of 3.
	"$MOEPACK" seal --quiet "$DENSE" || die "moepack seal $DENSE failed"
	warm "$DENSE"
	for i in 1 2 3; do
		rb run -n 1 -- "$MOEPACK" verify --full "$DENSE"
		sample full median_seconds
		rb run -n 1 -- "$MOEPACK" verify --seal --jobs 1 "$DENSE"
		sample seal1 median_seconds
		rb run -n 1 -- "$MOEPACK" verify --seal --jobs 2 "$DENSE"
		sample seal2 median_seconds
	done
	take_median full
	full=$(calc "$DENSE_SIZE / 1e6 / $MEDIAN" 1)
	take_median seal1
	seal1=$(calc "$DENSE_SIZE / 1e6 / $MEDIAN" 1)
	take_median seal2
	seal2=$(calc "$DENSE_SIZE / 1e6 / $MEDIAN" 1)
	ratio_row "13. verify --seal --jobs 2 vs verify --full, warm, median of 3" \
		"$seal2" "$full" 1.8
	ratio_row "13. verify --seal --jobs 2 vs --jobs 1 (scaling), warm, median of 3" \
		"$seal2" "$seal1" 1.8
fi

if want_row 12; then
	# moepack build from a split GGUF checkpoint made here in plain Python
	# (tests/data/build/mkshards.py; 48 experts: ~2.5 GB of shards), against
	# cp + sync of the same shard files to the same disk.  Shards are warm
	# for every run; the pack's final fsync is part of the build's time.
	G=$BENCH_DIR/gguf
	if [ ! -f "$G/kimi-k3-test-00003-of-00003.gguf" ] || [ "$(cat "$G/args" 2>/dev/null)" != 48 ]; then
		say "making GGUF shards in $G"
		rm -rf "$G"
		python3 "$top_srcdir/tests/data/build/mkshards.py" "$G" --experts 48 ||
			die "mkshards.py failed"
		echo 48 >"$G/args"
	fi
	SHARD_BYTES=$(cat "$G"/*.gguf | wc -c)
	for f in "$G"/*.gguf; do warm "$f"; done
	BPACK=$BENCH_DIR/build.pack
	CPDIR=$BENCH_DIR/cp
	timed() {
		_t0=$(date +%s.%N)
		"$@" || die "$* failed"
		_t1=$(date +%s.%N)
		calc "$_t1 - $_t0" 3
	}
	for i in 1 2 3; do
		rm -rf "$CPDIR" && mkdir -p "$CPDIR" && sync
		timed sh -c "cp '$G'/*.gguf '$CPDIR'/ && sync" >>"$SAMPLES.cp"
		rm -rf "$CPDIR" && rm -f "$BPACK" "$BPACK.manifest.json" "$BPACK.seal" && sync
		timed "$MOEPACK" build -q --any-geometry --margin 0 --gguf "$G/kimi-k3-test-00001-of-00003.gguf" \
			--config "$G/config.json" --out "$BPACK" >>"$SAMPLES.build"
		rm -f "$BPACK" "$BPACK.manifest.json" "$BPACK.seal" && sync
		timed "$MOEPACK" build -q --any-geometry --margin 0 --full-sha256 \
			--gguf "$G/kimi-k3-test-00001-of-00003.gguf" --config "$G/config.json" \
			--out "$BPACK" >>"$SAMPLES.sha"
		rm -f "$BPACK" "$BPACK.manifest.json" "$BPACK.seal"
	done
	take_median cp
	cp_rate=$(calc "$SHARD_BYTES / 1e6 / $MEDIAN" 1)
	take_median build
	build_rate=$(calc "$SHARD_BYTES / 1e6 / $MEDIAN" 1)
	take_median sha
	sha_rate=$(calc "$SHARD_BYTES / 1e6 / $MEDIAN" 1)
	ratio_row "12. moepack build, 2.5 GB GGUF shards, vs cp + sync, median of 3" \
		"$build_rate" "$cp_rate" 0.8
	ratio_row "12. moepack build --full-sha256 (hash while copying) vs cp + sync" \
		"$sha_rate" "$cp_rate" 0.5
	rm -f "$BPACK.lock"
fi

# Rows 14 and 15: -o verify=seal against the default verify=index, the
# same role files, a fresh mount (empty page cache, every chunk unchecked)
# for each first read, alternating; then a re-read of the last mounts.
if want_row 14 || want_row 15; then
	[ -f "$DENSE.seal" ] && [ "$DENSE.seal" -nt "$DENSE" ] ||
		"$MOEPACK" seal "$DENSE" >&2 || die "moepack seal $DENSE failed"
	warm "$DENSE"
	warm "$DENSE.seal"
	sed "s|$MNT_DENSE/|$MNT_SEAL/|" "$L.roles.fuse" >"$L.roles.seal"
	# Each side is unmounted right after its pass, so that the next
	# mount's page cache takes the memory the last one gave back.  On
	# these VMs memory the guest has not touched lately (free pages it
	# reported to the host) costs a fault in the host on first touch: a
	# second mount filling its cache while the first still holds 2.2 GB
	# ran at half speed, whichever side it was (tests/bench/HISTORY.md).
	for i in 1 2 3; do
		mount_pack "$DENSE" "$MNT_DENSE"
		rb seq "$L.roles.fuse"
		sample index
		unmount "$MNT_DENSE"
		BENCH_MOUNT_OPTS="$BENCH_MOUNT_OPTS -o verify=seal" mount_pack "$DENSE" "$MNT_SEAL"
		rb seq "$L.roles.seal"
		sample seal
		[ "$i" = 3 ] && hashed=$(snapshot_after "$MNT_SEAL" | python3 -c \
			'import json, sys; print(json.load(sys.stdin)["seal"]["bytes_hashed"])')
		unmount "$MNT_SEAL"
	done
	take_median index
	index=$MEDIAN
	take_median seal
	want_row 14 && ratio_row "14. seq 1 MiB first read, verify=seal vs verify=index (fresh mounts)" \
		"$MEDIAN" "$index" 0.5
	echo "verify=seal first read: $hashed bytes hashed for the role files' $(awk '{ s += $3 } END { print s }' "$L.roles.seal") bytes" >>"$NOTES"
	if want_row 15; then
		# both mounts' caches filled by a pass that is not counted
		mount_pack "$DENSE" "$MNT_DENSE"
		rb seq "$L.roles.fuse"
		BENCH_MOUNT_OPTS="$BENCH_MOUNT_OPTS -o verify=seal" mount_pack "$DENSE" "$MNT_SEAL"
		rb seq "$L.roles.seal"
		for _ in 1 2 3; do
			rb seq "$L.roles.fuse"
			sample index
			rb seq "$L.roles.seal"
			sample seal
		done
		take_median index
		index=$MEDIAN
		take_median seal
		ratio_row "15. seq 1 MiB re-read, verify=seal vs verify=index (page cache kept)" \
			"$MEDIAN" "$index" 0.95
		unmount "$MNT_DENSE"
		unmount "$MNT_SEAL"
	fi
fi

# Row 16: what the per-read check costs 16 readers.  checkbench measures the
# CPU time of the check itself (the same atomic operations, on shared
# variables, from 16 threads); a 16-reader O_DIRECT run on the mount gives
# the read requests it served (status.json) and its wall time.  The cost
# is the CPU time the checks of that run take as a share of the CPU time
# the machine has in that wall time: an upper bound of the throughput lost.
if want_row 16; then
	warm "$DENSE"
	mount_pack "$DENSE" "$MNT_DENSE"
	req0=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["counters"]["reads"])' \
		"$MNT_DENSE/status.json")
	rb odirect -d -t 16 -n $((objects * 2 / 16)) -s "$SEED" "$L.objects.fuse"
	secs=$(kv seconds "$RB_OUT")
	mbps=$(kv MBps "$RB_OUT")
	snapshot_after "$MNT_DENSE" >/dev/null # a status.json made after the reads
	req1=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["counters"]["reads"])' \
		"$MNT_DENSE/status.json")
	lease=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["lease"]["state"])' \
		"$MNT_DENSE/status.json")
	unmount "$MNT_DENSE"
	CB_OUT=$("$CHECKBENCH" 16 1 "$DENSE") || die "checkbench failed"
	lease_ns=$(kv lease_ns "$CB_OUT")
	stat_ns=$(kv stat_ns "$CB_OUT")
	reqs=$((req1 - req0))
	cpus=$(nproc)
	pct=$(calc "100 * $lease_ns * $reqs / ($secs * 1e9 * $cpus)" 4)
	spct=$(calc "100 * $stat_ns * $reqs / ($secs * 1e9 * $cpus)" 3)
	echo "per-read check (16 readers): lease held ($lease) ${lease_ns} ns, no lease (fstat + sequence lock) ${stat_ns} ns, $reqs requests in $secs s at $(calc "$mbps" 0) MB/s; without a lease it would cost ${spct}%" >>"$NOTES"
	limit_row "16. per-read check, 16 O_DIRECT readers, lease held: share of CPU" "$pct" "%" 2 \
		"$(calc "$lease_ns" 1) ns x $reqs reqs"
fi

# Rows 17-23: the reference loader's hot path, cold.  16 stage slots read
# random whole objects (200 distinct ones a pass) with O_DIRECT, each as
# read_splits preads at once (1, the loader's and the published launch's
# setting, and 4, the class default), from the 8.8 GB hot pack with every
# cache dropped before each pass (sync; echo 3 > /proc/sys/vm/drop_caches,
# which empties the pack's and FUSE's page caches; each FUSE pass is on a
# fresh mount, so the daemon's cache of checked chunks is empty too).  The
# native sides read the same objects of the pack file with O_DIRECT, and
# for the seal the ceiling is native O_DIRECT with each object hashed
# (SHA-256) by the thread that read it.  This machine's disk drifts from
# pass to pass, so the sides run next to each other in rounds and each
# ratio is the median of the rounds' ratios.
drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches || die "cannot drop caches (root?)"
}

# lb LIST ARGS...: a cold loaderbench pass; its key=value line in LB_OUT.
lb() {
	drop_caches
	LB_OUT=$("$LOADERBENCH" "$@") || die "loaderbench $* failed"
}

# hot_fuse MODE LIST ARGS...: a cold pass through a fresh mount.
hot_fuse() {
	_mode=$1
	shift
	BENCH_MOUNT_OPTS="$BENCH_MOUNT_OPTS -o verify=$_mode" mount_pack "$HOT" "$MNT_HOT"
	lb "$@"
	HOT_STATUS=$(cat "$MNT_HOT/status.json")
	unmount "$MNT_HOT"
}

# hot_round K: one round of the loader pattern at read_splits=K: native,
# index, native+hash, seal; the ratios go into sample sets of their own.
hot_round() {
	_a="-d -k $1 -t 16 -n 200 -s $2"
	# shellcheck disable=SC2086 # _a is a list of words
	lb $_a "$HOT_L.native"
	nat=$LB_OUT
	# shellcheck disable=SC2086
	hot_fuse index $_a "$HOT_L.fuse"
	idx=$LB_OUT
	# shellcheck disable=SC2086
	lb $_a -H "$HOT_L.native"
	ceil=$LB_OUT
	# shellcheck disable=SC2086
	hot_fuse seal $_a "$HOT_L.fuse"
	sl=$LB_OUT
	[ "$(kv sum "$nat")" = "$(kv sum "$idx")" ] && [ "$(kv sum "$nat")" = "$(kv sum "$sl")" ] ||
		{ say "hot path: FUSE and native bytes differ"; FAILED=1; }
	for v in "idx:$idx:$nat" "seal:$sl:$ceil"; do
		IFS=: read -r name f n <<EOF2
$v
EOF2
		echo "$(calc "$(kv mbps "$f") / $(kv mbps "$n")" 4)" >>"$SAMPLES.$name.k$1.thr"
		echo "$(calc "$(kv p99_ms "$f") / $(kv p99_ms "$n")" 4)" >>"$SAMPLES.$name.k$1.p99"
		echo "$(kv mbps "$f") $(kv mbps "$n") $(kv p99_ms "$f") $(kv p99_ms "$n")" \
			>>"$SAMPLES.$name.k$1.abs"
		echo "$(calc "$(kv cached_delta "$f") / $(kv bytes "$f")" 5)" >>"$SAMPLES.cache.direct"
	done
}

# hot_rows K: rows 17 and 18 for read_splits=K from HOT_ROUNDS rounds.
hot_rows() {
	for name in idx seal; do
		MEDIAN=$(median <"$SAMPLES.$name.k$1.thr")
		thr=$MEDIAN
		MEDIAN=$(median <"$SAMPLES.$name.k$1.p99")
		p99=$MEDIAN
		fm=$(awk '{ print $1 }' "$SAMPLES.$name.k$1.abs" | median)
		nm=$(awk '{ print $2 }' "$SAMPLES.$name.k$1.abs" | median)
		fp=$(awk '{ print $3 }' "$SAMPLES.$name.k$1.abs" | median)
		np=$(awk '{ print $4 }' "$SAMPLES.$name.k$1.abs" | median)
		if [ $name = idx ]; then
			what="17. loader, verify=index vs native O_DIRECT, read_splits=$1, 16 slots, cold"
			base="native O_DIRECT"
			tmin=0.95
		else
			what="18. loader, verify=seal vs native O_DIRECT + SHA-256, read_splits=$1, cold"
			base="O_DIRECT + hash"
			tmin=0.9
		fi
		result=$(awk -v r="$thr" -v t="$tmin" 'BEGIN { print (r >= t) ? "PASS" : "MISS" }')
		row "$what, throughput" "$(calc "$fm" 0) MB/s" "$(calc "$nm" 0) MB/s ($base)" \
			"$(calc "$thr")" ">= $tmin" "$result"
		result=$(awk -v r="$p99" 'BEGIN { print (r <= 1.25) ? "PASS" : "MISS" }')
		row "${what%%,*}, p99 per object, read_splits=$1" "$(calc "$fp" 0) ms" \
			"$(calc "$np" 0) ms" "$(calc "$p99")" "<= 1.25" "$result"
		echo "hot path verify=$([ $name = idx ] && echo index || echo seal) read_splits=$1: throughput ratios by round $(tr '\n' ' ' <"$SAMPLES.$name.k$1.thr"), p99 ratios $(tr '\n' ' ' <"$SAMPLES.$name.k$1.p99")" >>"$NOTES"
		rm -f "$SAMPLES.$name.k$1.thr" "$SAMPLES.$name.k$1.p99" "$SAMPLES.$name.k$1.abs"
	done
}

if want_row 17 || want_row 18 || want_row 19 || want_row 20 || want_row 21 || want_row 23; then
	make_pack "$HOT" "$HOT_ARGS"
	[ -f "$HOT.seal" ] && [ "$HOT.seal" -nt "$HOT" ] ||
		"$MOEPACK" seal "$HOT" >&2 || die "moepack seal $HOT failed"
	HOT_L=$BENCH_DIR/hot
	make_lists "$HOT" "$MNT_HOT" "$HOT_L.lists"
	cp "$HOT_L.lists.objects.native" "$HOT_L.native"
	sed "s|^$MNT_HOT/|$MNT_HOT/|" "$HOT_L.lists.objects.fuse" >"$HOT_L.fuse"
	echo "hot path: $(wc -l <"$HOT_L.native") objects of $(head -n1 "$HOT_L.native" | awk '{ print $3 }') bytes, $(stat -c %s "$HOT") bytes in all; caches dropped before every pass (drop_caches); $HOT_ROUNDS rounds, each ratio the median of the rounds'" >>"$NOTES"
fi
if want_row 17 || want_row 18 || want_row 19; then
	rm -f "$SAMPLES".cache.direct
	for k in 1 4; do
		for r in $(seq 1 "$HOT_ROUNDS"); do hot_round "$k" "$((SEED + r))"; done
		hot_rows "$k"
	done
	worst=$(sort -g "$SAMPLES.cache.direct" | tail -n1)
	growth=$(median <"$SAMPLES.cache.direct")
	rm -f "$SAMPLES.cache.direct"
	if want_row 19; then
		result=$(awk -v v="$growth" 'BEGIN { print (v <= 0.01) ? "PASS" : "MISS" }')
		row "19. page cache growth per byte read, O_DIRECT through the mount (median pass)" \
			"$(calc "$growth" 4)" "0 (native O_DIRECT)" "-" "<= 0.01" "$result"
		echo "O_DIRECT page cache growth per byte: median $(calc "$growth" 5), worst $(calc "$worst" 5) of $((HOT_ROUNDS * 4)) passes (global Cached: other processes count too); the pack's own pages after the last pass: $(fincore -nb "$HOT" 2>/dev/null | awk '{ print $1 }') bytes" >>"$NOTES"
	fi
fi

# Row 20: a buffered first read is cached once: the Cached growth per byte
# of a cold buffered pass through the mount, against a native buffered
# pass (whose read-ahead may cache more than it reads).
if want_row 20; then
	for mode in index seal; do
		hot_fuse "$mode" -k 1 -t 16 -n 100 -s "$SEED" "$HOT_L.fuse"
		g=$(calc "$(kv cached_delta "$LB_OUT") / $(kv bytes "$LB_OUT")" 3)
		lb -k 1 -t 16 -n 100 -s "$SEED" "$HOT_L.native"
		n=$(calc "$(kv cached_delta "$LB_OUT") / $(kv bytes "$LB_OUT")" 3)
		result=$(awk -v v="$g" 'BEGIN { print (v <= 1.1) ? "PASS" : "MISS" }')
		row "20. page cache growth per byte read, buffered first read, verify=$mode" "$g" \
			"$n (native buffered)" "-" "<= 1.1" "$result"
	done
fi

# Row 21: every fill hashed, none twice: a second cold pass over the same
# objects on the same seal mount (its page cache dropped) hashes as much
# again, and no more than it reads.
if want_row 21; then
	BENCH_MOUNT_OPTS="$BENCH_MOUNT_OPTS -o verify=seal" mount_pack "$HOT" "$MNT_HOT"
	lb -d -k 1 -t 16 -n 200 -s "$SEED" "$HOT_L.fuse"
	snapshot_after "$MNT_HOT" >/dev/null # a status.json made after the reads
	h1=$(json_seal "$MNT_HOT" bytes_hashed) s1=$(json_storage "$MNT_HOT")
	v1=$(json_seal "$MNT_HOT" bytes_served)
	lb -d -k 1 -t 16 -n 200 -s "$SEED" "$HOT_L.fuse"
	snapshot_after "$MNT_HOT" >/dev/null
	h2=$(json_seal "$MNT_HOT" bytes_hashed) s2=$(json_storage "$MNT_HOT")
	v2=$(json_seal "$MNT_HOT" bytes_served)
	unmount "$MNT_HOT"
	hashed=$((h2 - h1)) read_bytes=$((s2 - s1)) served=$((v2 - v1))
	per=$(calc "$hashed / $served" 3)
	result=$(awk -v v="$per" 'BEGIN { print (v >= 1.0 && v <= 1.1) ? "PASS" : "MISS" }')
	row "21. bytes hashed per byte served, verify=seal, second cold pass of the same objects" \
		"$per" "-" "-" "1.0-1.1" "$result"
	echo "second cold pass (verify=seal, same mount, caches dropped): $hashed bytes hashed, $read_bytes read from storage, $served served (the reader asked for $(kv bytes "$LB_OUT"))" >>"$NOTES"
fi

# Row 22: SHA-256 on one core here, and what an SSD array needs of them.
if want_row 22; then
	sha=$(openssl speed -seconds 3 -bytes 1048576 -evp sha256 2>/dev/null |
		awk '/^sha256/ { v = $2; sub(/k$/, "", v); print v * 1000 }')
	[ -n "$sha" ] || die "openssl speed gave nothing"
	cores=$(calc "10e9 / $sha" 1)
	row "22. SHA-256 per core (openssl speed, 1 MiB blocks); cores per 10 GB/s" \
		"$(calc "$sha / 1e6" 0) MB/s" "$cores cores" "-" "reported" "-"
fi

# Row 23: how many threads serve the loader (16 slots, 12 requests each in
# flight): verify=index at read_splits=1 with -o max_threads=N, one cold
# pass each against a native pass next to it.
if want_row 23; then
	for t in 10 48 192; do
		lb -d -k 1 -t 16 -n 200 -s "$SEED" "$HOT_L.native"
		nat=$LB_OUT
		BENCH_MOUNT_OPTS="$BENCH_MOUNT_OPTS -o max_threads=$t" hot_fuse index \
			-d -k 1 -t 16 -n 200 -s "$SEED" "$HOT_L.fuse"
		row "23. loader, verify=index, -o max_threads=$t (one cold pass)" \
			"$(calc "$(kv mbps "$LB_OUT")" 0) MB/s, p99 $(kv p99_ms "$LB_OUT") ms" \
			"$(calc "$(kv mbps "$nat")" 0) MB/s, p99 $(kv p99_ms "$nat") ms" \
			"$(calc "$(kv mbps "$LB_OUT") / $(kv mbps "$nat")")" "reference" "-"
	done
fi

# Row 24: SGLang's expert pack at DeepSeek-V4-Flash's geometry (43 layers x
# 256 experts, 33,024 entries, 10.8 MB of index; the 147 GB of data a
# hole), every default check of mp_ep_open() through tests/bench/epbench
# until moepack verify knows the format.
if want_row 24; then
	[ -x "$EPBENCH" ] || die "$EPBENCH is not built"
	DS=$BENCH_DIR/deepseek.pack
	if ! "$EPBENCH" "$DS" 43 256 6 >/dev/null 2>&1; then
		say "making $DS"
		rm -f "$DS" "$DS.manifest.json"
		python3 "$top_srcdir/tests/data/expertpack/mkcorpus.py" sparse "$DS" ||
			die "cannot make $DS"
		"$EPBENCH" "$DS" 43 256 6 >&2 || die "epbench $DS failed"
	fi
	rb run -n 7 -- "$EPBENCH" "$DS" 43 256 6
	limit_row "24. verify SGLANG-EXPERTPACK-v1 full geometry (33,024 entries, sparse)" \
		"$(calc "$(kv median_seconds "$RB_OUT") * 1000" 1)" ms 30 \
		"reference constructor 0.28-0.41 s (not run)"
	# the same pack under a manifest whose pack_sha256 is null (SGLang's
	# reader takes it as none), through the whole of `moepack verify`
	python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
m["pack_sha256"] = None
json.dump(m, open(sys.argv[2], "w"), indent=2)' "$DS.manifest.json" "$DS.null.json" ||
		die "cannot write $DS.null.json"
	"$MOEPACK" verify -q -m "$DS.null.json" "$DS" >&2 || die "verify -m $DS.null.json failed"
	rb run -n 7 -- "$MOEPACK" verify -q -m "$DS.null.json" "$DS"
	limit_row "24. moepack verify, the same with pack_sha256 null" \
		"$(calc "$(kv median_seconds "$RB_OUT") * 1000" 1)" ms 30 "-"
fi

# Rows 25-28: `moepack fetch` of the hot path's 8.8 GB sealed, signed pack
# from Debian's nginx on 127.0.0.1 (tests/servers/nginx.sh, HTTP/1.1):
# (25) against what users do today, aria2c -x16 -s16 -k1M then `moepack
# verify --seal` (goal <= 0.6 of the time); (26) against aria2c -x16 -s16
# alone (goal >= 1.0 of its throughput); (27) against 16 parallel curl
# range downloads of the file, the loopback ceiling (goal >= 0.8); (28)
# the fetch's peak RSS (goal <= 256 MB, whatever the pack's size: the runs
# held at once are capped at MP_FETCH_RUN_MEMORY).  The fetch runs with
# --connections 8, 16 and 32; the rows take the default's.  Caches
# dropped before every pass; outputs removed after each.  nginx, the
# client and the hashing share the machine's CPUs, so each pass's notes
# give the client's CPU seconds (user + system) and nginx's.
if want_row 25 || want_row 26 || want_row 27 || want_row 28 || want_row 29 || want_row 30; then
	command -v aria2c >/dev/null || die "aria2c is not installed (apt-get install aria2)"
	command -v curl >/dev/null || die "curl is not installed"
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || die "nginx is not installed"
	signed_pack "$HOT" "$HOT_ARGS"
	FNS=$BENCH_DIR/fetch-nginx
	FOUT=$BENCH_DIR/fetch-out
	rm -rf "$FOUT"
	mkdir -p "$FOUT"
	sh "$top_srcdir/tests/servers/nginx.sh" stop "$FNS" >/dev/null 2>&1 || :
	sh "$top_srcdir/tests/servers/nginx.sh" start "$FNS" "$BENCH_DIR" >/dev/null ||
		die "nginx did not start"
	. "$FNS/env"
	URL=$NGINX_HTTP_URL/$(basename "$HOT")
	size=$(stat -c %s "$HOT")
	TCK=$(getconf CLK_TCK)
	# nginx_ticks: CPU ticks (user + system) of the rig's nginx processes
	nginx_ticks() {
		awk '{ print $2 }' "$FNS/pids" | while read -r p; do
			sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $12 + $13 }'
		done | awk '{ t += $1 } END { print t + 0 }'
	}
	# secs NAME CMD...: CMD after dropping caches; SECS its wall seconds,
	# rss_NAME its peak RSS (KiB); its CPU seconds, nginx's and its peak RSS
	# go to $NOTES under NAME
	secs() {
		_name=$1
		shift
		drop_caches
		_n0=$(nginx_ticks)
		_t0=$(date +%s.%N)
		/usr/bin/time -f '%U %S %M' -o "$BENCH_DIR/fetch.time" "$@" \
			>"$BENCH_DIR/fetch.log" 2>&1 || { cat "$BENCH_DIR/fetch.log" >&2; return 1; }
		_t=$(awk -v a="$_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
		_ng=$(calc "($(nginx_ticks) - $_n0) / $TCK" 2)
		read -r _u _s _m <"$BENCH_DIR/fetch.time"
		eval "rss_$_name=$_m"
		echo "$_name: $_t s, $(calc "$size / $_t / 1e6" 0) MB/s; client CPU $_u s user + $_s s system, nginx $_ng s; peak RSS $(calc "$_m / 1024" 0) MiB" >>"$NOTES"
		SECS=$_t
	}
	for c in 8 16 32; do
		secs "fetch_c$c" "$MOEPACK" fetch -q --connections "$c" --trust "$FK.pub" \
			-o "$FOUT/f.pack" "$URL" || { sh "$top_srcdir/tests/servers/nginx.sh" stop "$FNS"; die "fetch failed"; }
		cmp -s "$HOT" "$FOUT/f.pack" || die "the fetched pack differs"
		eval "fetch_$c=$SECS"
		rm -f "$FOUT"/*
	done
	def=$(sed -n 's/^#define MP_FETCH_DEFAULT_CONNECTIONS \([0-9]*\).*/\1/p' "$top_srcdir/src/fetch/fetch.h")
	fdef=$(eval "echo \$fetch_$def")
	rdef=$(eval "echo \$rss_fetch_c$def")
	[ -n "$fdef" ] || die "the default connections ($def) were not measured"
	set -- aria2c -q -x16 -s16 --file-allocation=falloc --allow-overwrite=true \
		--auto-file-renaming=false -d "$FOUT" -o a.pack
	secs aria2c_k1M "$@" -k1M "$URL" || die "aria2c failed"
	ta=$SECS
	# the manifest and seal beside the copy, the manifest's path its own
	sed "s|\"$HOT\"|\"$FOUT/a.pack\"|" "$HOT.manifest.json" >"$FOUT/a.pack.manifest.json"
	cp "$HOT.seal" "$FOUT/a.pack.seal"
	# the second pass, without a drop: what follows a download at once
	t0=$(date +%s.%N)
	"$MOEPACK" verify -q --seal "$FOUT/a.pack" >&2 || die "verify --seal of aria2c's copy failed"
	tv=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	rm -f "$FOUT"/*
	secs aria2c "$@" "$URL" || die "aria2c failed"
	ta2=$SECS
	rm -f "$FOUT"/*
	# 16 curl processes, each a range of the file into a piece of its own
	secs curl16 env size="$size" FOUT="$FOUT" URL="$URL" sh -c '
		p=$(((size + 15) / 16)) rc=0 pids=
		for i in $(seq 0 15); do
			a=$((i * p)) b=$(((i + 1) * p - 1))
			[ "$b" -lt "$size" ] || b=$((size - 1))
			curl -sf -r "$a-$b" -o "$FOUT/c.$i" "$URL" & pids="$pids $!"
		done
		for p in $pids; do wait "$p" || rc=1; done
		exit "$rc"' || die "curl x16 failed"
	tc=$SECS
	[ "$(stat -c %s "$FOUT"/c.* | awk '{ t += $1 } END { printf "%.0f", t }')" -eq "$size" ] || die "curl x16 fetched the wrong size"
	rm -f "$FOUT"/*
	# Rows 29-30: the same pack mounted from the same nginx (moepackfs URL
	# MOUNTPOINT -o cache=DIR): the mount's time (manifest, seal, signature,
	# head fetched and checked, the pack validated) against a local mount
	# of the pack, verify=seal both; and the time from the mount's start to
	# DIR/NAME.pack in place, against the fetch above.
	if want_row 29 || want_row 30; then
		MR=$BENCH_DIR/mnt-remote
		unmount "$MR"
		mkdir -p "$MR"
		drop_caches
		t0=$(date +%s.%N)
		"$MOEPACKFS" -o verify=seal "$HOT" "$MR" >&2 || die "moepackfs $HOT failed"
		tl=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
		unmount "$MR"
		drop_caches
		t0=$(date +%s.%N)
		"$MOEPACKFS" -o "cache=$FOUT,trust=$FK.pub" "$URL" "$MR" >&2 ||
			die "moepackfs $URL failed"
		tr=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
		FILLED=$FOUT/$(basename "$HOT")
		# the fill's end, polled every 50 ms (bounded: an hour)
		n=0
		while { [ ! -f "$FILLED" ] || [ -e "$FILLED.partial" ]; } && [ "$n" -lt 72000 ]; do
			sleep 0.05
			n=$((n + 1))
		done
		tf=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
		unmount "$MR"
		[ ! -e "$FILLED.partial" ] || die "the remote mount's fill did not end in an hour"
		cmp -s "$HOT" "$FILLED" || die "the remote mount's filled pack differs"
		rm -f "$FOUT"/*
		echo "remote mount: mounted in $tr s (local $tl s), filled in $tf s ($(calc "$size / $tf / 1e6" 0) MB/s)" >>"$NOTES"
	fi
	sh "$top_srcdir/tests/servers/nginx.sh" stop "$FNS" >/dev/null || :
	echo "fetch bench: $size bytes from nginx on 127.0.0.1; aria2c -x16 -s16 -k1M $ta s + verify --seal $tv s; aria2c -x16 -s16 $ta2 s; curl x16 $tc s; fetch default --connections $def" >>"$NOTES"
	if want_row 25; then
		r=$(calc "$fdef / ($ta + $tv)")
		row "25. fetch (verified) vs aria2c -x16 -s16 -k1M + verify --seal, $(calc "$size / 1e9" 1) GB" \
			"$fdef s" "$(calc "$ta + $tv") s" "$r" "<= 0.6" \
			"$(awk -v r="$r" 'BEGIN { print (r <= 0.6) ? "PASS" : "MISS" }')"
	fi
	if want_row 26; then
		ratio_row "26. fetch (verified) vs aria2c -x16 -s16 alone, throughput" \
			"$(calc "$size / $fdef / 1e6")" "$(calc "$size / $ta2 / 1e6")" 1.0
	fi
	if want_row 27; then
		ratio_row "27. fetch (verified) vs 16 parallel curl range downloads, throughput" \
			"$(calc "$size / $fdef / 1e6")" "$(calc "$size / $tc / 1e6")" 0.8
	fi
	if want_row 28; then
		rm_mb=$(calc "$rdef * 1024 / 1e6" 0)
		result=$(awk -v v="$rm_mb" 'BEGIN { print (v <= 256) ? "PASS" : "MISS" }')
		row "28. fetch peak RSS, --connections $def (runs capped at 128 MiB)" "$rm_mb MB" \
			"$(calc "$(eval "echo \$rss_aria2c") * 1024 / 1e6" 0) MB (aria2c)" "-" "<= 256 MB" \
			"$result"
	fi
	if want_row 29; then
		result=$(awk -v v="$tr" 'BEGIN { print (v <= 2) ? "PASS" : "MISS" }')
		row "29. mount from nginx (manifest, seal, signature, head, validation) vs local, verify=seal" \
			"$tr s" "$tl s" "$(calc "$tr / $tl")" "<= 2 s" "$result"
	fi
	if want_row 30; then
		ratio_row "30. fill of a mount from nginx (mount to pack in place) vs moepack fetch" \
			"$(calc "$size / $tf / 1e6")" "$(calc "$size / $fdef / 1e6")" 0.9
	fi
fi

# Rows 31-33: more of a pack mounted from nginx (moepackfs URL MOUNTPOINT -o
# cache=DIR,trust=PUB; tests/servers/nginx.sh on 127.0.0.1, HTTP/1.1):
# (31) cold on-demand reads, the loader's pattern (16 slots, whole objects,
# O_DIRECT, random order) through a mount with -o fill=off and an empty
# cache, of about 1.8 GB of hot.pack's objects picked at random, against
# aria2c fetching the same objects' bytes, written out as files into the
# nginx root, in the same run (-j16, once -x16 -s16 -k1M and once -x1: the
# faster is the baseline); throughput, goal >= 0.8.  (32) the time from
# the exec of moepackfs to one token's experts read through the mount (6
# experts a layer, picked with SEED, every layer, whole objects, the loader's
# pattern) on the full K3 geometry with the fill on, against the same
# objects read from a local mount of the same pack (verify=seal), also from
# its exec; reference.  (33) the time to mount the full K3 geometry from
# nginx (manifest, seal, signature, head, validation, the 985.6 GB cache
# file preallocated) against a local verify=seal mount, median of
# REMOTE_ROUNDS, goal <= 2 s.  Rows 32-33 use k3s.pack (K3_ARGS, sealed
# --unanchored and signed: its payload is a hole, so neither side reads a
# disk for it) and keep the remote mount's cache on a loop-mounted file
# system (loop_up); without one they are skipped, saying why.  Caches are
# dropped before every pass; each pass's CPU seconds go to the notes.
REMOTE_ROUNDS=${REMOTE_ROUNDS:-3}
if want_row 31 || want_row 32 || want_row 33; then
	command -v aria2c >/dev/null || die "aria2c is not installed (apt-get install aria2)"
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || die "nginx is not installed"
	[ -x "$MOEPACKFS" ] || die "$MOEPACKFS is not built"
	TCK=$(getconf CLK_TCK)
	R_LOG=$BENCH_DIR/remote-rows.log
	: >"$R_LOG"
	now() { date +%s.%N; }
	since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f\n", b - a }'; }
	# cpu_secs PID...: user + system seconds of these processes so far
	cpu_secs() {
		for _p in "$@"; do
			sed 's/^.*) //' "/proc/$_p/stat" 2>/dev/null | awk '{ print $12 + $13 }'
		done | awk -v t="$TCK" '{ s += $1 } END { printf "%.2f", s / t }'
	}
	# nginx_cpu: the same of the rig's nginx processes
	nginx_cpu() {
		# shellcheck disable=SC2046 # one pid a word
		cpu_secs $(awk '{ print $2 }' "$RNS/pids")
	}
	# remote_mount URL CACHE [OPTION,...]: mounted at MNT_R from URL
	remote_mount() {
		unmount "$MNT_R"
		mkdir -p "$MNT_R"
		"$MOEPACKFS" -o "cache=$2,trust=$FK.pub${3:+,$3}" "$1" "$MNT_R" 2>>"$R_LOG" ||
			{ tail -n 5 "$R_LOG" >&2; die "moepackfs $1 failed"; }
	}
	local_mount() { # PACK
		unmount "$MNT_R"
		mkdir -p "$MNT_R"
		"$MOEPACKFS" -o "verify=seal,trust=$FK.pub" "$1" "$MNT_R" 2>>"$R_LOG" ||
			{ tail -n 5 "$R_LOG" >&2; die "moepackfs $1 failed"; }
	}
	# cache_empty DIR: nothing of an earlier mount left in DIR; the blocks
	# it held given back to the image (fstrim)
	cache_empty() {
		rm -f "$1"/*.pack "$1"/*.pack.*
		fstrim "$1" 2>/dev/null || :
	}
	# remote_status: MNT_R's status.json, once it is a snapshot made after
	# this call, into R_STATUS; remote_json KEY: its remote.KEY
	R_STATUS=$BENCH_DIR/remote-status.json
	remote_status() {
		snapshot_after "$MNT_R" >"$R_STATUS" || die "no status.json from $MNT_R"
	}
	remote_json() {
		python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["remote"][sys.argv[2]])' \
			"$R_STATUS" "$1"
	}
	RNS=$BENCH_DIR/remote-nginx
	sh "$top_srcdir/tests/servers/nginx.sh" stop "$RNS" >/dev/null 2>&1 || :
	sh "$top_srcdir/tests/servers/nginx.sh" start "$RNS" "$BENCH_DIR" >/dev/null ||
		{ RNS=; die "nginx did not start"; }
	RURL=$(sed -n 's/^NGINX_HTTP_URL=//p' "$RNS/env")
fi

if want_row 31; then
	signed_pack "$HOT" "$HOT_ARGS"
	make_lists "$HOT" "$MNT_HOT" "$BENCH_DIR/r31.lists"
	# objects at random (SEED) until 1.8 GB: their files in the mount, and
	# their bytes as files of their own in the nginx root for aria2c
	rm -rf "$R_OBJ"
	python3 - "$BENCH_DIR/r31.lists" "$MNT_HOT" "$MNT_R" "$R_OBJ" "$RURL/$(basename "$R_OBJ")" \
		"$SEED" 1800000000 "$BENCH_DIR/r31" <<'PY' || die "cannot pick row 31's objects"
import os, random, sys

lists, mnt_hot, mnt_r, objdir, url, seed, want, out = sys.argv[1:9]
native = [line.split() for line in open(lists + ".objects.native")]
fuse = [line.split() for line in open(lists + ".objects.fuse")]
order = list(range(len(native)))
random.Random(int(seed)).shuffle(order)
picks, total = [], 0
for i in order:
    if total >= int(want):
        break
    picks.append(i)
    total += int(native[i][2])
os.makedirs(objdir)
fd = os.open(native[0][0], os.O_RDONLY)
with open(out + ".remote", "w") as r, open(out + ".urls", "w") as u:
    for k, i in enumerate(sorted(picks)):
        off, n = int(native[i][1]), int(native[i][2])
        name = "o%04d" % k
        with open(os.path.join(objdir, name), "wb") as f:
            pos = 0
            while pos < n:
                b = os.pread(fd, min(8 << 20, n - pos), off + pos)
                if not b:
                    sys.exit("short read of the pack")
                f.write(b)
                pos += len(b)
        r.write("%s 0 %d\n" % (mnt_r + fuse[i][0][len(mnt_hot):], n))
        u.write("%s/%s\n" % (url, name))
PY
	r31_n=$(wc -l <"$BENCH_DIR/r31.remote")
	r31_bytes=$(awk '{ n += $3 } END { printf "%.0f", n }' "$BENCH_DIR/r31.remote")
	: >"$SAMPLES.r31.notes"
	# r31_aria NAME OPTIONS...: one aria2c pass over the objects, cold
	r31_aria() {
		_name=$1
		shift
		rm -rf "$R_OUT"
		mkdir -p "$R_OUT"
		drop_caches
		_n0=$(nginx_cpu)
		_t0=$(now)
		/usr/bin/time -f '%U %S' -o "$BENCH_DIR/r31.time" aria2c -q -j16 \
			--file-allocation=none --allow-overwrite=true --auto-file-renaming=false \
			-d "$R_OUT" -i "$BENCH_DIR/r31.urls" "$@" >>"$R_LOG" 2>&1 ||
			die "aria2c $* failed (see $R_LOG)"
		_t=$(since "$_t0")
		_ng=$(calc "$(nginx_cpu) - $_n0")
		[ "$(cat "$R_OUT"/* | wc -c)" = "$r31_bytes" ] || die "aria2c $* fetched the wrong size"
		calc "$r31_bytes / $_t / 1e6" 1 >>"$SAMPLES.r31.$_name"
		read -r _u _s <"$BENCH_DIR/r31.time"
		echo "$_name $(calc "$r31_bytes / $_t / 1e6" 0) MB/s (aria2c $_u + $_s s, nginx $_ng s)" \
			>>"$SAMPLES.r31.notes"
		rm -rf "$R_OUT"
	}
	r31_eio=0
	for _ in $(seq 1 "$REMOTE_ROUNDS"); do
		r31_aria x16 -x16 -s16 -k1M
		r31_aria x1 -x1
		rm -rf "$R_CACHE"
		mkdir -p "$R_CACHE"
		remote_mount "$RURL/$(basename "$HOT")" "$R_CACHE" fill=off
		pid=$(daemon_pid "$MNT_R") || die "no moepackfs serves $MNT_R"
		drop_caches
		d0=$(cpu_secs "$pid")
		n0=$(nginx_cpu)
		LB_OUT=$("$LOADERBENCH" -d -k 1 -t 16 -n "$r31_n" -s "$SEED" "$BENCH_DIR/r31.remote") ||
			die "loaderbench through the mount from nginx failed"
		kv mbps "$LB_OUT" >>"$SAMPLES.r31.remote"
		remote_status
		failed=$(remote_json demand_failed)
		[ "$failed" = 0 ] || r31_eio=$((r31_eio + failed))
		echo "remote $(calc "$(kv mbps "$LB_OUT")" 0) MB/s, p99 $(kv p99_ms "$LB_OUT") ms (moepackfs $(calc "$(cpu_secs "$pid") - $d0") s, nginx $(calc "$(nginx_cpu) - $n0") s; $(remote_json bytes_fetched) bytes fetched)" \
			>>"$SAMPLES.r31.notes"
		unmount_gone "$MNT_R"
		rm -rf "$R_CACHE"
	done
	rm -rf "$R_OBJ"
	take_median r31.x16
	x16=$MEDIAN
	take_median r31.x1
	x1=$MEDIAN
	take_median r31.remote
	if awk -v a="$x16" -v b="$x1" 'BEGIN { exit !(a >= b) }'; then
		base=$x16 which="-x16 -s16 -k1M"
	else
		base=$x1 which="-x1"
	fi
	ratio_row "31. cold on-demand reads through a mount from nginx (fill=off, 16 O_DIRECT slots) vs aria2c -j16 $which, throughput" \
		"$MEDIAN" "$base" 0.8
	if [ "$r31_eio" != 0 ]; then
		row "31. reads of the mount from nginx that failed (EIO)" "$r31_eio" "-" "-" "= 0" "FAIL"
		FAILED=1
	fi
	echo "row 31: $r31_n objects, $r31_bytes bytes of $(basename "$HOT"), $REMOTE_ROUNDS rounds (medians): aria2c -x16 -s16 -k1M $(calc "$x16" 0) MB/s, -x1 $(calc "$x1" 0) MB/s; per pass, CPU seconds user + system: $(tr '\n' ';' <"$SAMPLES.r31.notes" | sed 's/;$//; s/;/; /g')" \
		>>"$NOTES"
	rm -f "$SAMPLES.r31.notes" "$BENCH_DIR/r31.time" "$BENCH_DIR"/r31.lists.* \
		"$BENCH_DIR/r31.remote" "$BENCH_DIR/r31.urls"
fi

if want_row 32 || want_row 33; then
	if loop_up; then
		signed_pack "$K3S" "$K3_ARGS" --unanchored
		K3S_URL=$RURL/$(basename "$K3S")
		echo "rows 32-33: the remote mount's cache on $LOOP_FS, loop-mounted from a sparse 1.1 TB image ($LOOP_IMG)" \
			>>"$NOTES"
	else
		if want_row 32; then
			row "32. time to one token's experts through a mount from nginx vs local" \
				"skipped" "$LOOP_WHY" "-" "reference" "-"
		fi
		if want_row 33; then
			row "33. mount the full K3 geometry from nginx vs local, verify=seal" \
				"skipped" "$LOOP_WHY" "-" "<= 2 s" "-"
		fi
	fi
fi

if [ -n "$LOOP_DEV" ] && want_row 33; then
	for _ in $(seq 1 "$REMOTE_ROUNDS"); do
		drop_caches
		t0=$(now)
		local_mount "$K3S"
		since "$t0" >>"$SAMPLES.r33.local"
		unmount_gone "$MNT_R"
		cache_empty "$LOOP_MNT"
		drop_caches
		t0=$(now)
		remote_mount "$K3S_URL" "$LOOP_MNT"
		since "$t0" >>"$SAMPLES.r33.remote"
		remote_status
		r33_chunks=$(remote_json chunks)
		unmount_gone "$MNT_R"
		cache_empty "$LOOP_MNT"
	done
	echo "row 33: mount times, local $(tr '\n' ' ' <"$SAMPLES.r33.local")s; from nginx $(tr '\n' ' ' <"$SAMPLES.r33.remote")s" \
		>>"$NOTES"
	take_median r33.local
	tl=$MEDIAN
	take_median r33.remote
	tr=$MEDIAN
	result=$(awk -v v="$tr" 'BEGIN { print (v <= 2) ? "PASS" : "MISS" }')
	row "33. mount the full K3 geometry ($(calc "$(stat -c %s "$K3S") / 1e9" 1) GB, $r33_chunks chunks) from nginx vs local, verify=seal, median of $REMOTE_ROUNDS" \
		"$(calc "$tr" 3) s" "$(calc "$tl" 3) s" "$(calc "$tr / $tl")" "<= 2 s" "$result"
fi

if [ -n "$LOOP_DEV" ] && want_row 32; then
	# the names as moepackfs makes them, from a probe mount
	mount_pack "$K3S" "$MNT_R"
	python3 - "$MNT_R" "$SEED" >"$BENCH_DIR/r32.list" <<'PY' || die "cannot list row 32's objects"
import os, random, sys

mnt, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
root = os.path.join(mnt, "layers")
for layer in sorted(os.listdir(root), key=int):
    experts = sorted(os.listdir(os.path.join(root, layer)), key=int)
    for e in sorted(rng.sample(experts, 6), key=int):
        p = os.path.join(root, layer, e, "object")
        print(p, 0, os.stat(p).st_size)
PY
	unmount "$MNT_R"
	r32_n=$(wc -l <"$BENCH_DIR/r32.list")
	r32_bytes=$(awk '{ n += $3 } END { printf "%.0f", n }' "$BENCH_DIR/r32.list")
	# r32_token: the objects read, the loader's pattern; R32_T its seconds
	# since t0, R32_SUM what loaderbench read
	r32_token() {
		LB_OUT=$("$LOADERBENCH" -d -k 1 -t 16 -n "$r32_n" -s "$SEED" "$BENCH_DIR/r32.list") ||
			die "loaderbench of one token's experts failed"
		R32_T=$(since "$t0")
		R32_SUM=$(kv sum "$LB_OUT")
	}
	drop_caches
	t0=$(now)
	local_mount "$K3S"
	tm=$(since "$t0")
	pid=$(daemon_pid "$MNT_R") || die "no moepackfs serves $MNT_R"
	r32_token
	tl=$R32_T sl=$R32_SUM
	echo "row 32 local: mounted in $tm s, the token's $r32_n objects ($r32_bytes bytes) read by $tl s ($(calc "$(kv mbps "$LB_OUT")" 0) MB/s, moepackfs $(cpu_secs "$pid") s CPU)" >>"$NOTES"
	unmount_gone "$MNT_R"
	cache_empty "$LOOP_MNT"
	drop_caches
	n0=$(nginx_cpu)
	t0=$(now)
	remote_mount "$K3S_URL" "$LOOP_MNT"
	tm=$(since "$t0")
	pid=$(daemon_pid "$MNT_R") || die "no moepackfs serves $MNT_R"
	r32_token
	tr=$R32_T
	remote_status
	echo "row 32 from nginx, fill on: mounted in $tm s, the token read by $tr s ($(calc "$(kv mbps "$LB_OUT")" 0) MB/s; moepackfs $(cpu_secs "$pid") s CPU, nginx $(calc "$(nginx_cpu) - $n0") s; $(remote_json bytes_fetched) bytes fetched by then, $(remote_json demand_failed) reads failed)" >>"$NOTES"
	failed=$(remote_json demand_failed)
	unmount_gone "$MNT_R"
	cache_empty "$LOOP_MNT"
	row "32. K3 geometry: exec to one token's experts read ($r32_n objects, 6 a layer), from nginx (fill on) vs local verify=seal" \
		"$(calc "$tr") s" "$(calc "$tl") s" "$(calc "$tr / $tl")" "reference" "-"
	if [ "$R32_SUM" != "$sl" ] || [ "$failed" != 0 ]; then
		row "32. bytes through the mount from nginx = local, no EIO" "differ" "see stderr" "-" \
			"equal" "FAIL"
		FAILED=1
	fi
	rm -f "$BENCH_DIR/r32.list"
fi

if [ -n "$RNS" ]; then
	sh "$top_srcdir/tests/servers/nginx.sh" stop "$RNS" >/dev/null || :
	RNS=
fi
loop_down

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$NOTES"

#
# The table, for the terminal and for the README.
#
machine="$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)),"
machine="$machine $(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM,"
machine="$machine kernel $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "bench run time: $(($(date +%s) - START)) s; mount options: ${BENCH_MOUNT_OPTS:-(defaults)}" \
	>>"$NOTES"
python3 - "$ROWS" "$NOTES" "$machine" "$RESULTS" <<'EOF'
import sys

rows_path, notes_path, machine, results = sys.argv[1:5]
head = ("scenario", "moepackfs", "native (same run)", "ratio", "target", "result")
rows = [line.rstrip("\n").split("\t") for line in open(rows_path) if line.strip()]
# Rows are measured in whatever order is cheapest; show them by number.
rows.sort(key=lambda r: int(r[0].split(".")[0]))
widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
right = {1, 2, 3}

def fmt(r):
    cells = [c.rjust(w) if i in right else c.ljust(w)
             for i, (c, w) in enumerate(zip(r, widths))]
    return "| " + " | ".join(cells) + " |"

lines = [fmt(head),
         "|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2))
                        for i, w in enumerate(widths)) + "|"]
lines += [fmt(r) for r in rows]
lines += ["", f"Machine: {machine}."]
lines += [f"Note: {n.strip()}." for n in open(notes_path) if n.strip()]
text = "\n".join(lines) + "\n"
sys.stdout.write("\n" + text)
with open(results, "w") as f:
    f.write(text)
EOF
say "table written to $RESULTS"
[ "$FAILED" = 0 ] || die "a correctness check failed (see the FAIL rows)"
