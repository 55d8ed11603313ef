#!/bin/sh
# tests/servers/nginx.sh - Debian's nginx serving a pack folder, for tests.
#
#   sh tests/servers/nginx.sh start STATE DIR
#   sh tests/servers/nginx.sh stop STATE
#
# start: one nginx (a master and one worker, its own prefix, pid file and
# logs, all under STATE, which it makes) serving DIR read-only through
# contrib/nginx-mirror.conf, the mirror snippet we ship, on three ports of
# 127.0.0.1 the kernel hands out:
#
#   NGINX_HTTP_PORT    plain HTTP/1.1
#   NGINX_HTTPS_PORT   HTTPS with HTTP/2 (ALPN h2, and HTTP/1.1), with a
#                      certificate for 127.0.0.1 and localhost
#   NGINX_WRONG_PORT   HTTPS with HTTP/2, a certificate for wrong.invalid:
#                      a client that checks names must refuse it
#
# Both certificates are signed by a test CA made here with openssl
# (STATE/ca.pem, NGINX_CA; its key is thrown away once they are signed).
# The variables (and NGINX_HTTP_URL, NGINX_HTTPS_URL, NGINX_WRONG_URL,
# NGINX_ROOT, NGINX_STATE) go to STATE/env, a file a test sources; start
# prints its path, and returns once all three ports answer.  On any
# failure it stops what it started, shows the error log's end and exits
# non-zero (2 when nginx or openssl is not installed).
#
# stop: TERM to nginx, KILL whatever still runs after RIG_WAIT seconds;
# exits 1 if something had to be killed.  STATE and its logs are kept.
#
# NGINX_PORTS="HTTP HTTPS WRONG" starts it on those ports instead: a test
# that stopped it starts it again where its clients look for it.
#
# nginx runs with `daemon off` under `timeout` (RIG_LIFETIME, default
# 3600 s; see rig.sh), so it never outlives a test by more than that.
# As root, its worker runs as root too: the test directories are private
# to their owner, and nobody (nginx's default user) could not read them.
set -u
PATH=$PATH:/usr/sbin:/sbin
# shellcheck disable=SC2034 # rig.sh names the script by it
RIG_NAME=nginx.sh
here=$(cd "$(dirname "$0")" && pwd)
. "$here/rig.sh"
SNIPPET=$here/../../contrib/nginx-mirror.conf

usage() {
	echo "usage: sh $0 start STATE DIR | stop STATE" >&2
	exit 2
}

# make_certs: the test CA, and the two server certificates it signs.
make_certs() {
	(
		set -e
		cd "$RIG_STATE/tls"
		openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout ca.key -out ca.pem -days 2 -subj "/CN=moepackfs test CA" \
			-addext basicConstraints=critical,CA:TRUE \
			-addext keyUsage=critical,keyCertSign,cRLSign
		for name in server wrong; do
			case $name in
			server) cn=localhost san="IP:127.0.0.1,DNS:localhost" ;;
			wrong) cn=wrong.invalid san="DNS:wrong.invalid" ;;
			esac
			openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
				-keyout "$name.key" -out "$name.csr" -subj "/CN=$cn"
			printf '%s\n' "subjectAltName=$san" "basicConstraints=CA:FALSE" \
				"keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >"$name.ext"
			openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
				-days 2 -out "$name.pem" -extfile "$name.ext"
		done
		rm -f ca.key ./*.csr ./*.ext ca.srl
	) >"$RIG_STATE/openssl.log" 2>&1
}

write_conf() {
	if [ "$(id -u)" -eq 0 ]; then
		user="user root root;"
	else
		user="# not root: workers run as $(id -un)"
	fi
	cat >"$RIG_STATE/nginx.conf" <<EOF
# made by tests/servers/nginx.sh; everything under $RIG_STATE
daemon off;
master_process on;
worker_processes 1;
$user
pid $RIG_STATE/nginx.pid;
error_log $RIG_STATE/error.log info;
events { worker_connections 512; }
http {
	access_log $RIG_STATE/access.log;
	client_body_temp_path $RIG_STATE/tmp/body;
	proxy_temp_path $RIG_STATE/tmp/proxy;
	fastcgi_temp_path $RIG_STATE/tmp/fastcgi;
	uwsgi_temp_path $RIG_STATE/tmp/uwsgi;
	scgi_temp_path $RIG_STATE/tmp/scgi;
	ssl_protocols TLSv1.2 TLSv1.3;
	server {
		listen 127.0.0.1:$http_port;
		location / {
			root $PACK_DIR;
			include $SNIPPET;
		}
	}
	server {
		listen 127.0.0.1:$https_port ssl http2;
		ssl_certificate $RIG_STATE/tls/server.pem;
		ssl_certificate_key $RIG_STATE/tls/server.key;
		location / {
			root $PACK_DIR;
			include $SNIPPET;
		}
	}
	server {
		listen 127.0.0.1:$wrong_port ssl http2;
		ssl_certificate $RIG_STATE/tls/wrong.pem;
		ssl_certificate_key $RIG_STATE/tls/wrong.key;
		location / {
			root $PACK_DIR;
			include $SNIPPET;
		}
	}
}
EOF
}

# up: nginx answers on all three ports.
up() {
	for _p in "$http_port" "$https_port" "$wrong_port"; do
		rig_listening "$_p" || return 1
	done
	curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$http_port/"
}

# up_or_gone PID: nginx answers, or PID (its timeout) has ended.
up_or_gone() {
	up || ! rig_alive "$1"
}

start() {
	[ $# -eq 2 ] || usage
	RIG_STATE=$1 PACK_DIR=$(cd "$2" 2>/dev/null && pwd) ||
		rig_die "$2: no such directory"
	rig_need nginx openssl curl python3 timeout
	[ -f "$SNIPPET" ] || rig_die "$SNIPPET is missing"
	mkdir -p "$RIG_STATE/tls" "$RIG_STATE/tmp" || rig_die "cannot make $RIG_STATE"
	[ ! -s "$RIG_STATE/pids" ] || rig_all_gone ||
		rig_die "$RIG_STATE is in use: stop it first"
	: >"$RIG_STATE/pids"
	trap 'rig_stop_all; exit 1' HUP INT TERM
	make_certs || {
		rig_tail "$RIG_STATE/openssl.log"
		rig_die "could not make the test certificates"
	}
	# A port the kernel handed out may be taken before nginx binds it:
	# then nginx exits at once, and another three are tried.
	for _ in 1 2 3; do
		ports=${NGINX_PORTS:-$(rig_free_ports 3)} || rig_die "no free port"
		set -- $ports
		http_port=$1 https_port=$2 wrong_port=$3
		write_conf
		nginx -t -q -p "$RIG_STATE" -e "$RIG_STATE/error.log" -c "$RIG_STATE/nginx.conf" \
			>"$RIG_STATE/nginx-t.log" 2>&1 || {
			rig_tail "$RIG_STATE/nginx-t.log"
			rig_die "nginx refuses $RIG_STATE/nginx.conf"
		}
		: >"$RIG_STATE/pids"
		rm -f "$RIG_STATE/nginx.pid"
		rig_spawn nginx "$RIG_STATE/nginx.out" \
			nginx -p "$RIG_STATE" -e "$RIG_STATE/error.log" -c "$RIG_STATE/nginx.conf"
		pid=$RIG_PID
		rig_poll "$RIG_WAIT" up_or_gone "$pid"
		if rig_alive "$pid" && up; then
			rig_record_tree nginx "$pid"
			cat >"$RIG_STATE/env" <<EOF
NGINX_STATE=$RIG_STATE
NGINX_ROOT=$PACK_DIR
NGINX_CA=$RIG_STATE/tls/ca.pem
NGINX_HTTP_PORT=$http_port
NGINX_HTTPS_PORT=$https_port
NGINX_WRONG_PORT=$wrong_port
NGINX_HTTP_URL=http://127.0.0.1:$http_port
NGINX_HTTPS_URL=https://127.0.0.1:$https_port
NGINX_WRONG_URL=https://127.0.0.1:$wrong_port
EOF
			trap - HUP INT TERM
			echo "$RIG_STATE/env"
			return 0
		fi
		rig_stop_all
		grep -q 'Address already in use' "$RIG_STATE/error.log" 2>/dev/null || break
	done
	rig_tail "$RIG_STATE/error.log"
	rig_tail "$RIG_STATE/nginx.out"
	rig_die "nginx did not start (logs in $RIG_STATE)"
}

rig_main "$@"
