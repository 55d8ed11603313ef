# tests/nfs_lib.sh - a private nfs-ganesha on 127.0.0.1 exporting one
# moepackfs mount over NFSv4, for tests/nfs-load.test and `make bench`.
#
# Source it, set the variables below, then:
#
#   ganesha_missing          prints why ganesha cannot run here (nothing if
#                            it can): programs, the VFS FSAL
#   ganesha_start            ganesha in the background on a free port with
#                            its own configuration, log, pid file and
#                            recovery directory; returns once it serves.
#                            Sets GANESHA_PORT and GANESHA_PID.
#   ganesha_stop             SIGTERM (then SIGKILL) and wait
#   ganesha_url PATH         nfs:// URL of PATH inside the export
#
#   NFS_DIR                  a private directory for ganesha's files
#   NFS_EXPORT_DIR           the mount point to export (mount it first:
#                            ganesha started before the mount exports the
#                            empty directory underneath)
#   NFS_PSEUDO               the export's NFSv4 path (default /pack)
#   NFS_EXAMPLE              the configuration whose EXPORT block is used
#                            (contrib/nfs-ganesha.conf, so what runs here
#                            is what the project ships)
#
# Safe under `set -eu`.  Only 127.0.0.1 is ever addressed.  ganesha is told to skip its grace
# period (libnfs clients leave records in the recovery directory, and the
# next start would wait them out).  One ganesha at a time: `make check`
# orders tests/nfs-load.test after tests/nfs.test, and by hand run either
# under `flock /tmp/moepack-nfs.lock`.  Needs $top_srcdir: ports and
# processes are watched with the test servers' tests/servers/rig.sh.

. "$top_srcdir/tests/servers/rig.sh"

: "${NFS_PSEUDO:=/pack}"
# how long to wait for ganesha to serve, or to exit (seconds; tests/lib.sh
# sets it for a loaded machine)
: "${TEST_WAIT:=60}"
GANESHA_PID=
GANESHA_PORT=

ganesha_missing() {
	for _nl_prog in ganesha.nfsd nfs-cat nfs-ls python3 timeout; do
		command -v "$_nl_prog" >/dev/null 2>&1 || {
			echo "$_nl_prog is not installed (Debian: nfs-ganesha nfs-ganesha-vfs libnfs-utils)"
			return
		}
	done
	_nl_fsal=
	for _nl_dir in /usr/lib/*/ganesha /usr/lib64/ganesha /usr/lib/ganesha /usr/local/lib*/ganesha
	do
		[ -e "$_nl_dir/libfsalvfs.so" ] && _nl_fsal=$_nl_dir
	done
	[ -n "$_nl_fsal" ] ||
		echo "nfs-ganesha's VFS FSAL (libfsalvfs.so) is not installed (Debian: nfs-ganesha-vfs)"
}

_nl_write_conf() {
	cat >"$NFS_DIR/ganesha.conf" <<_NL_EOF
NFS_CORE_PARAM {
	Bind_Addr = 127.0.0.1;
	NFS_Port = $GANESHA_PORT;
	Protocols = 4;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}
NFSv4 {
	Graceless = true;
	RecoveryBackend = fs;
	RecoveryRoot = $NFS_DIR/recovery;
	Only_Numeric_Owners = true;
}
EXPORT_DEFAULTS { SecType = sys; Squash = No_Root_Squash; }
LOG { Default_Log_Level = EVENT; }
NFS_KRB5 { Active_krb5 = false; }
_NL_EOF
	# The shipped EXPORT block, with this mount point and pseudo path.
	awk -v path="$NFS_EXPORT_DIR" -v pseudo="$NFS_PSEUDO" '
		/^EXPORT[ \t]*\{/ { inside = 1 }
		!inside { next }
		/^[ \t]*Path[ \t]*=/ { print "\tPath = " path ";"; next }
		/^[ \t]*Pseudo[ \t]*=/ { print "\tPseudo = " pseudo ";"; next }
		{ print }
		/^\}/ { exit }' "$NFS_EXAMPLE" >>"$NFS_DIR/ganesha.conf"
	grep -q "Path = $NFS_EXPORT_DIR;" "$NFS_DIR/ganesha.conf"
}

ganesha_start() {
	for _nl_attempt in 1 2 3; do
		GANESHA_PORT=$(rig_free_ports 1) || return 1
		rm -rf "$NFS_DIR/recovery" && mkdir -p "$NFS_DIR/recovery" || return 1
		_nl_write_conf || return 1
		rm -f "$NFS_DIR/ganesha.pid"
		: >"$NFS_DIR/ganesha.log"
		ganesha.nfsd -F -f "$NFS_DIR/ganesha.conf" -L "$NFS_DIR/ganesha.log" \
			-p "$NFS_DIR/ganesha.pid" >>"$NFS_DIR/ganesha.out" 2>&1 &
		GANESHA_PID=$!
		_nl_n=0
		while rig_alive "$GANESHA_PID" && [ "$_nl_n" -lt $((TEST_WAIT * 10)) ]; do
			rig_listening "$GANESHA_PORT" &&
				grep -q "NFS SERVER INITIALIZED" "$NFS_DIR/ganesha.log" && return 0
			sleep 0.1
			_nl_n=$((_nl_n + 1))
		done
		ganesha_stop
	done
	return 1
}

ganesha_stop() {
	_nl_pid=$(cat "$NFS_DIR/ganesha.pid" 2>/dev/null)
	[ -n "$_nl_pid" ] || _nl_pid=$GANESHA_PID
	rig_alive "$_nl_pid" || return 0
	for _nl_sig in TERM KILL; do
		kill -"$_nl_sig" "$_nl_pid" 2>/dev/null || :
		_nl_n=0
		while rig_alive "$_nl_pid" && [ "$_nl_n" -lt $((TEST_WAIT * 10)) ]; do
			sleep 0.1
			_nl_n=$((_nl_n + 1))
		done
		rig_alive "$_nl_pid" || break
	done
	wait "$_nl_pid" 2>/dev/null || :
	! rig_alive "$_nl_pid"
}

ganesha_url() {
	printf 'nfs://127.0.0.1%s%s?version=4&nfsport=%s' "$NFS_PSEUDO" "$1" "$GANESHA_PORT"
}
