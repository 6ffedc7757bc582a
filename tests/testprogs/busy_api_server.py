#!/usr/bin/env python3
"""An OpenAI-shaped streaming API server on plain asyncio whose event loop is blocked in
bursts: a background task spins the CPU for --burst-ms every --every-ms, so requests that
arrive meanwhile wait unread in their sockets (tests/bpf/test_requests_arrival_bpf.cpp;
docs/INFERENCE.md "Arrival time"). Each request streams --tokens SSE events --step-ms apart.
The bursts are logged (CLOCK_REALTIME ns, the trace's Unix time) to --bursts as JSON lines.
With --cert and --key it serves HTTPS instead (asyncio's ssl: the system libssl through memory
BIOs), so the same wait is seen through the TLS hooks."""
import argparse
import asyncio
import json
import os
import ssl
import time


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--burst-ms", type=float, default=25)
    p.add_argument("--every-ms", type=float, default=60)
    p.add_argument("--step-ms", type=float, default=8)
    p.add_argument("--ready-file", required=True)
    p.add_argument("--bursts", required=True)
    p.add_argument("--cert")
    p.add_argument("--key")
    return p.parse_args()


ARGS = parse_args()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length, tokens, rid = 0, 4, b"none"
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"x-request-id":
                    rid = value.strip()
            body = await reader.readexactly(length) if length else b"{}"
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


async def burner(log):
    # The event loop's own thread runs the CPU-bound work: nothing is read meanwhile.
    while True:
        await asyncio.sleep(ARGS.every_ms / 1000)
        start = now = time.time_ns()
        while now - start < ARGS.burst_ms * 1e6:
            now = time.time_ns()
        # The spin's last clock read is its end (one read after it could come late: preempted).
        log.write(json.dumps({"from_ns": start, "to_ns": now}) + "\n")
        log.flush()


async def main():
    tls = None
    if ARGS.cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(ARGS.cert, ARGS.key)
    server = await asyncio.start_server(handle, "127.0.0.1", ARGS.port, backlog=256, ssl=tls)
    with open(ARGS.bursts, "w") as log:
        task = asyncio.ensure_future(burner(log))
        with open(ARGS.ready_file, "w") as f:
            f.write(str(os.getpid()))
        async with server:
            await server.serve_forever()
        task.cancel()


asyncio.run(main())
