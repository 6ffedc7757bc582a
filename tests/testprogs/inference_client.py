#!/usr/bin/env python3
"""A client for inference_server.py that measures TTFT, inter-token gaps and E2E itself:

  inference_client.py --port 8000 --requests 40 --concurrency 4 [--max-tokens 12]
                      [--prompt-bytes 200] [--long-every N --long-bytes B]
                      [--rcvbuf BYTES] [--stall-every K --stall-ms MS --stall-after E] --out results.json

Each worker is a process of its own (no GIL between the clocks of concurrent streams), keeps
one HTTP/1.1 connection (keep-alive, opened and accepted before the first request) and sends
its requests one after the other with an x-request-id; times are taken with
time.monotonic_ns() around the socket calls:
TTFT = request sent → first `data:` event received, gaps between events, E2E = request sent
→ the end of the response. One JSON line per request goes to --out.
A slow reader: --rcvbuf sets the sockets' SO_RCVBUF, and every K-th request (--stall-every)
stops reading for --stall-ms after its --stall-after-th event (the request's `stalled` is true).
"""
import argparse
import json
import multiprocessing
import socket
import time


def one_request(sock, rid, port, prompt_bytes, max_tokens, stall_after=0, stall_ms=0):
    body = json.dumps({"prompt": "x" * prompt_bytes, "max_tokens": max_tokens, "stream": True}).encode()
    head = ("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            "X-Request-Id: %s\r\nX-Tenant: tenant-%s\r\nContent-Length: %d\r\n\r\n" % (port, rid, rid[-1], len(body)))
    # Before the send: a client descheduled right after it would otherwise start its clock late.
    sent = time.monotonic_ns()
    sock.sendall(head.encode() + body)
    buf = b""
    tokens = []
    pos = 0
    while True:
        data = sock.recv(65536)
        now = time.monotonic_ns()
        if not data:
            raise RuntimeError("server closed the connection")
        buf += data
        while True:
            i = buf.find(b"data: ", pos)
            if i < 0:
                break
            pos = i + 6
            if buf[pos:pos + 6] != b"[DONE]":
                tokens.append(now)
                if stall_ms and len(tokens) == stall_after:
                    time.sleep(stall_ms / 1000.0)  # the client stops reading; the server's sends back up
        if buf.endswith(b"0\r\n\r\n"):
            end = now
            break
    status = int(buf.split(b" ", 2)[1])
    return {"request_id": rid, "status": status, "ttft_ns": tokens[0] - sent,
            "gaps_ns": [b - a for a, b in zip(tokens, tokens[1:])], "e2e_ns": end - sent, "events": len(tokens),
            "stalled": bool(stall_ms)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--requests", type=int, default=40)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=12)
    p.add_argument("--prompt-bytes", type=int, default=200)
    p.add_argument("--long-every", type=int, default=0)
    p.add_argument("--long-bytes", type=int, default=20000)
    p.add_argument("--rcvbuf", type=int, default=0)
    p.add_argument("--stall-every", type=int, default=0)
    p.add_argument("--stall-ms", type=float, default=300.0)
    p.add_argument("--stall-after", type=int, default=3)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    counter = multiprocessing.Value("i", 0)
    results = multiprocessing.Queue()

    def worker(w):
        sock = socket.socket()
        if args.rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)  # before connect: the window scale
        sock.connect(("127.0.0.1", args.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        time.sleep(0.1)  # the server accepts every connection before the first request
        try:
            while True:
                with counter.get_lock():
                    n = counter.value
                    if n >= args.requests:
                        break
                    counter.value += 1
                long = args.long_every and n % args.long_every == args.long_every - 1
                stall = args.stall_every and n % args.stall_every == args.stall_every - 1
                results.put(one_request(sock, "req-%04d-%d" % (n, w), args.port,
                                        args.long_bytes if long else args.prompt_bytes, args.max_tokens,
                                        args.stall_after, args.stall_ms if stall else 0))
        finally:
            sock.close()
            results.put(None)

    procs = [multiprocessing.Process(target=worker, args=(w,)) for w in range(args.concurrency)]
    for p_ in procs:
        p_.start()
    done, out = 0, []
    while done < len(procs):
        r = results.get()
        if r is None:
            done += 1
        else:
            out.append(r)
    for p_ in procs:
        p_.join()
    if any(p_.exitcode != 0 for p_ in procs):
        raise SystemExit("a client worker failed")
    with open(args.out, "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
