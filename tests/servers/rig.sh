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

# rig_free_ports N: N different TCP ports of 127.0.0.1 that nothing
# listens on now (the kernel's choices for N sockets bound to port 0 at
# once), on one line.  Another program may take one before the server
# binds it: nginx.sh tries again on a bind failure.
rig_free_ports() {
	python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
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
# 0) or SECONDS have passed by the clock (return 1), however long CMD
# itself takes.
rig_poll() {
	_rig_end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$_rig_end" ] || return 1
		sleep 0.1
	done
}

# rig_spawn NAME LOG CMD...: CMD in the background under `timeout
# RIG_LIFETIME`, its output in LOG; the pid of the timeout is added to
# $RIG_STATE/pids as "NAME PID group" and left in RIG_PID.  timeout
# makes itself the leader of a process group of its own, which CMD and
# everything CMD starts belong to: stopping signals the group, so that
# nothing of CMD outlives the timeout even when the timeout is killed.
rig_spawn() {
	_rig_n=$1 _rig_log=$2
	shift 2
	timeout -k 10 "$RIG_LIFETIME" "$@" >>"$_rig_log" 2>&1 </dev/null &
	RIG_PID=$!
	echo "$_rig_n $RIG_PID group" >>"$RIG_STATE/pids"
}

# rig_group_alive PGID: some process of process group PGID runs.
rig_group_alive() {
	# /proc/PID/stat after the command name: state, ppid, pgrp
	awk -v g="$1" '{ sub(/.*\) /, "") } $3 == g && $1 != "Z" { f = 1 } END { exit !f }' \
		/proc/[0-9]*/stat 2>/dev/null
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

# rig_gone NAME PID [group]: PID has ended, and with "group" every
# process of its group.
rig_gone() {
	! rig_alive "$2" && { [ "${3:-}" != group ] || ! rig_group_alive "$2"; }
}

# rig_all_gone: no process of $RIG_STATE/pids runs, nor any of their
# groups.
rig_all_gone() {
	[ -f "$RIG_STATE/pids" ] || return 0
	while read -r _rig_n _rig_p _rig_g; do
		rig_gone "$_rig_n" "$_rig_p" "$_rig_g" || return 1
	done <"$RIG_STATE/pids"
	return 0
}

# rig_stop_all: each process group of $RIG_STATE/pids, newest first (the
# gateway before the cluster under it), gets TERM and RIG_WAIT seconds
# to end, then KILL.  Returns 1 if something had to be killed or is still
# there.
rig_stop_all() {
	[ -f "$RIG_STATE/pids" ] || return 0
	_rig_rc=0
	for _rig_e in $(awk '$3 == "group" { print $1 ":" $2 }' "$RIG_STATE/pids" | sed '1!G;h;$!d'); do
		_rig_n=${_rig_e%%:*} _rig_p=${_rig_e#*:}
		rig_gone "$_rig_n" "$_rig_p" group && continue
		kill -TERM "-$_rig_p" 2>/dev/null
		rig_poll "$RIG_WAIT" rig_gone "$_rig_n" "$_rig_p" group && continue
		rig_say "$_rig_n (process group $_rig_p) did not end on TERM in $RIG_WAIT s: killed"
		kill -KILL "-$_rig_p" 2>/dev/null
		_rig_rc=1
	done
	# a process recorded outside the groups (none is, today) or one that
	# left its group
	while read -r _rig_n _rig_p _rig_g; do
		rig_alive "$_rig_p" && kill -KILL "$_rig_p" 2>/dev/null && _rig_rc=1
	done <"$RIG_STATE/pids"
	rig_poll 10 rig_all_gone || _rig_rc=1
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

# rig_main start|stop ARGS...: a server script's command line.  The script
# defines start (and usage); stop is the same for every server: what
# rig_spawn recorded under STATE is stopped.
rig_main() {
	cmd=${1:-}
	[ $# -gt 0 ] && shift
	case $cmd in
	start) start "$@" ;;
	stop)
		[ $# -eq 1 ] || usage
		RIG_STATE=$1
		[ -d "$RIG_STATE" ] || rig_die "$RIG_STATE: no such directory"
		rig_stop_all
		;;
	*) usage ;;
	esac
}
