#!/usr/bin/env python3
"""A streaming client that times itself from the kernel (tests/bpf/test_requests_arrival_bpf.cpp):
--workers processes, each with one keep-alive connection, send --requests in all. Per
request: the send's start and end (CLOCK_REALTIME ns around sendall: on loopback the kernel
delivers the bytes to the server's socket inside it) and the kernel's receive time of the first
SSE data event (SO_TIMESTAMPNS ancillary data of the recvmsg that returned it: CLOCK_REALTIME,
the trace's Unix time). TTFT = first token received - send end. One JSON line per request."""
import argparse
import json
import multiprocessing
import os
import socket
import struct
import time

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--requests", type=int, default=60)
p.add_argument("--workers", type=int, default=4)
p.add_argument("--tokens", type=int, default=4)
p.add_argument("--gap-ms", type=float, default=7)
p.add_argument("--out", required=True)
ARGS = p.parse_args()

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def one(sock, rid):
    body = json.dumps({"model": "m", "prompt": "hello", "max_tokens": ARGS.tokens, "stream": True}).encode()
    req = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-request-id: " + rid.encode() +
           b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    send_start = time.time_ns()
    sock.sendall(req)
    send_end = time.time_ns()
    buf, first_rx, events, kernel_ts = b"", 0, 0, True
    while not (b"data: [DONE]" in buf and buf.endswith(b"\r\n0\r\n\r\n")):
        # Small reads until the first event: a read's stamp is its last segment's, and a
        # client scheduled late on a busy host finds several events queued.
        data, anc, _, _ = sock.recvmsg(48 if not first_rx else 65536, socket.CMSG_SPACE(16))
        returned = time.time_ns()
        if not data:
            raise ConnectionError("server closed")
        rx = 0
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", raw[:16])
                rx = sec * 1_000_000_000 + nsec
        buf += data
        n = buf.count(b"data: ") - buf.count(b"data: [DONE]")
        if n > 0 and not first_rx:
            # A segment without a stamp (timestamping was switched on after it was received)
            # or one stamped before the request was sent: the client's own time instead.
            kernel_ts = send_end <= rx <= returned
            first_rx = rx if kernel_ts else returned
        events = n
    return {"request_id": rid, "send_start_ns": send_start, "send_end_ns": send_end, "first_token_rx_ns": first_rx,
            "ttft_ns": first_rx - send_end, "events": events, "kernel_ts": kernel_ts}


def worker(w, n, q):
    sock = socket.create_connection(("127.0.0.1", ARGS.port))
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    out = []
    for i in range(n):
        out.append(one(sock, "arr-%d-%d-%d" % (os.getpid(), w, i)))
        time.sleep(ARGS.gap_ms / 1000)
    sock.close()
    q.put(out)


if __name__ == "__main__":
    # Receive timestamps are switched on host-wide some time after the first socket asks for
    # them (a deferred static key) and off when the last one closes: one held open here for the
    # whole run, asked for before the first request.
    keep = socket.socket()
    keep.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    time.sleep(0.5)
    q = multiprocessing.Queue()
    per = [ARGS.requests // ARGS.workers + (1 if w < ARGS.requests % ARGS.workers else 0) for w in range(ARGS.workers)]
    procs = [multiprocessing.Process(target=worker, args=(w, per[w], q)) for w in range(ARGS.workers)]
    for pr in procs:
        pr.start()
    results = [r for _ in procs for r in q.get()]
    for pr in procs:
        pr.join()
    with open(ARGS.out, "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
