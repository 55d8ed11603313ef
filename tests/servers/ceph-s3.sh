#!/bin/sh
# tests/servers/ceph-s3.sh - a one-node Ceph with its S3 gateway, for tests.
#
#   sh tests/servers/ceph-s3.sh start STATE [FILE...]
#   sh tests/servers/ceph-s3.sh stop STATE
#
# start: Debian's Ceph 16.2 (ceph-mon, ceph-osd, radosgw) as Ceph's own
# developer clusters run it, everything under STATE (which it makes):
#
#   - one monitor (ceph-mon) on a kernel-chosen port of 127.0.0.1, msgr2
#     only, auth none for the cluster's own traffic (S3 requests are still
#     signed and checked by the gateway: that is what the tests are about);
#   - one OSD (ceph-osd) on memstore, objects in the OSD's memory (at most
#     CEPH_S3_MEMSTORE_MB, default 1024 MiB), pools of one replica; its
#     ports come from a range of 100 picked at random in 20000-29999, out
#     of Ceph's standard 6800-7300 and of the kernel's ephemeral range;
#   - one radosgw (beast) on a kernel-chosen port of 127.0.0.1, with
#     rgw_dns_name localhost, so that BUCKET.localhost:PORT is
#     virtual-hosted addressing;
#   - a user made by radosgw-admin with a fresh random key pair, a bucket
#     (CEPH_S3_BUCKET, default moepack-test) made with a SigV4-signed
#     request, and each FILE uploaded into it under its base name.
#
# No manager daemon: nothing here needs one.  The variables (S3_ENDPOINT,
# S3_PORT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY, S3_VHOST,
# and the same as AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID,
# AWS_SECRET_ACCESS_KEY; CEPH_CONF) go to STATE/env, a file a test
# sources; start prints its path and returns once the object reads back.
# It says how long each step took on stderr.  On any failure it stops
# what it started, shows the end of the log at fault and exits non-zero
# (2 when a program is not installed).
#
# stop: TERM to the three daemons, KILL whatever still runs after RIG_WAIT
# seconds; exits 1 if something had to be killed.  STATE and its logs
# are kept.
#
# Each daemon runs in the foreground (-f) under `timeout` (RIG_LIFETIME,
# default 3600 s; see rig.sh).  The region is a name only: a one-zone
# radosgw takes any region in a SigV4 scope.  curl signs the requests
# (--aws-sigv4), with the x-amz-content-sha256 header S3 needs beside it.
set -u
PATH=$PATH:/usr/sbin:/sbin
# shellcheck disable=SC2034 # rig.sh names the script by it
RIG_NAME=ceph-s3.sh
here=$(cd "$(dirname "$0")" && pwd)
. "$here/rig.sh"

: "${CEPH_S3_BUCKET:=moepack-test}"
: "${CEPH_S3_MEMSTORE_MB:=1024}"
REGION=us-east-1

usage() {
	echo "usage: sh $0 start STATE [FILE...] | stop STATE" >&2
	exit 2
}

now() {
	date +%s.%N
}
# since T0: seconds since T0, to 0.1 s.
since() {
	awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'
}

# ceph_cmd ARGS...: the ceph CLI against this cluster, bounded in time.
ceph_cmd() {
	timeout 30 ceph --conf "$CEPH_CONF" --connect-timeout 20 "$@"
}

# s3 ARGS...: curl with this user's SigV4 signature.
s3() {
	curl -sS --max-time 60 --aws-sigv4 "aws:amz:$REGION:s3" \
		--user "$ACCESS_KEY:$SECRET_KEY" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

write_conf() {
	cat >"$CEPH_CONF" <<EOF
# made by tests/servers/ceph-s3.sh; everything under $RIG_STATE
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MON_PORT
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind port min = $OSD_PORT_MIN
ms bind port max = $((OSD_PORT_MIN + 99))
ms mon client mode = crc
auth cluster required = none
auth service required = none
auth client required = none
run dir = $RIG_STATE/run
crash dir = $RIG_STATE/crash
admin socket = $RIG_STATE/run/\$name.asok
log file = $RIG_STATE/log/\$name.log
log to stderr = false
err to stderr = true
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon data avail crit = 0
mon data avail warn = 0
[mon]
mon data = $RIG_STATE/mon
mon cluster log file = $RIG_STATE/log/mon-cluster.log
[osd]
osd data = $RIG_STATE/osd
osd objectstore = memstore
memstore device bytes = $((CEPH_S3_MEMSTORE_MB * 1048576))
osd class load list = *
osd class default list = *
[client.rgw.test]
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw dns name = localhost
rgw data = $RIG_STATE/rgw
rgw thread pool size = 32
EOF
}

# fail STEP LOG: stop everything, show LOG's end, exit 1.
fail() {
	rig_say "$1 (logs in $RIG_STATE/log)"
	rig_tail "$2"
	rig_stop_all
	exit 1
}

# alive_or_fail NAME PID LOG: NAME (under PID) still runs.
alive_or_fail() {
	rig_alive "$2" || fail "$1 exited" "$3"
}

mon_up() {
	ceph_cmd mon stat | grep -q quorum
}
osd_up() {
	ceph_cmd osd stat | grep -q ' 1 up'
}
rgw_up() {
	curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$RGW_PORT/"
}
# NAME_or_gone PID: the daemon answers, or has ended.
mon_or_gone() { mon_up || ! rig_alive "$1"; }
osd_or_gone() { osd_up || ! rig_alive "$1"; }
rgw_or_gone() { rgw_up || ! rig_alive "$1"; }

start() {
	[ $# -ge 1 ] || usage
	RIG_STATE=$1
	shift
	for f in "$@"; do
		[ -f "$f" ] || rig_die "$f: no such file"
	done
	rig_need ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool curl python3 timeout openssl
	mkdir -p "$RIG_STATE" || rig_die "cannot make $RIG_STATE"
	RIG_STATE=$(cd "$RIG_STATE" && pwd)
	[ ! -s "$RIG_STATE/pids" ] || rig_all_gone || rig_die "$RIG_STATE is in use: stop it first"
	rm -rf "$RIG_STATE/env" "$RIG_STATE/mon" "$RIG_STATE/osd" "$RIG_STATE/rgw" "$RIG_STATE/run" "$RIG_STATE/log"
	mkdir -p "$RIG_STATE/mon" "$RIG_STATE/osd" "$RIG_STATE/rgw" "$RIG_STATE/run" \
		"$RIG_STATE/log" "$RIG_STATE/crash" || rig_die "cannot make $RIG_STATE's folders"
	: >"$RIG_STATE/pids"
	trap 'rig_stop_all; exit 1' HUP INT TERM
	CEPH_CONF=$RIG_STATE/ceph.conf
	export CEPH_CONF
	t0=$(now)

	FSID=$(cat /proc/sys/kernel/random/uuid)
	ports=$(rig_free_ports 2) || rig_die "no free port"
	MON_PORT=${ports% *} RGW_PORT=${ports#* }
	OSD_PORT_MIN=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 9900))
	write_conf

	# The monitor: a monmap naming it at its port, its store, the daemon.
	t=$(now)
	timeout 60 monmaptool --create --clobber --addv a "[v2:127.0.0.1:$MON_PORT]" --fsid "$FSID" \
		"$RIG_STATE/monmap" >"$RIG_STATE/log/mkfs.out" 2>&1 ||
		fail "monmaptool failed" "$RIG_STATE/log/mkfs.out"
	timeout 60 ceph-mon --conf "$CEPH_CONF" -i a --mkfs --monmap "$RIG_STATE/monmap" \
		--keyring /dev/null >>"$RIG_STATE/log/mkfs.out" 2>&1 ||
		fail "ceph-mon --mkfs failed" "$RIG_STATE/log/mkfs.out"
	rig_spawn ceph-mon "$RIG_STATE/log/mon.out" ceph-mon --conf "$CEPH_CONF" -i a -f
	mon=$RIG_PID
	rig_poll "$RIG_WAIT" mon_or_gone "$mon"
	alive_or_fail ceph-mon "$mon" "$RIG_STATE/log/mon.a.log"
	mon_up || fail "ceph-mon not in quorum after $RIG_WAIT s" "$RIG_STATE/log/mon.a.log"
	rig_say "monitor up in $(since "$t") s (port $MON_PORT)"

	# The OSD: an id from the monitor, a place in the CRUSH map, a
	# memstore, the daemon.
	t=$(now)
	id=$(ceph_cmd osd create 2>>"$RIG_STATE/log/mkfs.out") && [ "$id" = 0 ] ||
		fail "ceph osd create gave '$id'" "$RIG_STATE/log/mkfs.out"
	ceph_cmd osd crush add osd.0 1 root=default host=localhost >>"$RIG_STATE/log/mkfs.out" 2>&1 ||
		fail "ceph osd crush add failed" "$RIG_STATE/log/mkfs.out"
	timeout 60 ceph-osd --conf "$CEPH_CONF" -i 0 --mkfs >>"$RIG_STATE/log/mkfs.out" 2>&1 ||
		fail "ceph-osd --mkfs failed" "$RIG_STATE/log/mkfs.out"
	rig_spawn ceph-osd "$RIG_STATE/log/osd.out" ceph-osd --conf "$CEPH_CONF" -i 0 -f
	osd=$RIG_PID
	rig_poll "$RIG_WAIT" osd_or_gone "$osd"
	alive_or_fail ceph-osd "$osd" "$RIG_STATE/log/osd.0.log"
	osd_up || fail "the OSD not up after $RIG_WAIT s" "$RIG_STATE/log/osd.0.log"
	rig_say "OSD up in $(since "$t") s (memstore, ports $OSD_PORT_MIN-$((OSD_PORT_MIN + 99)))"

	# The gateway: it makes its pools itself on first start.
	t=$(now)
	rig_spawn radosgw "$RIG_STATE/log/rgw.out" radosgw --conf "$CEPH_CONF" -n client.rgw.test -f
	rgw=$RIG_PID
	rig_poll "$RIG_WAIT" rgw_or_gone "$rgw"
	alive_or_fail radosgw "$rgw" "$RIG_STATE/log/client.rgw.test.log"
	rgw_up || fail "radosgw not answering after $RIG_WAIT s" "$RIG_STATE/log/client.rgw.test.log"
	rig_say "radosgw up in $(since "$t") s (port $RGW_PORT)"
	for name in ceph-mon:$mon ceph-osd:$osd radosgw:$rgw; do
		rig_record_tree "${name%%:*}" "${name#*:}"
	done

	# The user, the bucket, the objects.
	t=$(now)
	ACCESS_KEY=$(openssl rand -hex 10 | tr a-f A-F)
	SECRET_KEY=$(openssl rand -hex 20)
	timeout 60 radosgw-admin --conf "$CEPH_CONF" user create --uid=moepack \
		--display-name="moepack tests" --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" \
		>"$RIG_STATE/log/user.out" 2>&1 ||
		fail "radosgw-admin user create failed" "$RIG_STATE/log/user.out"
	code=$(s3 -o "$RIG_STATE/log/bucket.out" -w '%{http_code}' -X PUT \
		"http://127.0.0.1:$RGW_PORT/$CEPH_S3_BUCKET" 2>>"$RIG_STATE/log/bucket.out")
	[ "$code" = 200 ] || fail "making bucket $CEPH_S3_BUCKET: HTTP $code" "$RIG_STATE/log/bucket.out"
	for f in "$@"; do
		key=$(basename "$f")
		code=$(s3 -o "$RIG_STATE/log/put.out" -w '%{http_code}' -T "$f" \
			"http://127.0.0.1:$RGW_PORT/$CEPH_S3_BUCKET/$key" 2>>"$RIG_STATE/log/put.out")
		[ "$code" = 200 ] || fail "uploading $key: HTTP $code" "$RIG_STATE/log/put.out"
		size=$(s3 -o /dev/null -w '%{size_download}' \
			"http://127.0.0.1:$RGW_PORT/$CEPH_S3_BUCKET/$key" 2>>"$RIG_STATE/log/put.out")
		[ "$size" = "$(wc -c <"$f" | tr -d ' ')" ] ||
			fail "$key reads back $size bytes, not $(wc -c <"$f")" "$RIG_STATE/log/put.out"
	done
	rig_say "user, bucket and $# object(s) in $(since "$t") s"

	cat >"$RIG_STATE/env" <<EOF
S3_STATE=$RIG_STATE
S3_ENDPOINT=http://127.0.0.1:$RGW_PORT
S3_PORT=$RGW_PORT
S3_VHOST=localhost
S3_REGION=$REGION
S3_BUCKET=$CEPH_S3_BUCKET
S3_ACCESS_KEY=$ACCESS_KEY
S3_SECRET_KEY=$SECRET_KEY
AWS_ENDPOINT_URL=http://127.0.0.1:$RGW_PORT
AWS_REGION=$REGION
AWS_ACCESS_KEY_ID=$ACCESS_KEY
AWS_SECRET_ACCESS_KEY=$SECRET_KEY
CEPH_CONF=$CEPH_CONF
EOF
	trap - HUP INT TERM
	rig_say "started in $(since "$t0") s"
	echo "$RIG_STATE/env"
}

rig_main "$@"
