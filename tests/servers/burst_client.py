"""Bursts of concurrent HTTP/1.1 connections on loopback (tests/bpf/test_requests_*_bpf.cpp).

Each round opens N connections at once, then sends one GET on each (Connection: close,
x-request-id <prefix><round>-<i>, prefix "r" unless given) and reads its answer to the end.
Writes one JSON line per request: its id, the client's own address (the peer the server's socket has) and the status.
Usage: python3 burst_client.py --port P --connections N --rounds R --path /hello [--prefix r] --out FILE
"""
import argparse
import asyncio
import json
import resource


async def one(port, path, rid, ready, go):
    try:
        return await exchange(port, path, rid, ready, go)
    except OSError as e:  # counted by the test: it expects none
        ready.release()
        return {"request_id": rid, "peer": "", "status": -1, "error": str(e)}


async def exchange(port, path, rid, ready, go):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    host, cport = writer.get_extra_info("sockname")[:2]
    ready.release()
    await go.wait()
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: {rid}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    raw = await reader.read()
    writer.close()
    status = int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/1.") else 0
    return {"request_id": rid, "peer": f"{host}:{cport}", "status": status}


async def round_of(port, path, n, r, prefix):
    ready = asyncio.Semaphore(0)
    go = asyncio.Event()
    tasks = [asyncio.create_task(one(port, path, f"{prefix}{r}-{i}", ready, go)) for i in range(n)]
    for _ in range(n):
        await ready.acquire()
    go.set()  # every connection open: all requests at once
    return await asyncio.gather(*tasks)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--connections", type=int, default=100)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--path", default="/hello")
    p.add_argument("--prefix", default="r")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with open(a.out, "w") as f:
        for r in range(a.rounds):
            for res in await asyncio.wait_for(round_of(a.port, a.path, a.connections, r, a.prefix), 120):
                f.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
