#!/usr/bin/env python3
"""The client of tests/testprogs/tp_engine.py: streamed OpenAI-style chat completions of one
tenant (header x-tenant), ground truth measured from the kernel's receive timestamps
(SO_TIMESTAMPNS on every recvmsg), not from when Python got around to reading.

  tp_client.py --port P --tenant T --requests N [--concurrency C] [--prompt-bytes B]
               [--max-tokens K] [--interval-ms I] --out FILE

Each request has x-request-id "<tenant>-<n>". FILE gets one JSON line per request: id,
tenant, prompt_bytes, sent_ns (CLOCK_REALTIME just before the send), ttft_ns (first content
event's kernel receive time − sent), gaps_ns (between the kernel receive times of the
reads that completed each later event), e2e_ns, usage (the server's last chunk). Exits 1
when a request fails.
"""
import argparse
import json
import socket
import struct
import sys
import threading
import time

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def kernel_time_ns(ancdata):
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec * 1_000_000_000 + nsec
    return time.time_ns()


def one_request(args, n):
    rid = "%s-%04d" % (args.tenant, n)
    prompt = ("lorem ipsum dolor sit amet " * (args.prompt_bytes // 27 + 1))[:args.prompt_bytes]
    body = json.dumps({"model": "tp-engine-8b", "stream": True, "max_tokens": args.max_tokens,
                       "messages": [{"role": "user", "content": prompt}]}).encode()
    head = ("POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            "x-tenant: %s\r\nx-request-id: %s\r\ncontent-length: %d\r\n\r\n" % (args.tenant, rid, len(body))).encode()
    s = socket.create_connection(("127.0.0.1", args.port))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sent = time.time_ns()
    s.sendall(head + body)
    buf, stamps, usage, done = b"", [], None, False
    while not done:
        data, anc, _, _ = s.recvmsg(65536, 64)
        if not data:
            raise RuntimeError("%s: connection closed before [DONE]" % rid)
        at = kernel_time_ns(anc)
        buf += data
        while b"\n\n" in buf:
            event, _, buf = buf.partition(b"\n\n")
            for line in event.split(b"\n"):
                i = line.find(b"data: ")
                if i < 0:
                    continue
                payload = line[i + 6:]
                if payload == b"[DONE]":
                    done = True
                    continue
                msg = json.loads(payload)
                if msg.get("usage"):
                    usage = msg["usage"]
                if msg.get("choices") and msg["choices"][0]["delta"].get("content"):
                    stamps.append(at)
    s.close()
    return {"id": rid, "tenant": args.tenant, "prompt_bytes": args.prompt_bytes, "sent_ns": sent,
            "ttft_ns": stamps[0] - sent, "gaps_ns": [b - a for a, b in zip(stamps, stamps[1:])],
            "e2e_ns": stamps[-1] - sent, "tokens": len(stamps), "usage": usage}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--tenant", required=True)
    p.add_argument("--requests", type=int, default=10)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--prompt-bytes", type=int, default=120)
    p.add_argument("--max-tokens", type=int, default=20)
    p.add_argument("--interval-ms", type=float, default=0)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    results, failures, lock = [], [], threading.Lock()
    next_n = iter(range(args.requests))

    def run():
        while True:
            with lock:
                n = next(next_n, None)
            if n is None:
                return
            try:
                r = one_request(args, n)
                with lock:
                    results.append(r)
            except Exception as e:  # reported below, the run fails
                with lock:
                    failures.append(str(e))
            if args.interval_ms:
                time.sleep(args.interval_ms / 1000.0)

    threads = [threading.Thread(target=run) for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(args.out, "w") as f:
        for r in sorted(results, key=lambda r: r["id"]):
            f.write(json.dumps(r) + "\n")
    if failures:
        sys.exit("; ".join(failures[:5]))


if __name__ == "__main__":
    main()
