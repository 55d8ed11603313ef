#!/usr/bin/env python3
"""fetch_proxy.py - a tiny forward HTTP proxy for tests/fetch-servers.test
and tests/remote.test.

    python3 fetch_proxy.py PORTFILE LOGFILE

Listens on a port of 127.0.0.1 the kernel hands out (written to PORTFILE
once listening), forwards GET and HEAD requests with an absolute URL
(what a client sends through http_proxy) and tunnels CONNECT (what it
sends through HTTPS_PROXY), to 127.0.0.1 only.  Each request is logged
to LOGFILE as one line: the method, the URL or host:port, and for GET or
HEAD the value of x-amz-content-sha256 ("-" when there is none).
"""
import http.client
import http.server
import select
import socket
import socketserver
import sys
import urllib.parse

PORTFILE, LOGFILE = sys.argv[1], sys.argv[2]


def log(line):
    with open(LOGFILE, "a") as f:
        f.write(line + "\n")


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self, method):
        u = urllib.parse.urlsplit(self.path)
        log("%s %s %s" % (method, self.path, self.headers.get("x-amz-content-sha256", "-")))
        if u.scheme != "http" or u.hostname not in ("127.0.0.1", "localhost") and \
                not (u.hostname or "").endswith(".localhost"):
            self.send_error(403, "this proxy reaches 127.0.0.1 only")
            return
        c = http.client.HTTPConnection("127.0.0.1", u.port or 80, timeout=60)
        path = u.path + ("?" + u.query if u.query else "")
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("proxy-connection", "connection")}
        c.request(method, path, headers=headers)
        r = c.getresponse()
        self.send_response(r.status, r.reason)
        for k, v in r.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "keep-alive"):
                self.send_header(k, v)
        body = r.read() if method != "HEAD" else b""
        if method != "HEAD" and r.getheader("content-length") is None:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        c.close()

    def do_GET(self):
        self.forward("GET")

    def do_HEAD(self):
        self.forward("HEAD")

    def do_CONNECT(self):
        log("CONNECT %s" % self.path)
        host, _, port = self.path.rpartition(":")
        if host not in ("127.0.0.1", "localhost"):
            self.send_error(403, "this proxy reaches 127.0.0.1 only")
            return
        up = socket.create_connection(("127.0.0.1", int(port)), timeout=60)
        self.send_response(200, "Connection established")
        self.end_headers()
        socks = [self.connection, up]
        while True:
            r, _, _ = select.select(socks, [], [], 60)
            if not r:
                break
            for s in r:
                data = s.recv(65536)
                if not data:
                    up.close()
                    self.close_connection = True
                    return
                (up if s is self.connection else self.connection).sendall(data)
        up.close()
        self.close_connection = True


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Proxy)
with open(PORTFILE + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
import os
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
