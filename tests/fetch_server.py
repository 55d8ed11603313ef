#!/usr/bin/env python3
"""fetch_server.py - python3's http.server with single byte ranges (206),
for tests/fetch.test: serves DIR on 127.0.0.1, a free port, written to
PORTFILE once listening.  Usage: fetch_server.py DIR PORTFILE"""
import http.server
import os
import re
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send_head(self):
        rng = self.headers.get("Range")
        path = self.translate_path(self.path)
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", rng or "")
        if not m or not os.path.isfile(path):
            return super().send_head()
        size = os.path.getsize(path)
        a, b = int(m.group(1)), min(int(m.group(2)), size - 1)
        if a > b:
            self.send_error(416)
            return None
        f = open(path, "rb")
        f.seek(a)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, size))
        self.send_header("Content-Length", str(b - a + 1))
        self.end_headers()
        self.range_left = b - a + 1
        return f

    def copyfile(self, source, outputfile):
        left = getattr(self, "range_left", None)
        if left is None:
            return super().copyfile(source, outputfile)
        while left > 0:
            buf = source.read(min(left, 65536))
            if not buf:
                break
            outputfile.write(buf)
            left -= len(buf)


def main():
    directory, portfile = sys.argv[1], sys.argv[2]
    handler = lambda *a, **k: Handler(*a, directory=directory, **k)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


main()
