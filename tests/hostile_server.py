#!/usr/bin/env python3
"""hostile_server.py - a TEST-ONLY mirror for tests/fetch-faults.test.

Usage: hostile_server.py DIR PORTFILE LOG [options]

Serves DIR on 127.0.0.1, on a free port written to PORTFILE once it
listens, with single byte ranges (206) done right.  The first component of
a URL's path is the mirror's MODE, the rest names the file in DIR:
http://127.0.0.1:PORT/MODE/a.pack is a.pack as mirror MODE plays it, so
that one server plays several mirrors.  MODE "good" (or any name not below)
behaves.  The misbehaving modes:

  flip        one byte of the pack changed (at --flip-offset) in every body
  drop        a ranged GET of the pack: headers for the whole range, half
              the body, then the connection reset (RST)
  short       a ranged GET: headers for the whole range (Content-Length
              and Content-Range), half the body, then a clean close
  shortcl     a ranged GET: Content-Range for the whole range, an honest
              Content-Length of half of it and that half
  stall       a ranged GET: headers and 100 bytes, then nothing (the
              connection is held until the client goes or the server ends)
  badrange    a ranged GET: 206 with the bytes and Content-Range of another
              range of the same length
  full200     a ranged GET: 200 with the whole file
  loop        a ranged GET: 302 to the same file again, for ever
  busy503     the first --busy-count requests (any) of this mode: 503 with
              Retry-After: --retry-after; then good
  busy429     the same with 429, but counting only the ranged GETs of the
              pack after the head's (a Range not from byte 0)
  busyever    every ranged GET: 503 with Retry-After: 0
  othermanifest  PACK.manifest.json with one more key
  badsig      PACK.sig with one byte changed
  alt         files found in --alt DIR served from there (a statement and
              signature by another key, say), the rest from DIR

LOG gets one line per request: "TIME MODE METHOD PATH RANGE STATUS", TIME
the server's monotonic clock in seconds, so that a test can measure the
gaps between requests by the server's own clock.  The server exits by
itself after --lifetime seconds (a bound: the test kills it by its PID).
"""
import argparse
import http.server
import json
import os
import re
import socket
import struct
import sys
import threading
import time

ARGS = None
COUNTS = {}
CACHE = {}   # (mode, path): the bytes as that mode serves them
LOCK = threading.Lock()
STOP = threading.Event()


def log(mode, method, path, rng, status):
    with LOCK:
        with open(ARGS.log, "a") as f:
            f.write("%.6f %s %s %s %s %s\n" % (time.monotonic(), mode, method, path,
                                               rng or "-", status))


def count(mode):
    with LOCK:
        COUNTS[mode] = COUNTS.get(mode, 0) + 1
        return COUNTS[mode]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def split(self):
        path = self.path.split("?", 1)[0]
        parts = path.lstrip("/").split("/", 1)
        if len(parts) < 2 or ".." in parts[1].split("/"):
            return None, None
        return parts[0], parts[1]

    def local(self, mode, name):
        if mode == "alt" and ARGS.alt and os.path.isfile(os.path.join(ARGS.alt, name)):
            return os.path.join(ARGS.alt, name)
        return os.path.join(ARGS.dir, name)

    def content(self, mode, name, path):
        with LOCK:
            if (mode, path) in CACHE:
                return CACHE[(mode, path)]
        with open(path, "rb") as f:
            data = f.read()
        if mode == "othermanifest" and name.endswith(".manifest.json"):
            d = json.loads(data)
            d["mirror"] = "another"
            data = (json.dumps(d, indent=2) + "\n").encode()
        elif mode == "badsig" and name.endswith(".sig"):
            data = bytes([data[0] ^ 1]) + data[1:]
        elif mode == "flip" and name.endswith(".pack") and len(data) > ARGS.flip_offset:
            o = ARGS.flip_offset
            data = data[:o] + bytes([data[o] ^ 1]) + data[o + 1:]
        with LOCK:
            CACHE[(mode, path)] = data
        return data

    def reply(self, status, headers, body=b"", send_body=True):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if send_body and body:
            self.wfile.write(body)

    def do_HEAD(self):
        self.serve(False)

    def do_GET(self):
        self.serve(True)

    def serve(self, get):
        mode, name = self.split()
        rng = self.headers.get("Range")
        method = "GET" if get else "HEAD"
        if mode is None:
            log("-", method, self.path, rng, 404)
            return self.reply(404, [("Content-Length", "0")])
        engine = re.fullmatch(r"bytes=([1-9]\d*)-\d+", rng or "") and get
        n = count(mode + ("/engine" if engine and mode == "busy429" else ""))
        # busy503: any request; busy429: the ranged GETs after the head's
        if ((mode == "busy503" or (mode == "busy429" and engine)) and
                n <= ARGS.busy_count):
            code = 503 if mode == "busy503" else 429
            log(mode, method, self.path, rng, code)
            return self.reply(code, [("Retry-After", str(ARGS.retry_after)),
                                     ("Content-Length", "0")])
        path = self.local(mode, name)
        if not os.path.isfile(path):
            log(mode, method, self.path, rng, 404)
            return self.reply(404, [("Content-Length", "0")])
        data = self.content(mode, name, path)
        size = len(data)
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", rng or "")
        if not m or not get:
            log(mode, method, self.path, rng, 200)
            return self.reply(200, [("Content-Type", "application/octet-stream"),
                                    ("Content-Length", str(size))], data, get)
        a, b = int(m.group(1)), min(int(m.group(2)), size - 1)
        if a > b:
            log(mode, method, self.path, rng, 416)
            return self.reply(416, [("Content-Range", "bytes */%d" % size),
                                    ("Content-Length", "0")])
        body = data[a:b + 1]
        whole = [("Content-Type", "application/octet-stream"),
                 ("Content-Range", "bytes %d-%d/%d" % (a, b, size)),
                 ("Content-Length", str(len(body)))]
        if mode == "busyever":
            log(mode, method, self.path, rng, 503)
            return self.reply(503, [("Retry-After", "0"), ("Content-Length", "0")])
        if mode == "loop":
            log(mode, method, self.path, rng, 302)
            return self.reply(302, [("Location", "/loop/%s?n=%d" % (name, n)),
                                    ("Content-Length", "0")])
        if mode == "full200":
            log(mode, method, self.path, rng, 200)
            return self.reply(200, [("Content-Type", "application/octet-stream"),
                                    ("Content-Length", str(size))], data)
        if mode == "badrange":
            a2 = a + len(body) if b + len(body) < size else a - len(body)
            a2 = max(a2, 0)
            other = data[a2:a2 + len(body)]
            log(mode, method, self.path, rng, 206)
            return self.reply(206, [("Content-Type", "application/octet-stream"),
                                    ("Content-Range", "bytes %d-%d/%d" %
                                     (a2, a2 + len(other) - 1, size)),
                                    ("Content-Length", str(len(other)))], other)
        if mode in ("drop", "short"):
            log(mode, method, self.path, rng, 206)
            self.reply(206, whole)
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            if mode == "drop":
                # a close with SO_LINGER 0 resets the connection
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.connection.close()
            else:
                self.connection.shutdown(socket.SHUT_WR)
            self.close_connection = True
            return None
        if mode == "shortcl":
            half = body[:len(body) // 2]
            log(mode, method, self.path, rng, 206)
            return self.reply(206, [("Content-Type", "application/octet-stream"),
                                    ("Content-Range", "bytes %d-%d/%d" % (a, b, size)),
                                    ("Content-Length", str(len(half)))], half)
        if mode == "stall":
            log(mode, method, self.path, rng, 206)
            self.reply(206, whole)
            self.wfile.write(body[:100])
            self.wfile.flush()
            self.connection.settimeout(0.2)
            while not STOP.is_set():
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        break   # the client went
                except socket.timeout:
                    continue
                except OSError:
                    break
            self.close_connection = True
            return None
        log(mode, method, self.path, rng, 206)
        return self.reply(206, whole, body)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("portfile")
    p.add_argument("log")
    p.add_argument("--flip-offset", type=int, default=5000000)
    p.add_argument("--busy-count", type=int, default=2)
    p.add_argument("--retry-after", type=int, default=2)
    p.add_argument("--alt")
    p.add_argument("--lifetime", type=float, default=900)
    ARGS = p.parse_args()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.handle_error = lambda *a: None   # a client that went is no news
    with open(ARGS.portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(ARGS.portfile + ".tmp", ARGS.portfile)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    STOP.wait(ARGS.lifetime)
    STOP.set()
    srv.shutdown()
    sys.exit(0)


main()
