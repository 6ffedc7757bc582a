#!/usr/bin/env python3
"""What reading TLS plaintext costs a server (issue 33, docs/BENCHMARKS.md "TLS plaintext").
Root; Debian's python3 and the openssl command.

  sudo /usr/bin/python3 bench/tls_cost.py --build build [--rate 1000] [--seconds 8] [--connections 8]
                                          [--mode asyncio|threaded] [--events 2]

A Python HTTPS server on the system libssl (tests/testprogs/tls_server.py: asyncio's memory
BIOs by default) takes an open-loop load of --rate requests/s over --connections keep-alive
TLS connections: GET /stream, a chunked SSE response of --events `data:` events written one
by one without pause and `data: [DONE]`. The same load runs untraced, then under `causeway
trace --pid SERVER` (its socket hook plus the SSL_read/SSL_write uprobes on the server's
libssl); the client measures each request itself (send -> the end of the response). Reported:
p50/p99 of both runs and the traced/untraced ratio of the p50; the traced run checks that the
DB holds every request, each with tls = 1.
"""
import argparse
import functools
import json
import os
import signal
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import request_cost  # noqa: E402  (its open-loop load, run with tls_worker)


def run_load(port, rate, seconds, connections, events):
    worker = functools.partial(request_cost.client_worker, wrap=tls_wrap,
                               request=functools.partial(stream_request, events=events))
    return request_cost.run_load(port, rate, seconds, connections, worker=worker)


def tls_wrap(sock):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the bench's own throwaway certificate
    return ctx.wrap_socket(sock)


def stream_request(wid, i, events=2):
    return ("GET /stream?events=%d&delay_ms=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: w%d-%d\r\n\r\n"
            % (events, wid, i)).encode()


def wait_file(path, proc, what):
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(what + " did not get ready")
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--events", type=int, default=2)
    ap.add_argument("--mode", choices=["asyncio", "threaded"], default="asyncio")
    ap.add_argument("--port", type=int, default=18441)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("tls_cost: needs root (BPF)", file=sys.stderr)
        return 2
    causeway = os.path.join(a.build, "causeway")
    if not os.access(causeway, os.X_OK):
        print("tls_cost: %s is missing (ninja -C %s causeway)" % (causeway, a.build), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cw-tlscost-") as tmp:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        ready = os.path.join(tmp, "server.ready")
        server = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "tests", "testprogs", "tls_server.py"),
                                   "--mode", a.mode, "--plain-port", str(a.port + 1), "--tls-port", str(a.port),
                                   "--cert", cert, "--key", key, "--ready-file", ready])
        try:
            wait_file(ready, server, "the server")
            run_load(a.port, a.rate, 1, a.connections, a.events)  # warm-up: imports, first connections
            bare = run_load(a.port, a.rate, a.seconds, a.connections, a.events)
            db = os.path.join(tmp, "trace.db")
            log = open(os.path.join(tmp, "trace.log"), "w")
            tracer = subprocess.Popen([causeway, "trace", "--db", db, "--quiet", "--ready-file", os.path.join(tmp, "t.ready"),
                                       "--no-stack", "--http-port", str(a.port), "--pid", str(server.pid)],
                                      stdout=log, stderr=log)
            wait_file(os.path.join(tmp, "t.ready"), tracer, "causeway trace")
            try:
                traced = run_load(a.port, a.rate, a.seconds, a.connections, a.events)
                time.sleep(0.3)
            finally:
                tracer.send_signal(signal.SIGINT)
                tracer.wait(timeout=60)
            con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
            stored, tls_rows = con.execute("SELECT count(*), coalesce(sum(tls), 0) FROM requests WHERE server_pid = ?",
                                           (server.pid,)).fetchone()
            links = con.execute("SELECT value FROM collector_stats WHERE name = 'http_tls_links'").fetchone()
            con.close()
            if stored != traced["requests"] or tls_rows != stored:
                raise RuntimeError("the DB holds %d requests (%d with tls = 1), the client sent %d"
                                   % (stored, tls_rows, traced["requests"]))
        finally:
            server.terminate()
            server.wait()
    out = {"mode": a.mode, "rate": a.rate, "seconds": a.seconds, "connections": a.connections, "events": a.events,
           "bare": bare, "traced": traced, "p50_ratio": traced["p50_ms"] / bare["p50_ms"],
           "tls_links": links[0] if links else None}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
