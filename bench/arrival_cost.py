#!/usr/bin/env python3
"""What the arrival hook (bpf/arrival.bpf.h: raw tracepoint tcp:tcp_probe) costs TCP traffic
that is not a traced server's (docs/BENCHMARKS.md "Arrival hook"). Root; Debian's python3,
bpftool.

  sudo /usr/bin/python3 bench/arrival_cost.py --build build [--round-trips 20000] [--rounds 3]

A listener on a served port is traced (`causeway trace --http-port SERVED`), which attaches
the hook. An unrelated loopback ping-pong (1-byte messages on another port: every message one
data segment through tcp_rcv_established, each answered by one) runs --round-trips round trips
per round, alternately with and without the tracer running, in the same run. Reported: the
hook's own run time per segment from kernel.bpf_stats_enabled (run_time_ns / run_cnt of
cw_tcp_arrival over the unrelated traffic), and the ping-pong's round-trip time with and
without the tracer (medians of the rounds); then the same ping-pong to the served port (each
segment takes the hook's full path: lookup, ring update, and the read's arrival lookup).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time


def echo_server(port, stop):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(8)
    ls.settimeout(0.2)

    def serve(c):
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            b = c.recv(64)
            if not b:
                return
            c.sendall(b)

    while not stop.is_set():
        try:
            c, _ = ls.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(c,), daemon=True).start()
    ls.close()


def ping_pong(port, n):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.perf_counter_ns()
    for _ in range(n):
        s.sendall(b"x")
        s.recv(64)
    dt = time.perf_counter_ns() - t0
    s.close()
    return dt / n


def prog_stats():
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout
    for p in json.loads(out or "[]"):
        if p.get("name") == "cw_tcp_arrival":
            return p.get("run_cnt", 0), p.get("run_time_ns", 0)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--round-trips", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    base = 30000 + os.getpid() % 10000
    served, unrelated = base, base + 1
    stop = threading.Event()
    # The echo server runs in this process on both ports: the served one is this process's
    # listener, so `--http-port` traces this process (the hook filters by port, whoever reads).
    for port in (served, unrelated):
        threading.Thread(target=echo_server, args=(port, stop), daemon=True).start()
    time.sleep(0.3)
    old = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    open("/proc/sys/kernel/bpf_stats_enabled", "w").write("1")
    rows = {"untraced": [], "traced": [], "served": []}
    ns_per_segment, ns_served = [], []
    try:
        with tempfile.TemporaryDirectory() as d:
            for r in range(a.rounds):
                rows["untraced"].append(ping_pong(unrelated, a.round_trips))
                tracer = subprocess.Popen([os.path.join(a.build, "causeway"), "trace", "--http-port", str(served), "--db",
                                           os.path.join(d, "t%d.db" % r), "--quiet", "--no-stack", "--ready-file",
                                           os.path.join(d, "ready%d" % r)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                while not os.path.exists(os.path.join(d, "ready%d" % r)):
                    time.sleep(0.05)
                time.sleep(1.0)  # the server is found by its next scan
                s0 = prog_stats()
                rows["traced"].append(ping_pong(unrelated, a.round_trips))
                s1 = prog_stats()
                rows["served"].append(ping_pong(served, a.round_trips))
                s2 = prog_stats()
                tracer.send_signal(2)
                tracer.wait()
                if s0 and s1 and s2 and s1[0] > s0[0]:
                    ns_per_segment.append((s1[1] - s0[1]) / (s1[0] - s0[0]))
                    ns_served.append((s2[1] - s1[1]) / max(1, s2[0] - s1[0]))
                    print("round %d: unrelated %d segments through the hook, %.1f ns each; served %d, %.1f ns each" %
                          (r, s1[0] - s0[0], ns_per_segment[-1], s2[0] - s1[0], ns_served[-1]))
    finally:
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write(old)
        stop.set()
    med = lambda v: sorted(v)[len(v) // 2] if v else float("nan")
    print(json.dumps({"round_trips": a.round_trips, "rounds": a.rounds,
                      "rtt_us_untraced": round(med(rows["untraced"]) / 1e3, 2),
                      "rtt_us_traced_unrelated": round(med(rows["traced"]) / 1e3, 2),
                      "rtt_us_traced_served": round(med(rows["served"]) / 1e3, 2),
                      "hook_ns_per_unrelated_segment": round(med(ns_per_segment), 1),
                      "hook_ns_per_served_segment": round(med(ns_served), 1)}))


if __name__ == "__main__":
    main()
