#!/usr/bin/env python3
"""An OpenAI-style streaming completion server shaped like vLLM V1, for causeway's live
request tests (docs/INFERENCE.md) — real CPython, real aiohttp, real processes:

  inference_server.py --port 8000 --cudart LIB [--step-ms 15] [--prefill-us-per-byte 20]
                      [--max-batch 8] [--ready-file F]

* the API server (this process, aiohttp) takes POST /v1/completions {"prompt", "max_tokens",
  "stream": true} and streams `data: {...}` SSE events, then `data: [DONE]`;
* the engine core (a child process, named EngineCore like vLLM V1's "VLLM::EngineCore") runs
  continuous batching: each step admits waiting requests (their prefill costs time in
  proportion to the prompt), launches the step's kernels through libcudart (the fake one of
  tests/testprogs, or a real one), waits on a stream sync, sleeps for the step's "GPU time"
  and emits one token for every running request.
Requests and tokens cross between the two processes over pipes, as vLLM's ZMQ sockets do.
"""
import argparse
import asyncio
import ctypes
import json
import multiprocessing
import os
import sys
import threading
import time


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def set_process_name(name):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(15, name.encode(), 0, 0, 0)


def engine_core(args, requests_in, tokens_out):
    """The engine core: continuous batching over a fake (or real) GPU."""
    set_process_name("EngineCore")
    rt = ctypes.CDLL(args.cudart)
    rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    kernel = ctypes.c_void_p(0x1000)
    running = {}  # id → tokens left
    while True:
        # Block when idle; else admit whatever waits (continuous batching).
        while (not running or requests_in.poll()) and len(running) < args.max_batch:
            msg = requests_in.recv()
            if msg is None:
                return
            rid, prompt_bytes, max_tokens = msg
            # Prefill: the prompt's forward pass, in proportion to its length.
            rt.cudaLaunchKernel(kernel, Dim3(64, 1, 1), Dim3(128, 1, 1), None, 0, None)
            rt.cudaStreamSynchronize(None)
            time.sleep(prompt_bytes * args.prefill_us_per_byte / 1e6)
            running[rid] = max_tokens
        # One decode step for the whole batch.
        for _ in range(4):
            rt.cudaLaunchKernel(kernel, Dim3(32, 1, 1), Dim3(256, 1, 1), None, 0, None)
        rt.cudaStreamSynchronize(None)
        time.sleep(args.step_ms / 1000.0)
        out = []
        for rid in list(running):
            running[rid] -= 1
            done = running[rid] == 0
            out.append((rid, done))
            if done:
                del running[rid]
        tokens_out.send(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--cudart", required=True)
    p.add_argument("--step-ms", type=float, default=15.0)
    p.add_argument("--prefill-us-per-byte", type=float, default=20.0)
    p.add_argument("--max-batch", type=int, default=8)
    p.add_argument("--ready-file")
    args = p.parse_args()

    from aiohttp import web  # Debian's python3-aiohttp

    req_parent, req_child = multiprocessing.Pipe()
    tok_parent, tok_child = multiprocessing.Pipe()
    engine = multiprocessing.Process(target=engine_core, args=(args, req_child, tok_child), daemon=True)
    engine.start()

    loop = asyncio.new_event_loop()
    streams = {}  # engine id → asyncio.Queue of "done" flags
    send_lock = threading.Lock()
    next_id = [0]

    def token_reader():
        while True:
            try:
                batch = tok_parent.recv()
            except EOFError:
                return
            for rid, done in batch:
                q = streams.get(rid)
                if q is not None:
                    loop.call_soon_threadsafe(q.put_nowait, done)

    threading.Thread(target=token_reader, daemon=True).start()

    async def completions(request):
        body = await request.read()
        try:
            doc = json.loads(body)
        except ValueError:
            return web.json_response({"error": "bad json"}, status=400)
        max_tokens = int(doc.get("max_tokens", 16))
        next_id[0] += 1
        rid = next_id[0]
        q = asyncio.Queue()
        streams[rid] = q
        with send_lock:
            req_parent.send((rid, len(doc.get("prompt", "")), max_tokens))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        i = 0
        try:
            while True:
                done = await q.get()
                chunk = {"id": "cmpl-%d" % rid, "object": "text_completion", "created": int(time.time()),
                         "model": "fake", "choices": [{"index": 0, "text": " tok%d" % i, "logprobs": None,
                                                       "finish_reason": "length" if done else None}]}
                await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                i += 1
                if done:
                    break
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
        finally:
            del streams[rid]
        return resp

    async def health(request):
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/health", health)

    async def start():
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", args.port).start()
        if args.ready_file:
            open(args.ready_file, "w").close()

    asyncio.set_event_loop(loop)
    loop.run_until_complete(start())
    try:
        loop.run_forever()
    finally:
        req_parent.send(None)


if __name__ == "__main__":
    main()
