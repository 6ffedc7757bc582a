#!/usr/bin/env python3
"""An OpenAI-shaped streaming API server on plain asyncio whose event loop is blocked in
bursts (tests/bpf/test_requests_arrival_bpf.cpp; docs/INFERENCE.md "Arrival time"): a request
to /burn runs a synchronous CPU-bound handler on the loop's own thread (a tokenizer or a JSON
encoder of a long response called inline) that spins for --burst-ms of CPU time, so requests that arrive
meanwhile wait unread in their sockets. Its response head leaves before the spin and carries
the burst's start (x-burst-from-ns), so a client can time its requests into the burst
instead of hoping to hit one (tests/testprogs/arrival_client.py). Other requests stream
--tokens SSE events --step-ms apart. Each burst is logged (CLOCK_REALTIME ns, the trace's Unix
time) to --bursts as a JSON line. With --cert and --key it serves HTTPS instead (asyncio's
ssl: the system libssl through memory BIOs), so the same wait is seen through the TLS hooks."""
import argparse
import asyncio
import json
import os
import ssl
import time


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--burst-ms", type=float, default=60)
    p.add_argument("--step-ms", type=float, default=8)
    p.add_argument("--ready-file", required=True)
    p.add_argument("--bursts", required=True)
    p.add_argument("--cert")
    p.add_argument("--key")
    return p.parse_args()


ARGS = parse_args()
BURST_LOG = open(ARGS.bursts, "w")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


def burn(writer: asyncio.StreamWriter, rid: bytes):
    """The blocking handler: nothing else is read until it returns. It does --burst-ms of CPU
    work (the thread's CPU time, as a tokenizer's would be), so on a loaded host it lasts
    longer by the time it waited for a CPU, and its on-CPU part is the same in every run. The
    head is written (a send on the socket, inline) after the burst's start is taken, so the
    client learns the start while the loop spins; the spin ends no sooner than --burst-ms
    after it."""
    start = now = time.time_ns()
    cpu0 = time.thread_time_ns()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nx-request-id: " + rid +
                 b"\r\nx-burst-from-ns: %d\r\n\r\n" % start)
    while time.thread_time_ns() - cpu0 < ARGS.burst_ms * 1e6:
        pass
    now = time.time_ns()
    # The clock read right after the spin is its end (late only if preempted in between).
    BURST_LOG.write(json.dumps({"from_ns": start, "to_ns": now}) + "\n")
    BURST_LOG.flush()
    writer.write(b"ok")


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            parts = lines[0].split(b" ")
            path = parts[1] if len(parts) > 1 else b"/"
            length, tokens, rid = 0, 4, b"none"
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"x-request-id":
                    rid = value.strip()
            body = await reader.readexactly(length) if length else b"{}"
            if path == b"/burn":
                burn(writer, rid)
                await writer.drain()
                continue
            tokens = int(json.loads(body or b"{}").get("max_tokens", 4))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                         b"x-request-id: " + rid + b"\r\n\r\n")
            for i in range(tokens):
                await asyncio.sleep(ARGS.step_ms / 1000)
                ev = json.dumps({"choices": [{"index": 0, "text": "t%d" % i}]}).encode()
                writer.write(chunk(b"data: " + ev + b"\n\n"))
            writer.write(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    tls = None
    if ARGS.cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(ARGS.cert, ARGS.key)
    server = await asyncio.start_server(handle, "127.0.0.1", ARGS.port, backlog=256, ssl=tls)
    with open(ARGS.ready_file, "w") as f:
        f.write(str(os.getpid()))
    async with server:
        await server.serve_forever()


asyncio.run(main())
