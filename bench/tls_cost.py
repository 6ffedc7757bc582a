#!/usr/bin/env python3
"""What reading TLS plaintext costs a server (issue 33, docs/BENCHMARKS.md "TLS plaintext").
Root; Debian's python3 and the openssl command.

  sudo /usr/bin/python3 bench/tls_cost.py --build build [--rate 1000] [--seconds 8] [--connections 8]
                                          [--mode asyncio|threaded] [--events 2] [--rounds 1]
                                          [--causeway LABEL=PATH]... [--server-cpus L --load-cpus L
                                          --tracer-cpus L]

A Python HTTPS server on the system libssl (tests/testprogs/tls_server.py: asyncio's memory
BIOs by default) takes an open-loop load of --rate requests/s over --connections keep-alive
TLS connections: GET /stream, a chunked SSE response of --events `data:` events written one
by one without pause and `data: [DONE]`. Each round runs the same load untraced and under
`causeway trace --pid SERVER --http-port PORT` (its socket hook plus the SSL uprobes on the
server's libssl) once per --causeway given (default: BUILD/causeway; two compare a before and
an after binary in the same run), the order rotating per round (untraced first, then second,
...), so a drift of the host's load falls on every kind alike; the client measures each
request itself (send -> the end of the response). --server-cpus, --load-cpus and
--tracer-cpus pin each role (taskset's lists). Reported per run: p50/p99, the traced/
untraced p50 ratio of its round, the server's CPU time per request (utime + stime from /proc:
on a busy host the latency is mostly queueing, the CPU the probes add to the server is not)
and the tracer's own CPU time (wait4), the requests the DB holds (all with tls = 1) against
those sent, and the tracer's loss counters (collector_stats: dropped_ring_sock,
dropped_sock_queue, http_desync, http_tls_*). The last line is a JSON summary: per kind
(bare, each --causeway label) the median p50 and p99 over the rounds with their range
(KIND_p50_ms, KIND_p50_ms_range, ...), the median p50 ratio and its range, the CPU per
request, the CPUs each role ran on and the machine. Exit 1 when a traced run did not store
every request.
"""
import argparse
import functools
import json
import os
import signal
import sqlite3
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import request_cost  # noqa: E402  (its open-loop load, run with tls_worker)


def run_load(port, rate, seconds, connections, events, cpus=None):
    worker = functools.partial(request_cost.client_worker, wrap=tls_wrap,
                               request=functools.partial(stream_request, events=events))
    return request_cost.run_load(port, rate, seconds, connections, worker=worker, cpus=cpus)


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


LOSS_COUNTERS = ("dropped_ring_sock", "dropped_sock_queue", "dropped_sock_map", "http_desync", "http_tls_connections",
                 "http_tls_no_connection", "http_tls_untraced", "http_tls_calls_lost", "http_tls_rebound",
                 "http_tls_plaintext_calls", "http_tls_cipher_skipped", "sock_records_received")


def cpu_s(pid):
    """utime + stime of a process so far, seconds (its threads included)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured_load(a, server_pid, load_cpus):
    """The load, and the server's CPU time per request it cost (us): on a busy host the
    latency is mostly queueing, the CPU the probes add to the server is not."""
    before = cpu_s(server_pid)
    res = run_load(a.port, a.rate, a.seconds, a.connections, a.events, load_cpus)
    res["server_cpu_us_per_request"] = (cpu_s(server_pid) - before) * 1e6 / max(res["requests"], 1)
    return res


def traced_run(a, causeway, tmp, tag, server_pid, tracer_cpus, load_cpus):
    db = os.path.join(tmp, "trace-%s.db" % tag)
    ready = os.path.join(tmp, "t-%s.ready" % tag)
    log = open(os.path.join(tmp, "trace-%s.log" % tag), "w")
    tracer = subprocess.Popen([causeway, "trace", "--db", db, "--quiet", "--ready-file", ready, "--no-stack",
                               "--http-port", str(a.port), "--pid", str(server_pid)], stdout=log, stderr=log,
                              preexec_fn=request_cost.pinned(tracer_cpus))
    wait_file(ready, tracer, "causeway trace")
    try:
        res = measured_load(a, server_pid, load_cpus)
        time.sleep(0.3)
    finally:
        tracer.send_signal(signal.SIGINT)
        _, _, usage = os.wait4(tracer.pid, 0)
        tracer.returncode = 0
    res["tracer_cpu_s"] = usage.ru_utime + usage.ru_stime
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    stored, tls_rows = con.execute("SELECT count(*), coalesce(sum(tls), 0) FROM requests WHERE server_pid = ?",
                                   (server_pid,)).fetchone()
    counters = dict(con.execute("SELECT name, value FROM collector_stats WHERE name IN (%s)"
                                % ",".join("?" * len(LOSS_COUNTERS)), LOSS_COUNTERS).fetchall())
    con.close()
    res.update(stored=stored, tls_rows=tls_rows, counters=counters)
    return res


def median_and_range(values):
    values = list(values)
    return statistics.median(values), [min(values), max(values)]


def machine():
    """What ran the bench: CPU model, CPUs, kernel, the load average at the end."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": os.uname().release, "load": os.getloadavg()[0]}


def summary(a, tracers, rounds):
    """The JSON summary: per kind the median p50/p99 over the rounds and their range."""
    out = {"mode": a.mode, "rate": a.rate, "seconds": a.seconds, "rounds": len(rounds), "connections": a.connections,
           "events": a.events, "machine": machine(),
           "cpus": {"server": a.server_cpus, "load": a.load_cpus, "tracer": a.tracer_cpus}}
    for label in ["bare"] + [label for label, _ in tracers]:
        for key in ("p50_ms", "p99_ms", "server_cpu_us_per_request") + (("p50_ratio", "p99_ratio", "tracer_cpu_s")
                                                                         if label != "bare" else ()):
            out[label + "_" + key], out[label + "_" + key + "_range"] = median_and_range(r[label][key] for r in rounds)
        if label != "bare":
            out[label + "_requests"] = sum(r[label]["requests"] for r in rounds)
            out[label + "_stored"] = sum(r[label]["stored"] for r in rounds)
    out["runs"] = rounds
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--events", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--mode", choices=["asyncio", "threaded"], default="asyncio")
    ap.add_argument("--port", type=int, default=18441)
    ap.add_argument("--causeway", action="append", default=[], help="LABEL=PATH of a causeway to trace with")
    ap.add_argument("--server-cpus")
    ap.add_argument("--load-cpus")
    ap.add_argument("--tracer-cpus")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("tls_cost: needs root (BPF)", file=sys.stderr)
        return 2
    tracers = [c.split("=", 1) if "=" in c else ("causeway", c) for c in a.causeway] or \
        [("causeway", os.path.join(a.build, "causeway"))]
    for _, path in tracers:
        if not os.access(path, os.X_OK):
            print("tls_cost: %s is missing (ninja -C %s causeway)" % (path, a.build), file=sys.stderr)
            return 2
    server_cpus, load_cpus, tracer_cpus = (request_cost.cpu_list(c) for c in (a.server_cpus, a.load_cpus, a.tracer_cpus))
    rounds = []
    with tempfile.TemporaryDirectory(prefix="cw-tlscost-") as tmp:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        ready = os.path.join(tmp, "server.ready")
        server = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "tests", "testprogs", "tls_server.py"),
                                   "--mode", a.mode, "--plain-port", str(a.port + 1), "--tls-port", str(a.port),
                                   "--cert", cert, "--key", key, "--ready-file", ready],
                                  preexec_fn=request_cost.pinned(server_cpus))
        try:
            wait_file(ready, server, "the server")
            run_load(a.port, a.rate, 1, a.connections, a.events, load_cpus)  # warm-up: imports, first connections
            kinds = [("bare", None)] + tracers
            for r in range(a.rounds):
                res = {}
                for label, path in kinds[r % len(kinds):] + kinds[:r % len(kinds)]:  # each kind first in turn
                    if path is None:
                        res["bare"] = measured_load(a, server.pid, load_cpus)
                        print("round %d bare: p50 %.3f ms p99 %.3f ms, server CPU %.0f us/request" % (
                            r, res["bare"]["p50_ms"], res["bare"]["p99_ms"], res["bare"]["server_cpu_us_per_request"]),
                            file=sys.stderr, flush=True)
                        continue
                    res[label] = traced_run(a, path, tmp, "%d-%s" % (r, label), server.pid, tracer_cpus, load_cpus)
                    print("round %d %s: p50 %.3f ms p99 %.3f ms, server CPU %.0f us/request, tracer CPU %.2f s, "
                          "stored %d of %d (tls %d), %s" % (
                        r, label, res[label]["p50_ms"], res[label]["p99_ms"], res[label]["server_cpu_us_per_request"],
                        res[label]["tracer_cpu_s"], res[label]["stored"],
                        res[label]["requests"], res[label]["tls_rows"], json.dumps(res[label]["counters"])),
                        file=sys.stderr, flush=True)
                for label, _ in tracers:
                    res[label]["p50_ratio"] = res[label]["p50_ms"] / res["bare"]["p50_ms"]
                    res[label]["p99_ratio"] = res[label]["p99_ms"] / res["bare"]["p99_ms"]
                rounds.append(res)
        finally:
            server.terminate()
            server.wait()
    print(json.dumps(summary(a, tracers, rounds)))
    exact = all(r[label]["stored"] == r[label]["requests"] == r[label]["tls_rows"] for r in rounds for label, _ in tracers)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
