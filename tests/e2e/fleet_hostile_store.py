#!/usr/bin/env python3
"""A hostile fleet store for tests/e2e/test_fleet_hostile.cpp (docs/SECURITY.md "A hostile
fleet store"): it speaks enough of ClickHouse's HTTP interface for a causeway client to get to
the answer under test, then answers it the hostile way.

Usage: fleet_hostile_store.py MODE PORT_FILE LOG_FILE [--scope all|selects] [--every SECONDS]
                              [--schema-version N]

  huge      200, Content-Length 2 GB, rows of a plausible TabSeparatedWithNamesAndTypes answer,
            streamed (never held): only a byte limit stops a client
  headers   200, then header lines without end (8 KB each, 2 GB in all): no body ever comes
  trickle   200, then one byte of a plausible answer every --every seconds (default 20)
  random    200 with 4 KiB of random bytes
  columns   200 with a well-formed answer of three columns (none of causeway's asks three)
  types     200 with two String columns ("abc", "def"): the kinds asked are numbers
  values    200 whose header claims Int64 and String but whose values are not numbers
  html      200 text/html, a web server's welcome page
  empty     200 with an empty body to a SELECT

--scope selects (default): statements (DDL, INSERT) get ClickHouse's empty 200 and the schema
version query a good answer, so `ship` reaches its watermark reads before the hostile answer;
--scope all: every request gets it. The port is written to PORT_FILE once listening; LOG_FILE
gets one line per request: its kind (SELECT, INSERT, OTHER) and the statement's start.
"""
import http.server
import os
import socketserver
import sys
import threading
import time
import urllib.parse

mode, port_file, log_file = sys.argv[1], sys.argv[2], sys.argv[3]
scope = "selects"
every = 20.0
schema_version = 3  # the test passes the client's own (fleet/fleet_schema.h kFleetSchemaVersion)
args = sys.argv[4:]
while args:
    if args[0] == "--scope":
        scope = args[1]
    elif args[0] == "--every":
        every = float(args[1])
    elif args[0] == "--schema-version":
        schema_version = int(args[1])
    args = args[2:]
log_lock = threading.Lock()


def log(kind, text):
    with log_lock, open(log_file, "a") as f:
        f.write(kind + "\t" + text[:120].replace("\n", " ") + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_plain(self, status, body, ctype="text/tab-separated-values; charset=UTF-8"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n) if n else b""
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query).get("query", [""])[0]
        text = (q + " " + body.decode("utf-8", "replace")).strip()
        kind = "SELECT" if text.upper().startswith("SELECT") else "INSERT" if text.upper().startswith("INSERT") else "OTHER"
        log(kind, text)
        if scope == "selects":
            if kind != "SELECT":
                return self.send_plain(200, b"")
            if "schema_version" in text:
                return self.send_plain(200, b"max(version)\nUInt32\n%d\n" % schema_version)
        try:
            self.hostile()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def hostile(self):
        if mode == "huge":
            total = 2 * 1000 * 1000 * 1000
            head = b"a\tb\nInt64\tString\n"
            row = b"1\tx\n" * 16384
            self.send_response(200)
            self.send_header("Content-Length", str(total))
            self.end_headers()
            self.wfile.write(head)
            sent = len(head)
            while sent < total:
                chunk = row[: total - sent]
                self.wfile.write(chunk)
                sent += len(chunk)
        elif mode == "headers":
            self.send_response(200)
            self.flush_headers()
            lines = (b"X-Pad: " + b"a" * 8000 + b"\r\n") * 8
            sent = 0
            while sent < 2 * 1000 * 1000 * 1000:
                self.wfile.write(lines)
                sent += len(lines)
        elif mode == "trickle":
            payload = b"a\tb\nInt64\tString\n" + b"1\tx\n" * 64
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.flush()
            for i in range(len(payload)):
                time.sleep(every)
                self.wfile.write(payload[i:i + 1])
                self.wfile.flush()
        elif mode == "random":
            self.send_plain(200, os.urandom(4096))
        elif mode == "columns":
            self.send_plain(200, b"a\tb\tc\nInt64\tInt64\tInt64\n1\t2\t3\n")
        elif mode == "types":
            self.send_plain(200, b"a\tb\nString\tString\nabc\tdef\n")
        elif mode == "values":
            self.send_plain(200, b"a\tb\nInt64\tString\nzz9\tq\n")
        elif mode == "html":
            self.send_plain(200, b"<!DOCTYPE html>\n<html><body><h1>Welcome to nginx!</h1></body></html>\n", "text/html")
        elif mode == "empty":
            self.send_plain(200, b"")
        else:
            self.send_plain(500, b"unknown mode\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
