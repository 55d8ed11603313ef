#!/bin/sh
# bootstrap.sh - set up moepackfs on a fresh Debian 12 machine (as root).
#
#   sh contrib/bootstrap.sh demo   install what is missing of DEMO_PACKAGES
#                                  (what building and the demo need), build,
#                                  make a demo pack, verify, seal, inspect
#                                  and mount it, show a changed byte refused,
#                                  make a small GGUF checkpoint and build a
#                                  pack of it, then say what to do next
#   sh contrib/bootstrap.sh test   install what is missing of TEST_PACKAGES
#                                  (everything the tests use; and ggml from
#                                  npm for the cross-checks, if it can),
#                                  build with -Werror, run the whole suite,
#                                  then again under AddressSanitizer/UBSan,
#                                  then each libFuzzer target for
#                                  ${FUZZ_SECONDS:-60} s (clang build), then
#                                  distcheck; the last line is always
#                                  "N passed, N failed, N skipped".
#                                  About 50 minutes on 2 cores.
#   sh contrib/bootstrap.sh test-load
#                                  what test runs, three times in a row,
#                                  under load: stress-ng --cpu 2 --io 2
#                                  --vm 1 --vm-bytes 2G, and dd reading a
#                                  4 GB file over and over while the
#                                  kernel's caches are dropped every 5 s;
#                                  all three rounds must pass.  Two hours
#                                  or more on 2 cores.  ROUNDS=N runs N
#                                  rounds instead (a shorter look).
#
# What the tests start, each on its own and stopped when it ends: FUSE
# mounts under a temporary directory; nfs-ganesha servers on 127.0.0.1,
# each on a free port of its own (the NFS tests, one at a time), with the
# kernel's NFS client mounting one where it can; a node_exporter
# (prometheus-node-exporter) on 127.0.0.1, a free port of its own (the
# metrics test; the prometheus package gives it promtool, no server is
# started); tmux servers on private sockets (`moepack top`); a loop
# device with ext4 on it, tmpfs and overlay mounts; the package test
# installs the Debian package it builds and purges it; tests/servers/
# starts nginx (HTTP, HTTPS with a test CA) and a one-node Ceph (a
# monitor, an OSD on memstore, radosgw) for the fetch tests, on free
# ports of 127.0.0.1 under a directory of the test's.  None uses the
# standard ports (80, 443, 2049, 3300, 6789, 6800-7300, 7480, 9090, 9100)
# of the services these packages start or would start.
#
# Builds go to build/ (and build-asan/) inside the checkout, as doc/install.md's
# build by hand does, so either may come first: demo reuses a build/ that is
# already configured (keeping its options), or a source tree configured in
# place (the old by-hand way); test configures build/ itself and so needs
# the source tree unconfigured.  The demo files go to $DEMO_DIR (running
# demo again replaces them), or else to a new directory of the user's own
# that mktemp makes in ${TMPDIR:-/tmp}, named when the demo starts and ends.
set -eu

mode=${1:-}
top=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

# Packages.  The demo's: what building needs (the compiler, autoreconf,
# pkg-config and the six libraries configure requires: FUSE, jansson,
# OpenSSL, libcurl for `moepack fetch`, Check for the unit tests, ncurses
# for `moepack top`) and the
# programs the demo runs (fusermount3, getfattr, xxd); none of them starts
# a service.  tests/setup.test keeps this list to exactly that.
DEMO_PACKAGES="build-essential autoconf automake pkg-config libfuse3-dev
libjansson-dev libssl-dev libcurl4-openssl-dev check libncurses-dev fuse3
attr xxd"
# The test's, on top: what the tests drive (python3 for mmap/O_DIRECT
# checks, mandoc for the manual pages' lint, man-db); clang and its
# runtime libraries (libFuzzer, ASan, UBSan) for `make fuzz`; nfs-ganesha
# for the NFS tests; promtool (prometheus), node_exporter and curl for the
# metrics tests; debhelper, lintian and the rest for the package test;
# tmux to test `moepack top`; stress-ng for `test-load`; the servers
# `moepack fetch` is tested against (tests/servers/): nginx and openssl
# (its test CA), and Ceph's S3 gateway, radosgw with the one monitor and
# OSD it needs (ceph-mon, ceph-osd; ceph-common for the ceph CLI and
# radosgw-admin); aria2 (aria2c, the bench's baseline fetcher and the
# Metalink test's client).  On a systemd host
# nfs-ganesha's, prometheus's and node_exporter's services start on
# install; the tests use ports of their own.  The Ceph packages start
# nothing (no daemon is configured); nginx would start its default site
# on port 80 of every address, which is stopped and disabled (below).
TEST_PACKAGES="$DEMO_PACKAGES python3 man-db mandoc
nfs-ganesha nfs-ganesha-vfs libnfs-utils clang libclang-rt-14-dev
debhelper dh-autoreconf lintian dpkg-dev fakeroot bash-completion systemd git
prometheus prometheus-node-exporter curl tmux stress-ng time
nginx openssl ceph-mon ceph-osd radosgw ceph-common aria2"
# Services that installing TEST_PACKAGES would start but that no test
# uses and that would only listen where nobody asked: stopped and disabled
# right after install_missing installed them (never when they were there
# before: a machine's own nginx is its owner's business).  nginx's
# default site answers on port 80 of every address, a web server nobody
# meant to run, and holds port 80 against one that somebody does.  Its
# tests start nginx by themselves, on ports of their own.
QUIET_SERVICES="nginx"

say() { printf '\n==> %s\n' "$*"; }

# install_missing PACKAGE...: apt-get install those not installed; they
# are left in installed_now.
install_missing() {
	missing=
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		say "installing:$missing"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q
		# shellcheck disable=SC2086
		apt-get install -y -q --no-install-recommends $missing
	fi
	installed_now=$missing
	[ -e /dev/fuse ] || { echo "bootstrap: /dev/fuse is missing (modprobe fuse)" >&2; exit 1; }
}

# quiet_services PACKAGE...: stop and disable the service of each of
# QUIET_SERVICES among PACKAGE... (those install_missing just installed:
# test and test-load call it, demo installs no service).  Under systemd,
# `systemctl disable --now`; without it (a container), the init script's
# stop, if the package's postinst started it, and update-rc.d disable.
# A failure here is a warning: the tests do not need port 80 free.
quiet_services() {
	for p in "$@"; do
		case " $QUIET_SERVICES " in *" $p "*) ;; *) continue ;; esac
		say "stopping (if it runs) and disabling the $p service: the tests start their own"
		if [ -d /run/systemd/system ]; then
			systemctl disable --now "$p.service" ||
				echo "bootstrap: could not stop and disable $p.service" >&2
		elif [ -x "/etc/init.d/$p" ]; then
			"/etc/init.d/$p" stop >/dev/null 2>&1 || :
			update-rc.d "$p" disable >/dev/null 2>&1 ||
				echo "bootstrap: could not disable /etc/init.d/$p" >&2
		fi
	done
}

# build DIR CONFIGURE-ARGS...: configure and build out of tree.
build() {
	dir=$top/$1
	shift
	[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi)
	mkdir -p "$dir"
	(cd "$dir" && "$top/configure" -q "$@" && make -s -j"$jobs")
}

# Sum the per-test counts the suites print: Check's "Checks: N, Failures: F,
# Errors: E" and the shell suites' "N passed, N failed[, N skipped]", plus
# the "SKIP: reason" lines (one per skipped check, or per whole test that
# exited 77); a Check test that skips still counts as run by Check, so its
# skips come off its passes.  Prints "PASSED FAILED SKIPPED".
summarize() {
	for log in "$@"; do
		[ -f "$log" ] && awk '
			match($0, /Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+/) {
				split(substr($0, RSTART, RLENGTH), w, /[^0-9]+/)
				p = w[2] - w[3] - w[4]; f = w[3] + w[4]; check = 1
			}
			/^[0-9]+ passed, [0-9]+ failed/ { p = $1; f = $3 }
			/^SKIP: / { s++ }
			END { if (check) p -= s; print p + 0, f + 0, s + 0 }' "$log"
	done | awk '{ p += $1; f += $2; s += $3 } END { print p + 0, f + 0, s + 0 }'
}

# The demo's build: an existing configuration is reused as it is; else
# build/ is configured.  Sets bin to where the programs are.
demo_build() {
	if [ -f "$top/config.status" ]; then
		say "building in the source tree (configured there by hand)"
		make -C "$top" -s -j"$jobs"
		bin=$top/src
	elif [ -f "$top/build/config.status" ]; then
		say "building in build/ (already configured)"
		# a package build's clean (debian/rules clean, dpkg-buildpackage
		# -tc) removes what autoreconf made, configure among it
		[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi)
		make -C "$top/build" -s -j"$jobs"
		bin=$top/build/src
	else
		say "building"
		build build
		bin=$top/build/src
	fi
}

# failed_tests DIR: the tests of DIR's last `make check` that failed or
# could not run (automake's .trs files say), one a line.
failed_tests() {
	for trs in "$1"/tests/*.trs; do
		[ -f "$trs" ] && grep -Eq '^:test-result: (FAIL|ERROR|XPASS)' "$trs" &&
			echo "tests/$(basename "$trs" .trs)"
	done
}

# show_failures DIR: for each failed test, its name and its failing lines
# (a shell suite's FAIL: lines with their details, Check's :F:/:E: lines),
# or the end of its log when it has none (a crash, an ERROR: exit 99).
show_failures() {
	for t in $(failed_tests "$1"); do
		log=$1/$t.log
		printf '\n---- %s (%s) ----\n' "$t" "$(basename "$1")"
		lines=$(awk '
			/^FAIL: / { keep = 1; print; next }
			keep && /^      / { print; next }
			{ keep = 0 }
			/:[FE]:/ || /^ERROR: / { print }' "$log" | head -n 60)
		if [ -n "$lines" ]; then
			printf '%s\n' "$lines"
		else
			tail -n 30 "$log"
		fi
	done
}

# show_skips LOG...: how many checks were skipped, and why (each reason
# once, with how often it came).
show_skips() {
	cat "$@" 2>/dev/null | sed -n 's/^SKIP: //p' | sort | uniq -c |
		sed 's/^ *\([0-9]*\) /  skipped \1x: /'
}

# run_suite DIR: `make check` in DIR; the console shows automake's line per
# test and, when something failed, the failing lines of each failed test.
failed_names=
run_suite() {
	dir=$top/$1
	say "make check in $1"
	rc=0
	(cd "$dir" && make -s -j"$jobs" check) || rc=$?
	if [ "$rc" -ne 0 ]; then
		show_failures "$dir"
		names=$(failed_tests "$dir" | sed "s|\$| ($1)|" | tr '\n' ' ')
		failed_names="$failed_names${names:-make check ($1) }"
	fi
	return "$rc"
}

# quietly NAME LOG CMD...: run CMD with its output in LOG; on failure show
# the end of LOG.
quietly() {
	name=$1 log=$2
	shift 2
	if "$@" >"$log" 2>&1; then
		echo "$name: ok (output in $log)"
	else
		echo "$name FAILED; the end of $log:"
		tail -n 40 "$log"
		failed_names="$failed_names$name "
		return 1
	fi
}

# The ggml cross-checks (tests/ggml.py) need libggml-base.so from npm.
# nodejs and npm are not in TEST_PACKAGES: Debian's npm conflicts with the
# nodejs packages of NodeSource, which many machines have, and without
# them the cross-checks only skip.  So: npm from apt if there is none,
# the package into a cache; any failure is a warning, never fatal.
GGML_PACKAGE=@node-llama-cpp/linux-x64@3.21.1
setup_ggml() {
	cache=${GGML_CACHE:-/var/cache/moepackfs-ggml}
	if ! find "$cache/node_modules" -name libggml-base.so 2>/dev/null | grep -q .; then
		command -v npm >/dev/null 2>&1 ||
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
				--no-install-recommends nodejs npm >/dev/null 2>&1 || :
		if ! command -v npm >/dev/null 2>&1; then
			echo "bootstrap: no npm: the ggml cross-checks will be skipped" >&2
			return 0
		fi
		mkdir -p "$cache"
		if ! timeout 600 npm install --ignore-scripts --no-audit --no-fund \
			--prefix "$cache" "$GGML_PACKAGE" >"$cache/npm.log" 2>&1; then
			echo "bootstrap: npm install $GGML_PACKAGE failed (see $cache/npm.log):" \
				"the ggml cross-checks will be skipped" >&2
			return 0
		fi
	fi
	GGML_NODE_MODULES=$cache/node_modules
	export GGML_NODE_MODULES
	python3 "$top/tests/ggml.py" || :
}

# refuse_configured_in_place: the test configures build/ and build-asan/,
# which configure refuses beside a source tree configured in place.
refuse_configured_in_place() {
	if [ -f "$top/config.status" ]; then
		echo "bootstrap: $top is configured in place (./configure run there);" \
			"the test configures build/ and build-asan/, which configure" \
			"refuses beside it: run 'make distclean' in $top first" >&2
		exit 2
	fi
}

# tell_services: what the tests start besides the programs under test.
tell_services() {
	say "the tests start and stop local services of their own, on 127.0.0.1" \
		"and ports the kernel picks (never 80, 443, 2049, 6789 or 9100):" \
		"nfs-ganesha servers, a node_exporter, nginx, a one-node Ceph with" \
		"its S3 gateway; and tmux servers on private sockets, FUSE, loop," \
		"tmpfs, overlay and NFS mounts; the package test installs and purges" \
		"the moepackfs package"
}

# test_all: build with -Werror and run the suite, again with the
# sanitizers, fuzz each target, distcheck; print the summary, whose last
# line is "N passed, N failed, N skipped" (also in LAST_SUMMARY).
# Returns non-zero if anything failed.
test_all() {
	_rc=0
	say "warnings-as-errors build"
	build build --enable-werror
	run_suite build || _rc=1
	set -- $(summarize "$top"/build/tests/*.log)
	p=$1 f=$2 s=$3
	say "AddressSanitizer/UBSan build"
	build build-asan --enable-werror --enable-sanitizers
	run_suite build-asan || _rc=1
	set -- $(summarize "$top"/build-asan/tests/*.log)
	p=$((p + $1)) f=$((f + $2)) s=$((s + $3))
	# The fuzz targets are built by clang in the -Werror build's tree; a
	# crash, leak, sanitizer report or timeout fails CI.
	say "fuzzing: each target for ${FUZZ_SECONDS:-60} s"
	(cd "$top/build" && make -s fuzz-run FUZZ_SECONDS="${FUZZ_SECONDS:-60}") ||
		{ _rc=1; f=$((f + 1)); failed_names="${failed_names}fuzz "; }
	say "make distcheck"
	quietly distcheck "$top/build/distcheck.log" sh -c 'cd "$1" &&
		make -s distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror' sh "$top/build" ||
		{ _rc=1; f=$((f + 1)); }
	say "summary"
	show_skips "$top"/build/tests/*.log "$top"/build-asan/tests/*.log
	# CI reads the last line: always "N passed, N failed, N skipped" alone;
	# what failed is the line before it.
	[ -z "$failed_names" ] || echo "failed: $failed_names"
	LAST_SUMMARY="$p passed, $f failed, $s skipped"
	echo "$LAST_SUMMARY"
	return "$_rc"
}

# The load of test-load, in the background until stop_load, and at most
# LOAD_HOURS (default 6) however the script ends: stress-ng, and a loop
# that reads a LOAD_DD_GB (default 4) GB file with dd while another drops
# the kernel's caches every LOAD_DROP_SECONDS (default 5).  Their pids are
# in load_pids; the file in load_file.
load_pids= load_file=
start_load() {
	_limit=$((${LOAD_HOURS:-6} * 3600))
	_gb=${LOAD_DD_GB:-4}
	_dir=${TMPDIR:-/var/tmp}
	_free=$(df -Pk "$_dir" | awk 'NR == 2 { print $4 }')
	if [ "${_free:-0}" -lt $(((_gb + 8) * 1048576)) ]; then
		echo "bootstrap: $_dir has $((${_free:-0} / 1048576)) GB free; the load's" \
			"file needs $_gb GB and the tests 8 more (LOAD_DD_GB, TMPDIR)" >&2
		exit 2
	fi
	[ -w /proc/sys/vm/drop_caches ] || {
		echo "bootstrap: cannot drop the caches (/proc/sys/vm/drop_caches): run as root" >&2
		exit 2
	}
	load_file=$(mktemp "$_dir/moepack-load.XXXXXX")
	say "load: writing $_gb GB to $load_file for dd to read"
	dd if=/dev/zero of="$load_file" bs=1M count=$((_gb * 1024)) conv=fsync status=none
	say "load: stress-ng --cpu 2 --io 2 --vm 1 --vm-bytes 2G, dd of $load_file," \
		"caches dropped every ${LOAD_DROP_SECONDS:-5} s (for ${LOAD_HOURS:-6} h at most)"
	stress-ng --cpu 2 --io 2 --vm 1 --vm-bytes 2G --timeout "${_limit}s" >/dev/null 2>&1 &
	load_pids=$!
	load_loop "$_limit" dd if="$load_file" of=/dev/null bs=1M status=none &
	load_pids="$load_pids $!"
	load_loop "$_limit" sh -c 'sleep "$1" && sync && echo 3 >/proc/sys/vm/drop_caches' \
		sh "${LOAD_DROP_SECONDS:-5}" &
	load_pids="$load_pids $!"
}

# load_loop SECONDS CMD...: run CMD again and again for SECONDS; on
# SIGTERM, end the CMD that runs and exit.
load_loop() {
	_end=$(($(date +%s) + $1))
	shift
	_child=
	trap '[ -z "$_child" ] || kill "$_child" 2>/dev/null; exit 0' TERM
	while [ "$(date +%s)" -lt "$_end" ]; do
		"$@" &
		_child=$!
		wait "$_child" || :
		_child=
	done
}

stop_load() {
	for _pid in $load_pids; do
		kill "$_pid" 2>/dev/null || :
	done
	for _pid in $load_pids; do
		wait "$_pid" 2>/dev/null || :
	done
	load_pids=
	[ -z "$load_file" ] || rm -f "$load_file"
	load_file=
}

case $mode in
demo)
	# shellcheck disable=SC2086 # a list of words
	install_missing $DEMO_PACKAGES
	demo_build
	# not a fixed name in /tmp, which every user of the host shares: it
	# could be another user's, or a link one planted
	if [ -n "${DEMO_DIR:-}" ]; then
		demo=$DEMO_DIR
		mkdir -p "$demo"
	else
		demo=$(mktemp -d "${TMPDIR:-/tmp}/moepack-demo.XXXXXX")
	fi
	say "the demo's files go to $demo"
	say "writing a demo pack (92 layers x 4 experts, page-aligned)"
	"$bin/moepack" mkdemo --force --out "$demo/demo.pack" --experts 4 --full-sha256
	say "moepack verify --full"
	"$bin/moepack" verify --full "$demo/demo.pack"
	say "moepack seal   (a digest of every chunk, anchored to the manifest's SHA-256)"
	"$bin/moepack" seal "$demo/demo.pack"
	say "moepack info"
	"$bin/moepack" info "$demo/demo.pack"
	say "moepack verify --payload   (which experts hold NaN/Inf scales or holes)"
	"$bin/moepack" verify --payload "$demo/demo.pack"
	say "moepack dump --stats demo.pack 17 3 up   (the role dequantized as ggml does)"
	"$bin/moepack" dump --stats "$demo/demo.pack" 17 3 up
	mnt=$demo/mnt
	role=$mnt/layers/017/003/up
	mkdir -p "$mnt"
	fusermount3 -u "$mnt" 2>/dev/null || true
	say "mounting on $mnt   (the seal is found: every read is checked against it)"
	"$bin/moepackfs" "$demo/demo.pack" "$mnt"
	trap 'fusermount3 -u "$mnt" 2>/dev/null || true' EXIT
	say "ls $mnt"
	ls -l "$mnt"
	say "ls $mnt/layers/017/003"
	ls -l "$mnt/layers/017/003"
	say "getfattr -d $role"
	getfattr -d "$role"
	say "head -c 84 $role | xxd   (one Q2_K block)"
	head -c 84 "$role" | xxd
	at=$(($(getfattr --only-values -n user.moepack.offset "$role") + 100))
	say "unmounting"
	fusermount3 -u "$mnt"
	say "changing byte $at of the pack (layer 17, expert 3, up), as a bad disk would"
	was=$(dd if="$demo/demo.pack" bs=1 skip="$at" count=1 status=none | od -An -tu1 | tr -d ' ')
	# shellcheck disable=SC2059 # the format is the byte's escape
	printf "\\$(printf %03o $((was ^ 1)))" |
		dd of="$demo/demo.pack" bs=1 seek="$at" conv=notrunc status=none
	"$bin/moepackfs" "$demo/demo.pack" "$mnt"
	say "head -c 84 $role   (refused: not the sealed bytes)"
	if head -c 84 "$role" >/dev/null; then
		echo "bootstrap: the mount served a changed byte" >&2
		exit 1
	fi
	fusermount3 -u "$mnt"
	trap - EXIT
	say "moepack verify --seal   (names the chunk)"
	if "$bin/moepack" verify --seal "$demo/demo.pack"; then
		echo "bootstrap: verify --seal passed a changed byte" >&2
		exit 1
	fi
	say "putting the byte back: moepack verify --seal"
	# shellcheck disable=SC2059
	printf "\\$(printf %03o "$was")" |
		dd of="$demo/demo.pack" bs=1 seek="$at" conv=notrunc status=none
	"$bin/moepack" verify --seal "$demo/demo.pack"
	ckpt=$demo/ckpt
	shard=$ckpt/kimi-k3-demo-00001-of-00003.gguf
	say "moepack mkdemo --gguf $ckpt   (a small Kimi-K3-shaped GGUF checkpoint)"
	"$bin/moepack" mkdemo --force --gguf "$ckpt"
	say "moepack check-gguf --any-geometry $ckpt/*.gguf"
	"$bin/moepack" check-gguf --any-geometry "$ckpt"/*.gguf
	say "moepack build --any-geometry --gguf $shard --config $ckpt/config.json"
	"$bin/moepack" build --any-geometry --gguf "$shard" --config "$ckpt/config.json"
	say "moepack verify --payload $ckpt/kimi-k3-demo.expert-major.pack"
	"$bin/moepack" verify --payload --config "$ckpt/config.json" \
		"$ckpt/kimi-k3-demo.expert-major.pack"
	say "done"
	cat <<EOF
The demo's files are in $demo (rm -r it when done).  The demo pack is
$demo/demo.pack, sealed by $demo/demo.pack.seal, so that a mount checks
every read against it; the pack built from GGUF shards is
$ckpt/kimi-k3-demo.expert-major.pack.

Next steps:
  - The programs are $bin/moepack and $bin/moepackfs.
    Their manual: man -l ${bin%/src}/man/moepack.1 (also moepackfs.1, moepack-pack.5;
    man is in man-db, which the demo does not install).
  - Mount a pack and unmount it (fusermount3 -uz if a reader still holds
    files open):
        $bin/moepackfs $demo/demo.pack $mnt
        fusermount3 -u $mnt
  - Install everything under /usr/local: the programs, the manual pages,
    the bash completion, the examples and the systemd unit (into
    /usr/local/lib/systemd/system, which systemd reads too):
        make -C $(dirname "$bin") install
  - Build the pack of a real checkpoint (any shard names the set):
        $bin/moepack check-gguf /models/k3/Kimi-K3-*-of-*.gguf
        $bin/moepack build --gguf /models/k3/Kimi-K3-00001-of-000NN.gguf --config config.json
  - Run the whole test suite: sh contrib/bootstrap.sh test
EOF
	;;
test)
	refuse_configured_in_place
	say "the whole suite, twice (a -Werror and a sanitizer build), then the" \
		"fuzzers and distcheck: about 50 minutes on 2 cores, after what" \
		"apt-get and npm install"
	tell_services
	# shellcheck disable=SC2086
	install_missing $TEST_PACKAGES
	# shellcheck disable=SC2086
	quiet_services $installed_now
	say "ggml for the cross-checks"
	setup_ggml
	all_rc=0
	test_all || all_rc=1
	exit "$all_rc"
	;;
test-load)
	# What test runs, three times in a row, under load: all three rounds
	# must pass.  The load is the tests' neighbours on a shared CI
	# machine: both cores busy, disk reads and syncs, 2 GB of memory
	# churned, a file much larger than the test's read from disk again
	# and again while the page cache is dropped under the tests' feet.
	refuse_configured_in_place
	rounds_asked=${ROUNDS:-3}
	case $rounds_asked in
	'' | *[!0-9]* | 0) echo "bootstrap: ROUNDS is $rounds_asked, must be a count of 1 or more" >&2
		exit 2 ;;
	esac
	say "what test runs, $rounds_asked times under load: an hour or more a round on 2 cores"
	tell_services
	# shellcheck disable=SC2086
	install_missing $TEST_PACKAGES
	# shellcheck disable=SC2086
	quiet_services $installed_now
	setup_ggml
	trap stop_load EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
	start_load
	all_rc=0 rounds=
	for round in $(seq 1 "$rounds_asked"); do
		say "round $round of $rounds_asked, under load"
		failed_names=
		if test_all; then
			rounds="${rounds}round $round: passed: $LAST_SUMMARY
"
		else
			all_rc=1
			rounds="${rounds}round $round: FAILED ($failed_names): $LAST_SUMMARY
"
		fi
	done
	say "rounds"
	printf '%s' "$rounds"
	exit "$all_rc"
	;;
*)
	echo "usage: sh contrib/bootstrap.sh demo|test|test-load" >&2
	exit 2
	;;
esac
