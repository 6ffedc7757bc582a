#!/usr/bin/env python3
"""What tracing HTTP requests costs (issue #22, docs/BENCHMARKS.md). Root; Debian's python3
with python3-aiohttp.

  sudo /usr/bin/python3 bench/request_cost.py --build build [--rate 1000] [--seconds 8]
                                              [--rounds 3] [--connections 8] [--hooks libc,syscalls,raw]
                                              [--server-cpus L --load-cpus L --tracer-cpus L]

1. A served request: a small streaming server (aiohttp, one process, like an OpenAI-style API
   server: POST /v1/completions answers two SSE `data:` events and `data: [DONE]`) takes an
   open-loop load of --rate requests/s over --connections keep-alive connections. Each round
   runs the same load untraced and under `causeway trace --http-port PORT --pid SERVER` (--pid:
   not the CUDA processes of other jobs on the host) once per hook
   (CAUSEWAY_SOCK_HOOK=libc|syscalls|raw: collector/sock_hook.h; the order rotates), and the
   client measures every request's latency itself (send -> the end of the response).
   Reported: the client's p50/p99 per run and the traced/untraced ratio of the p50, the median
   over rounds; each traced run checks that the DB holds every request and that the hook asked
   for is the one the tracer used.
2. An untraced process: bench/syscall_cost (a write+read loop over a socketpair through libc's
   write() and read(), the very functions the libc hook probes in the server, and getppid)
   with no tracer and with a tracer running on each hook, in the same round; the ratio of ns
   per syscall in the fastest tenth of blocks of 100 calls (the mean is printed beside it).

--hooks auto: the hook the tracer picks by itself (no CAUSEWAY_SOCK_HOOK), as shipped.
--server-cpus / --load-cpus / --tracer-cpus (CPU lists: "2", "4-7", "4,6"): the server, the
load's workers (and syscall_cost) and the tracer each pinned to its own cores, so none takes
CPU time from another (the method Coroot publishes for its overhead figures; what
scripts/gpu-check.sh's bench phase runs on a many-core host, docs/GPU.md).
"""
import argparse
import json
import multiprocessing
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

BODY = json.dumps({"prompt": "hello", "max_tokens": 2, "stream": True}).encode()


def serve(port, ready_file):
    from aiohttp import web

    async def completions(request):
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(2):
            await resp.write(b'data: {"text": "t%d"}\n\n' % i)
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/completions", completions)

    async def ready(_app):
        with open(ready_file, "w") as f:
            f.write("ready\n")

    app.on_startup.append(ready)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def completion_request(wid, i):
    return ("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\nX-Request-Id: w%d-%d\r\n\r\n" % (len(BODY), wid, i)).encode() + BODY


def cpu_list(text):
    """A CPU list ("2", "4-7", "4,6-7") as a set; None for none given."""
    if not text:
        return None
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def pinned(cpus):
    """A preexec_fn pinning the child to cpus (None: no pinning)."""
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None


def pinned_worker(worker, cpus, *args):
    if cpus:
        os.sched_setaffinity(0, cpus)
    worker(*args)


def client_worker(port, rate, seconds, start_at, out_q, wid, wrap=None, request=completion_request):
    """One keep-alive connection, requests at fixed times (open loop): a late request is sent
    at once and its latency still counts from its send. wrap: the socket → what to talk
    through (bench/tls_cost.py: a TLS client socket); request(wid, i): the bytes of one
    request, answered by a chunked response."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if wrap:
        sock = wrap(sock)
    lat = []
    n = int(rate * seconds)
    interval = 1.0 / rate
    for i in range(n):
        due = start_at + i * interval
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        req = request(wid, i)
        t0 = time.monotonic_ns()
        sock.sendall(req)
        buf = b""
        while not buf.endswith(b"\r\n0\r\n\r\n"):  # the chunked body's last chunk
            data = sock.recv(65536)
            if not data:
                raise RuntimeError("server closed the connection")
            buf += data
        lat.append((time.monotonic_ns() - t0) / 1e6)
    sock.close()
    out_q.put(lat)


def run_load(port, rate, seconds, connections, worker=client_worker, cpus=None):
    """worker(port, rate, seconds, start_at, out_q, wid): one connection's open loop
    (client_worker here; bench/tls_cost.py's over TLS), on cpus when given."""
    q = multiprocessing.Queue()
    start_at = time.monotonic() + 0.5
    # Workers offset by one gap each: together they send evenly, not in bursts of --connections.
    procs = [multiprocessing.Process(target=pinned_worker,
                                     args=(worker, cpus, port, rate / connections, seconds, start_at + w / rate, q, w))
             for w in range(connections)]
    for p in procs:
        p.start()
    lat = []
    for _ in procs:
        lat += q.get(timeout=seconds * 10 + 60)
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError("a client worker failed")
    lat.sort()
    return {"requests": len(lat), "p50_ms": lat[len(lat) // 2], "p99_ms": lat[int(len(lat) * 0.99)]}


class Tracer:
    def __init__(self, causeway, tmp, port, tag, hook, server_pid, cpus=None):
        self.db = os.path.join(tmp, "trace-%s.db" % tag)
        ready = os.path.join(tmp, "ready-%s" % tag)
        self.log = open(os.path.join(tmp, "trace-%s.log" % tag), "w")
        # "off": the same trace without request tracing (the host tracepoints, the CUDA probes'
        # discovery): what the tracer costs the server before any socket hook.
        hook_args = ["--no-requests"] if hook == "off" else ["--http-port", str(port)]
        env = dict(os.environ)
        env.pop("CAUSEWAY_SOCK_HOOK", None)
        if hook not in ("off", "auto"):
            env["CAUSEWAY_SOCK_HOOK"] = hook
        self.proc = subprocess.Popen([causeway, "trace", "--db", self.db, "--quiet", "--ready-file", ready,
                                      "--no-stack", "--pid", str(server_pid)] + hook_args, stdout=self.log, stderr=self.log,
                                     env=env, preexec_fn=pinned(cpus))
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("causeway trace did not get ready: see " + self.log.name)
            time.sleep(0.05)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        if self.proc.wait(timeout=60) != 0:
            raise RuntimeError("causeway trace exited %d: see %s" % (self.proc.returncode, self.log.name))
        self.log.close()


def stored_requests(db, server_pid):
    """Requests the DB holds from the bench's server: a tracer with no --pid also traces other
    CUDA processes' servers on the host (another job's test server and its own scrapes)."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute("SELECT count(*) FROM requests WHERE server_pid = ?", (server_pid,)).fetchone()[0]
    finally:
        con.close()


def hook_used(db):
    """The hook the tracer attached, from its collector_stats (collector/session_write.cpp): libc
    only when no tracepoint hook was attached at all."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        links = dict(con.execute("SELECT name, value FROM collector_stats WHERE name IN "
                                 "('http_syscall_tracepoint_links', 'http_raw_syscall_links', "
                                 "'http_libc_servers')").fetchall())
    finally:
        con.close()
    tracepoints = links.get("http_syscall_tracepoint_links", 0) + links.get("http_raw_syscall_links", 0)
    if links.get("http_libc_servers", 0) > 0:
        return "libc" if tracepoints == 0 else "libc+tracepoints"
    if links.get("http_syscall_tracepoint_links", 0) > 0:
        return "syscalls"
    return "raw" if links.get("http_raw_syscall_links", 0) > 0 else "none"


def syscall_ns(prog, calls, cpus=None):
    out = subprocess.run([prog, "--calls", str(calls)], check=True, capture_output=True, text=True, preexec_fn=pinned(cpus))
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--port", type=int, default=18431)
    ap.add_argument("--syscalls", type=int, default=500000)
    ap.add_argument("--hooks", default="libc,syscalls,raw",
                    help="the hooks to trace with, in turn; 'auto' the tracer's own choice; 'off' traces without "
                         "requests (--no-requests)")
    ap.add_argument("--causeway", help="the causeway to run (default: BUILD/causeway)")
    ap.add_argument("--syscall-cost", help="bench/syscall_cost (default: BUILD/bench/syscall_cost)")
    ap.add_argument("--server-cpus", help="pin the server to these CPUs")
    ap.add_argument("--load-cpus", help="pin the load's workers and syscall_cost to these CPUs")
    ap.add_argument("--tracer-cpus", help="pin causeway trace to these CPUs")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ready-file", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve(a.port, a.ready_file)
        return 0
    if os.geteuid() != 0:
        print("request_cost: needs root (BPF)", file=sys.stderr)
        return 2
    causeway = a.causeway or os.path.join(a.build, "causeway")
    prog = a.syscall_cost or os.path.join(a.build, "bench", "syscall_cost")
    server_cpus, load_cpus, tracer_cpus = cpu_list(a.server_cpus), cpu_list(a.load_cpus), cpu_list(a.tracer_cpus)
    for p in (causeway, prog):
        if not os.access(p, os.X_OK):
            print("request_cost: %s is missing (ninja -C %s causeway syscall_cost)" % (p, a.build), file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="cw-reqcost-") as tmp:
        ready = os.path.join(tmp, "server.ready")
        server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", "--port", str(a.port),
                                   "--ready-file", ready], preexec_fn=pinned(server_cpus))
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(ready):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the server did not start")
                time.sleep(0.05)
            run_load(a.port, a.rate, 1, a.connections, cpus=load_cpus)  # warm-up: imports, first connections
            hooks = a.hooks.split(",")
            kinds = ["bare"] + hooks
            rounds = []
            for r in range(a.rounds):
                order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]  # each kind first in turn
                res = {}
                for kind in order:
                    if kind == "bare":
                        res["bare"] = run_load(a.port, a.rate, a.seconds, a.connections, cpus=load_cpus)
                        res["syscall_bare"] = syscall_ns(prog, a.syscalls, load_cpus)
                        continue
                    t = Tracer(causeway, tmp, a.port, "%d-%s" % (r, kind), kind, server.pid, tracer_cpus)
                    try:
                        res["syscall_" + kind] = syscall_ns(prog, a.syscalls, load_cpus)
                        res[kind] = run_load(a.port, a.rate, a.seconds, a.connections, cpus=load_cpus)
                        time.sleep(0.3)
                    finally:
                        t.stop()
                    if kind == "off":
                        continue
                    stored = stored_requests(t.db, server.pid)
                    if stored != res[kind]["requests"]:
                        kept = shutil.copy(t.db, tempfile.mkstemp(prefix="cw-reqcost-", suffix=".db")[1])
                        raise RuntimeError("round %d, %s: the DB holds %d requests, the client sent %d (kept: %s)"
                                           % (r, kind, stored, res[kind]["requests"], kept))
                    used = res[kind + "_hook_used"] = hook_used(t.db)
                    if kind != "auto" and used != kind:
                        raise RuntimeError("round %d: asked for the %s hook, the tracer used %s" % (r, kind, used))
                # Syscall costs: the fastest tenth of blocks (bench/syscall_cost.c), the mean in brackets.
                line = "round %d: untraced p50 %.3f ms p99 %.3f ms, write/read %.0f ns [%.0f], getppid %.0f ns [%.0f]" % (
                    r, res["bare"]["p50_ms"], res["bare"]["p99_ms"], res["syscall_bare"]["rw_p10_ns"],
                    res["syscall_bare"]["rw_ns"], res["syscall_bare"]["getppid_p10_ns"], res["syscall_bare"]["getppid_ns"])
                for h in hooks:
                    res[h + "_p50_ratio"] = res[h]["p50_ms"] / res["bare"]["p50_ms"]
                    for call in ("rw", "getppid"):
                        res["%s_%s_ratio" % (h, call)] = (res["syscall_" + h][call + "_p10_ns"] /
                                                         res["syscall_bare"][call + "_p10_ns"])
                    line += ("; %s: p50 %.3f ms (x%.3f) p99 %.3f ms, %d requests stored, write/read %.0f ns [%.0f] "
                             "(x%.3f), getppid %.0f ns [%.0f] (x%.3f)" % (
                                 h, res[h]["p50_ms"], res[h + "_p50_ratio"], res[h]["p99_ms"], res[h]["requests"],
                                 res["syscall_" + h]["rw_p10_ns"], res["syscall_" + h]["rw_ns"], res[h + "_rw_ratio"],
                                 res["syscall_" + h]["getppid_p10_ns"], res["syscall_" + h]["getppid_ns"],
                                 res[h + "_getppid_ratio"]))
                rounds.append(res)
                print(line, flush=True)
        finally:
            server.terminate()
            server.wait()
    summary = {h + k: statistics.median(r[h + k] for r in rounds)
               for h in hooks for k in ("_p50_ratio", "_rw_ratio", "_getppid_ratio")}
    for h in ["bare"] + hooks:
        summary[h + "_p50_ms"] = statistics.median(r[h]["p50_ms"] for r in rounds)
        summary[h + "_p99_ms"] = statistics.median(r[h]["p99_ms"] for r in rounds)
        if h != "bare":
            summary[h + "_requests"] = sum(r[h]["requests"] for r in rounds)  # each traced run: all stored
            summary[h + "_hook_used"] = rounds[-1].get(h + "_hook_used")
    summary["syscall_rw_ns_untraced"] = statistics.median(r["syscall_bare"]["rw_p10_ns"] for r in rounds)
    summary.update(rate=a.rate, seconds=a.seconds, rounds=a.rounds, connections=a.connections,
                   cpus={"server": a.server_cpus, "load": a.load_cpus, "tracer": a.tracer_cpus})
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
