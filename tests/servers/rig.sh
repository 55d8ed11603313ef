# tests/servers/rig.sh - what the test servers of tests/servers/ share.
# shellcheck shell=sh
# Sourced by nginx.sh and ceph-s3.sh; POSIX sh.
#
# Every server listens on 127.0.0.1 only, on ports the kernel hands out
# (never a service's standard port), keeps everything under a state
# directory of its own, and runs under `timeout` for RIG_LIFETIME seconds
# at most (default 3600), so that a test killed before it could stop its
# servers does not leave them running for good.  Every wait polls a
# condition until RIG_WAIT seconds (TEST_WAIT, or 60) have passed; none
# sleeps a fixed time and hopes.

: "${TEST_WAIT:=60}"
: "${RIG_WAIT:=$TEST_WAIT}"
: "${RIG_LIFETIME:=3600}"

rig_say() {
	printf '%s: %s\n' "$RIG_NAME" "$*" >&2
}

rig_die() {
	rig_say "$*"
	exit 1
}

# rig_free_port: a TCP port of 127.0.0.1 that nothing listens on now (the
# kernel's choice for a socket bound to port 0).  Another program may take
# it before the server binds it: the callers try again on a bind failure.
rig_free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# rig_listening PORT: something listens on TCP PORT (any address).
rig_listening() {
	_rig_hex=$(printf ':%04X' "$1")
	for _rig_table in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$_rig_table" ] || continue
		awk -v port="$_rig_hex" 'NR > 1 && $4 == "0A" &&
			substr($2, length($2) - 4) == port { found = 1 }
			END { exit !found }' "$_rig_table" && return 0
	done
	return 1
}

# rig_alive PID: the process runs (not gone, not a zombie).
rig_alive() {
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] &&
		[ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]
}

# rig_poll SECONDS CMD...: run CMD every 0.1 s until it succeeds (return
# 0) or SECONDS pass (return 1).
rig_poll() {
	_rig_left=$(($1 * 10))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$_rig_left" -gt 0 ] || return 1
		_rig_left=$((_rig_left - 1))
		sleep 0.1
	done
}

# rig_spawn NAME LOG CMD...: CMD in the background under `timeout
# RIG_LIFETIME`, its output in LOG; the pid of the timeout (which passes
# TERM on to CMD) is added to $RIG_STATE/pids as "NAME PID" and left in
# RIG_PID.
rig_spawn() {
	_rig_n=$1 _rig_log=$2
	shift 2
	timeout -k 10 "$RIG_LIFETIME" "$@" >>"$_rig_log" 2>&1 </dev/null &
	RIG_PID=$!
	echo "$_rig_n $RIG_PID" >>"$RIG_STATE/pids"
}

# rig_children PID: PID's child processes, one a line.
rig_children() {
	cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | sed '/^$/d'
}

# rig_record_tree NAME PID: add PID's descendants to $RIG_STATE/pids (the
# daemon under the timeout, nginx's workers), so that stop and the tests
# can see each of them gone.
rig_record_tree() {
	for _rig_c in $(rig_children "$2"); do
		echo "$1 $_rig_c" >>"$RIG_STATE/pids"
		rig_record_tree "$1" "$_rig_c"
	done
}

# rig_all_gone: no process of $RIG_STATE/pids runs.
rig_all_gone() {
	[ -f "$RIG_STATE/pids" ] || return 0
	while read -r _rig_n _rig_p; do
		rig_alive "$_rig_p" && return 1
	done <"$RIG_STATE/pids"
	return 0
}

# rig_stop_all: TERM every process of $RIG_STATE/pids, newest first (the
# timeout passes it on to its daemon); whatever still runs after RIG_WAIT
# seconds is killed.  Returns 1 if something had to be killed or is still
# there.
rig_stop_all() {
	[ -f "$RIG_STATE/pids" ] || return 0
	_rig_rc=0
	for _rig_p in $(awk '{ print $2 }' "$RIG_STATE/pids" | sed '1!G;h;$!d'); do
		rig_alive "$_rig_p" && kill -TERM "$_rig_p" 2>/dev/null
	done
	if ! rig_poll "$RIG_WAIT" rig_all_gone; then
		while read -r _rig_n _rig_p; do
			if rig_alive "$_rig_p"; then
				rig_say "$_rig_n (pid $_rig_p) did not end on TERM in $RIG_WAIT s: killed"
				kill -KILL "$_rig_p" 2>/dev/null
				_rig_rc=1
			fi
		done <"$RIG_STATE/pids"
		rig_poll 10 rig_all_gone || _rig_rc=1
	fi
	return "$_rig_rc"
}

# rig_need PROGRAM...: each PROGRAM is on PATH (or in /usr/sbin), else
# say which package holds it and exit 2.
rig_need() {
	for _rig_prog in "$@"; do
		command -v "$_rig_prog" >/dev/null 2>&1 || {
			rig_say "$_rig_prog is not installed (sh contrib/bootstrap.sh test installs it)"
			exit 2
		}
	done
}

# rig_tail FILE: the end of FILE, indented, on stderr.
rig_tail() {
	[ -f "$1" ] && tail -n 15 "$1" | sed 's/^/    /' >&2
}
