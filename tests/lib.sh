# tests/lib.sh - helpers for the shell test suites (cli.test, mount.test).
#
# Source it first:   . "$top_srcdir/tests/lib.sh"
#
# `make check` sets top_builddir and top_srcdir (absolute); run by hand, they
# default to the current directory and the directory above this file's
# test.  The source tree may be read-only (VPATH builds): everything a test
# writes goes to $TEST_DIR, a fresh directory under ${TMPDIR:-/tmp} that is
# removed when the test exits (set KEEP_TEST_DIR=1 to keep it for a look).
#
# A test is a sequence of checks, each of which calls `pass`, `fail` or
# `skip` exactly once, and ends with `finish`, which prints "N passed, N
# failed" (", N skipped" when some were) and exits 1 if anything failed.  Exit status 77 (skip_all) tells automake
# the whole test was skipped, 99 (hard_error) that it could not run.
#
# POSIX sh; nothing here is specific to one suite.

: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$(pwd)}"

# The programs under test.
# shellcheck disable=SC2034 # used by the sourcing test
MOEPACK=$top_builddir/src/moepack
# shellcheck disable=SC2034
MOEPACKFS=$top_builddir/src/moepackfs

TEST_NAME=$(basename "$0" .test)
TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/moepack-$TEST_NAME.XXXXXX") || {
	echo "ERROR: cannot create a temporary directory" >&2
	exit 99
}
# Where `run` and `expect_exit` leave the command's output and status.
OUT=$TEST_DIR/.stdout
ERR=$TEST_DIR/.stderr
STATUS=0

tests_passed=0
tests_failed=0
tests_skipped=0
_lib_failed_names=
_lib_cleanup_hooks=

# at_cleanup CMD: run the shell command CMD when the test exits, before
# TEST_DIR is removed (unmount, kill a daemon...).  Hooks run last-added
# first; a failing hook does not stop the others.
at_cleanup() {
	_lib_cleanup_hooks="$1
$_lib_cleanup_hooks"
}

_lib_cleanup() {
	_lib_status=$?
	trap - EXIT
	printf '%s\n' "$_lib_cleanup_hooks" | while IFS= read -r _lib_hook; do
		[ -n "$_lib_hook" ] && eval "$_lib_hook"
	done
	if [ -n "${KEEP_TEST_DIR:-}" ]; then
		echo "test files kept in $TEST_DIR" >&2
	else
		rm -rf "$TEST_DIR"
	fi
	exit $_lib_status
}
trap _lib_cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 141' PIPE

# describe CMD...: the command line as one readable string, with the
# temporary directory and program paths shortened, for check names.
describe() {
	printf '%s\n' "$*" | sed -e "s|$TEST_DIR|\$T|g" -e "s|$top_builddir/src/||g"
}

# pass NAME: count a passed check and log it.
pass() {
	tests_passed=$((tests_passed + 1))
	echo "PASS: $1"
}

# fail NAME [DETAIL...]: count a failed check and log it with any details
# (one per line) indented below it.
fail() {
	tests_failed=$((tests_failed + 1))
	_lib_failed_names="$_lib_failed_names
FAIL: $1"
	echo "FAIL: $1"
	shift
	for _lib_line in "$@"; do
		printf '      %s\n' "$_lib_line"
	done
}

# skip NAME REASON: a check that cannot run here; counted, and logged as
# one "SKIP: NAME: REASON" line, the form the summaries collect.
skip() {
	tests_skipped=$((tests_skipped + 1))
	echo "SKIP: $1: $(printf '%s' "$2" | tr '\n' ' ')"
}

# check NAME CMD...: run CMD (output discarded); pass if it exits 0.
check() {
	_lib_name=$1
	shift
	if "$@" >/dev/null 2>&1; then
		pass "$_lib_name"
	else
		fail "$_lib_name" "command failed: $(describe "$@")"
	fi
}

# run CMD...: run CMD with stdout in $OUT, stderr in $ERR and the exit
# status in $STATUS.  Not a check by itself.
run() {
	"$@" >"$OUT" 2>"$ERR"
	STATUS=$?
}

# expect_exit CODE CMD...: run CMD as `run` does and pass if it exits with
# CODE; on failure the log shows the status and CMD's stderr.  Returns 0
# when the status matched, so that output checks can be chained with &&.
expect_exit() {
	_lib_want=$1
	shift
	run "$@"
	if [ "$STATUS" -eq "$_lib_want" ]; then
		pass "$(describe "$@") exits $_lib_want"
		return 0
	fi
	fail "$(describe "$@") exits $_lib_want" "exit status $STATUS" \
		"stderr: $(head -c 2000 "$ERR")"
	return 1
}

# assert_eq NAME EXPECTED ACTUAL: pass if the two strings are equal.
assert_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1" "expected: $2" "actual:   $3"
	fi
}

# assert_grep NAME ERE [FILE]: pass if FILE ($OUT by default) has a line
# matching the extended regular expression ERE.
assert_grep() {
	if grep -Eq -e "$2" "${3:-$OUT}"; then
		pass "$1"
	else
		fail "$1" "no line matches /$2/ in $(describe "${3:-$OUT}"):" \
			"$(head -c 2000 "${3:-$OUT}")"
	fi
}

# assert_no_grep NAME ERE [FILE]: pass if no line of FILE ($OUT by
# default) matches ERE.
assert_no_grep() {
	if grep -Eq -e "$2" "${3:-$OUT}"; then
		fail "$1" "a line matches /$2/ in $(describe "${3:-$OUT}"):" \
			"$(grep -E -e "$2" "${3:-$OUT}" | head -5)"
	else
		pass "$1"
	fi
}

# assert_same_file NAME FILE1 FILE2: pass if the files' bytes are equal.
assert_same_file() {
	if cmp -s "$2" "$3"; then
		pass "$1"
	else
		fail "$1" "$(cmp "$2" "$3" 2>&1 | head -1)"
	fi
}

# json_get FILE EXPR: evaluate the Python expression EXPR with `d` bound to
# the JSON document in FILE and print the result: strings as they are,
# anything else as JSON (true, 552, [256, 2048], null).  Prints
# "<invalid JSON>" and returns 1 when FILE does not parse.
json_get() {
	python3 -c '
import json, sys
try:
    with open(sys.argv[1]) as f:
        d = json.load(f)
except ValueError:
    print("<invalid JSON>")
    sys.exit(1)
r = eval("(" + sys.argv[2] + "\n)")
print(r if isinstance(r, str) else json.dumps(r))
' "$1" "$2"
}

# file_bytes FILE OFFSET COUNT: write COUNT bytes of FILE from OFFSET to
# stdout (independently of the programs under test).
file_bytes() {
	dd if="$1" iflag=skip_bytes,count_bytes skip="$2" count="$3" bs=65536 \
		status=none
}

# poke FILE OFFSET BYTE: overwrite one byte of FILE in place; BYTE is an
# octal escape such as '\377' or a single character.
poke() {
	# shellcheck disable=SC2059 # the format is the byte, escapes and all
	printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# TEST_WAIT: how long, in seconds, a test waits at most for a state (a
# mount, an unmount, a snapshot, a counter): a ceiling for a machine busy
# with other work, never a speed target.  60 s, three times that when the
# programs are built with the sanitizers (ASan and UBSan slow them several
# times over); a TEST_WAIT in the environment may only raise it.  Exported
# for the Python checkers, which bound their waits by it too.
if ldd "$MOEPACKFS" 2>/dev/null | grep -q -e libasan -e libubsan; then
	_lib_wait=180
else
	_lib_wait=60
fi
[ "${TEST_WAIT:-0}" -gt "$_lib_wait" ] 2>/dev/null || TEST_WAIT=$_lib_wait
export TEST_WAIT

# wait_until SECONDS CMD...: poll CMD (output discarded) every 50 ms until
# it succeeds; return 1 if it still fails after SECONDS, or TEST_WAIT if
# that is longer (SECONDS is a floor a test may raise, never a limit it
# can shorten).  A test waits for a condition this way, never with a
# fixed sleep.
wait_until() {
	_lib_tries=$1
	[ "$_lib_tries" -ge "$TEST_WAIT" ] || _lib_tries=$TEST_WAIT
	_lib_tries=$((_lib_tries * 20))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$_lib_tries" -gt 0 ] || return 1
		_lib_tries=$((_lib_tries - 1))
		sleep 0.05
	done
}

# fg_mount MNT LOG ARGS...: moepackfs -f ARGS... MNT as a background job,
# its stderr in LOG and its pid in FG_PID; returns once MNT is mounted, a
# hard error if the daemon exits first or TEST_WAIT passes.  The cleanup
# unmounts MNT lazily.
fg_mount() {
	_lib_m=$1 _lib_log=$2
	shift 2
	mkdir -p "$_lib_m"
	at_cleanup "fusermount3 -uz '$_lib_m' 2>/dev/null"
	"$MOEPACKFS" -f "$@" "$_lib_m" 2>"$_lib_log" &
	FG_PID=$!
	wait_until "$TEST_WAIT" _lib_mounted_or_gone "$_lib_m" "$FG_PID"
	is_mounted "$_lib_m" || hard_error "not mounted: $(cat "$_lib_log")"
}

_lib_mounted_or_gone() {
	is_mounted "$1" || exited "$2"
}

# unmount_when_free MNT: fusermount3 -u MNT, tried again while it fails
# (EBUSY: a reader that has just ended, or a `moepack top` between two
# reads of status.json, still holds a file of the mount) until TEST_WAIT
# passes; 1 if it never worked.
unmount_when_free() {
	wait_until "$TEST_WAIT" fusermount3 -u "$1"
}

# fg_unmount MNT [PID]: unmount MNT, a moepackfs -f job PID (FG_PID by
# default), and reap PID; FG_STATUS is its exit status.  fusermount3 -u
# fails with EBUSY while a reader that has just ended still holds files of
# the mount (the kernel lets go of a dead process's files after its parent
# has seen it exit), so it is tried again until it works or TEST_WAIT
# passes.  A mount still busy then is detached (-uz) and a daemon that
# does not exit is killed, so that nothing waits forever; either is a
# failed check, and returns 1.
fg_unmount() {
	_lib_m=$1 _lib_pid=${2:-$FG_PID} _lib_rc=0
	if ! unmount_when_free "$_lib_m"; then
		fusermount3 -uz "$_lib_m" 2>/dev/null
		fail "unmount $_lib_m" "busy for $TEST_WAIT s"
		_lib_rc=1
	fi
	if ! wait_until "$TEST_WAIT" exited "$_lib_pid"; then
		kill -KILL "$_lib_pid" 2>/dev/null
		fail "unmount $_lib_m: the daemon exits" "pid $_lib_pid still there after $TEST_WAIT s"
		_lib_rc=1
	fi
	wait "$_lib_pid" 2>/dev/null
	FG_STATUS=$?
	return "$_lib_rc"
}

# status_after MNT FILE: copy MNT/status.json to FILE once it is a snapshot
# rendered after this call began, so that it counts every read before it
# (the watcher renders one a second, later on a loaded machine); a hard
# error if none comes within TEST_WAIT.
status_after() {
	python3 "$top_srcdir/tests/mount_check.py" status-after "$1/status.json" "$2" ||
		hard_error "no status.json of $(describe "$1") rendered within $TEST_WAIT s"
}

# daemon_pid MNT: the pid of the moepackfs serving MNT, the newest by start
# time (the daemon of an earlier mount on MNT may still be exiting, and
# /proc lists pids in text order), zombies and the fusermount3 that
# -o auto_unmount starts (its options name moepackfs too) left out; empty
# if none.
daemon_pid() {
	_lib_pid= _lib_start=-1
	for _lib_d in /proc/[0-9]*; do
		[ "$(cat "$_lib_d/comm" 2>/dev/null)" = moepackfs ] || continue
		case $(tr '\0' ' ' 2>/dev/null <"$_lib_d/cmdline") in
		*moepackfs*" $1 "* | *moepackfs*" $1") ;;
		*) continue ;;
		esac
		# fields after the command name: state is the 1st, starttime the 20th
		set -- "$1" $(sed 's/.*) //' "$_lib_d/stat" 2>/dev/null)
		[ $# -ge 21 ] && [ "$2" != Z ] || { set -- "$1"; continue; }
		if [ "${21}" -gt "$_lib_start" ]; then
			_lib_pid=${_lib_d#/proc/} _lib_start=${21}
		fi
		set -- "$1"
	done
	echo "$_lib_pid"
}

# is_mounted DIR: a moepackfs mount is at DIR (as /proc/mounts shows it).
is_mounted() {
	grep -q " $1 fuse.moepackfs " /proc/mounts
}

# not CMD...: succeed when CMD fails (wait_until 60 not is_mounted "$M").
not() {
	! "$@"
}

# exited PID: the process has exited (gone, or a zombie waiting for its
# parent: a daemon's parent is init, which may take a second or more to
# reap it, so "kill -0 succeeds" does not mean "still runs").
exited() {
	[ ! -r "/proc/$1/stat" ] ||
		[ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" = Z ] ||
		[ ! -r "/proc/$1/stat" ]
}

# skip_all REASON: the whole test cannot run here (no FUSE, not root...).
skip_all() {
	echo "SKIP: $*"
	exit 77
}

# hard_error REASON: the test cannot run because something is broken.
hard_error() {
	echo "ERROR: $*"
	exit 99
}

# require_program PROGRAM...: hard_error unless each PROGRAM was built.
require_program() {
	for _lib_prog in "$@"; do
		[ -x "$_lib_prog" ] || hard_error "$_lib_prog not built (run make first)"
	done
}

# copy_sources DIR: copy the source tree into DIR (which must exist): what
# git tracks plus new files it does not ignore, or, outside a checkout (a
# release tarball unpacked inside one, as distcheck does, is not one), the
# whole tree but its build directories.  Never a build artefact of the
# checkout.  Returns non-zero when the copy failed.
copy_sources() {
	if [ "$(git -C "$top_srcdir" rev-parse --show-toplevel 2>/dev/null)" = \
		"$(cd "$top_srcdir" && pwd -P)" ]; then
		(cd "$top_srcdir" && git ls-files -co --exclude-standard -z |
			xargs -0 tar -cf - --no-recursion) | tar -C "$1" -xf -
	else
		# build/ and build-*/ are build directories; build-aux/ is not
		(cd "$top_srcdir" && tar -cf - --exclude=./build --exclude='./build-*' \
			--exclude=./autom4te.cache .) | tar -C "$1" -xf - &&
			if [ -d "$top_srcdir/build-aux" ]; then
				(cd "$top_srcdir" && tar -cf - ./build-aux) | tar -C "$1" -xf -
			fi
	fi && chmod -R u+w "$1"
}

# finish: list the failed checks (if any) and print the summary line; exit
# 1 if any check failed, 0 if all passed, 99 if no check ran at all.
finish() {
	# the failed checks again, so that the end of the log shows them
	if [ "$tests_failed" -gt 0 ]; then
		echo "$TEST_NAME: $tests_failed failed:"
		printf '%s\n' "$_lib_failed_names" | sed '/^$/d; s/^/  /'
	fi
	if [ "$tests_skipped" -gt 0 ]; then
		echo "$tests_passed passed, $tests_failed failed, $tests_skipped skipped"
	else
		echo "$tests_passed passed, $tests_failed failed"
	fi
	[ "$tests_failed" -eq 0 ] || exit 1
	[ "$tests_passed" -gt 0 ] || exit 99
	exit 0
}

# metrics_unlabel: a metrics report with the labels every sample carries
# (mountpoint and pack) taken off, so that series read as moepackfs(1)
# names them: 'name{role="up"} 5', 'name 1'.
metrics_unlabel() {
	sed -E 's/([{,])mountpoint="[^"]*"/\1/; s/([{,])pack="[^"]*"/\1/; s/\{,+/{/; s/,,+/,/;
		s/,\}/}/; s/\{\} / /'
}

# metric FILE SERIES: the value of SERIES ('name{labels}' as
# metrics_unlabel writes it) in the metrics report FILE; nothing if absent.
metric() {
	metrics_unlabel <"$1" | awk -v k="$2" '$1 == k { print $2; exit }'
}
