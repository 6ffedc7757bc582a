"""An ASGI app served by uvicorn (Debian's python3-uvicorn) for the live request tests
(tests/bpf/test_requests_python_bpf.cpp), with the routes every stack serves (tests/servers/README.md):
GET /hello, GET /metrics, GET /spin?ms=N (N ms of CPU time on the event loop), POST
/v1/chat/completions (OpenAI-compatible SSE when "stream": true), GET /boom (500), GET /abort
(two SSE events, then an exception: uvicorn closes without the final chunk), GET /slow-stream
(an event every 50 ms for 10 s); anything else 404.
Usage: python3 uvicorn_app.py PORT READY_FILE
"""
import asyncio
import json
import os
import resource
import sys
import time

import uvicorn


def chunk(rid, content, finish=None):
    delta = {} if content is None else {"content": content}
    doc = {"id": rid, "object": "chat.completion.chunk", "created": 0, "model": "stack-test",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


async def plain(send, status, body, ctype=b"text/plain"):
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def sse_start(send):
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})


async def read_body(receive):
    body = b""
    while True:
        m = await receive()
        body += m.get("body", b"")
        if not m.get("more_body"):
            return body


async def until_disconnect(receive):
    while (await receive())["type"] != "http.disconnect":
        pass


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    path, method = scope["path"], scope["method"]
    if path == "/hello":
        await plain(send, 200, b"hello")
    elif path == "/metrics":
        await plain(send, 200, b"demo_requests_total 1\n")
    elif path == "/spin":
        q = dict(kv.split("=", 1) for kv in scope["query_string"].decode().split("&") if "=" in kv)
        until = time.thread_time() + float(q.get("ms", "2")) / 1000  # CPU time: preemption makes it longer
        while time.thread_time() < until:
            pass
        await plain(send, 200, b"spun")
    elif path == "/boom":
        await plain(send, 500, b"boom")
    elif path == "/v1/chat/completions" and method == "POST":
        req = json.loads(await read_body(receive) or b"{}")
        rid = "chatcmpl-" + dict(scope["headers"]).get(b"x-request-id", b"x").decode()
        words = ["one", " two", " three", " four", " five"]
        if not req.get("stream"):
            doc = {"id": rid, "object": "chat.completion", "model": "stack-test",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(words)},
                                "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}}
            await plain(send, 200, json.dumps(doc).encode(), b"application/json")
            return
        await sse_start(send)
        for w in words:
            await asyncio.sleep(0.005)
            await send({"type": "http.response.body", "body": chunk(rid, w), "more_body": True})
        await send({"type": "http.response.body", "body": chunk(rid, None, "stop"), "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
    elif path == "/abort":
        await sse_start(send)
        for c in ("a", "b"):
            await send({"type": "http.response.body", "body": chunk("abort", c), "more_body": True})
        await asyncio.sleep(0.05)
        raise RuntimeError("gives up mid-stream")  # uvicorn closes the connection, no final chunk
    elif path == "/slow-stream":
        await sse_start(send)
        # The first receive() hands over the (empty) request body at once; the next one
        # waits for http.disconnect, which comes once the client leaves.
        left = asyncio.ensure_future(until_disconnect(receive))
        for _ in range(200):
            if left.done():
                return
            await send({"type": "http.response.body", "body": chunk("slow", "x"), "more_body": True})
            await asyncio.sleep(0.05)
        left.cancel()
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
    else:
        await plain(send, 404, b"not found")


async def main(port, ready_file):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, backlog=4096, log_level="critical",
                                           lifespan="off", access_log=False))
    serving = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    with open(ready_file, "w") as f:
        f.write(str(os.getpid()))
    await serving


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
