"""An aiohttp server for the live request tests (tests/bpf/test_requests_python_bpf.cpp).

GET /hello answers "hello"; GET /metrics one Prometheus sample (causeway's scraper reads it).
Usage: python3 aiohttp_server.py PORT READY_FILE
"""
import asyncio
import os
import resource
import sys

from aiohttp import web


async def hello(_request):
    return web.Response(text="hello")


async def metrics(_request):
    return web.Response(text="demo_requests_total 1\n")


async def main(port, ready_file):
    # Thousands of connections at once: as many fds as the hard limit allows.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    app = web.Application()
    app.router.add_get("/hello", hello)
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, backlog=4096).start()
    with open(ready_file, "w") as f:
        f.write(str(os.getpid()))
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
