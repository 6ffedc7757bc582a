#!/usr/bin/env python3
"""An OpenAI-style streaming completion server shaped like vLLM V1, for causeway's live
request tests (docs/INFERENCE.md) — real CPython, real aiohttp, real processes:

  inference_server.py --port 8000 --cudart LIB [--step-ms 15] [--prefill-us-per-byte 20]
                      [--max-batch 8] [--kv-tokens N] [--event-bytes B [--flush-each-event]]
                      [--ready-file F]
                      [--tp 2 --nccl LIB [--late-rank R --late-ms M --late-every K]
                       [--worker-launch torchrun|mp|mp-untitled]]

* the API server (this process, aiohttp) takes POST /v1/completions {"prompt", "max_tokens",
  "stream": true} and streams `data: {...}` SSE events, then `data: [DONE]`;
* the engine core (a child process, named EngineCore like vLLM V1's "VLLM::EngineCore") runs
  continuous batching: each step admits waiting requests (their prefill costs time in
  proportion to the prompt), launches the step's kernels through libcudart (the fake one of
  tests/testprogs, or a real one), waits on a stream sync, sleeps for the step's "GPU time"
  and emits one token for every running request. --event-bytes pads each event's text so an
  event is about B bytes (a slow reader then fills the socket's buffers within a stall), and
  --flush-each-event writes each event only once the previous one has left (a write buffer
  of 0): each event is a write of its own even when the socket is full.
Requests and tokens cross between the two processes over pipes, as vLLM's ZMQ sockets do.
* each forward pass's "GPU time" passes inside its stream sync: the fake libcudart's
  cwfake_gpu_ns makes the next sync sleep it, as a real sync waits for the kernels (with a
  real libcudart the pass sleeps it just before its sync);
* with --tp N the engine core runs no model itself: it hands each forward pass to N worker
  processes (its children, "VllmWorker-R", as vLLM V1's multiproc executor does), each of
  which launches its share of the kernels and joins one all-reduce per pass through libnccl
  (the fake one: a real barrier across the ranks), then syncs its stream. The workers are
  started as a launcher starts ranks (a fresh python3 with RANK / WORLD_SIZE / LOCAL_RANK /
  MASTER_ADDR / MASTER_PORT in its environment, as torchrun sets them), or with
  --worker-launch mp as vLLM V1's multiproc executor starts them: no launcher variable (the
  rank reaches the worker as an argument; vllm/v1/executor/multiproc_executor.py) and the
  worker titled with setproctitle as vLLM titles it, "VLLM::Worker_TP<rank>" (which also
  sets comm to its first 15 bytes, "VLLM::Worker_TP"). Emulated: the worker is a fresh
  python3 (vLLM forks or spawns a multiprocessing.Process) whose argv carries its rank until
  the title overwrites it; it needs Debian's python3-setproctitle. --worker-launch
  mp-untitled is the same without the title (vLLM where setproctitle is not installed: its
  set_process_title does nothing), so a worker shows only as "python3". The communicator is
  formed at the first forward pass. --late-rank R --late-ms M --late-every K plants a late
  tensor-parallel rank: rank R starts every K-th pass M ms late, so the other ranks wait for
  it in the all-reduce and every running stream's next token comes that much later.
* GET /metrics serves the engine's state in vLLM V1's Prometheus names: requests running and
  waiting, KV-cache usage, preemptions, and a TTFT histogram of the engine's own.
"""
import argparse
import asyncio
import collections
import ctypes
import json
import multiprocessing
import os
import signal
import struct
import subprocess
import sys
import threading
import time


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def set_process_name(name):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(15, name.encode(), 0, 0, 0)


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def gpu_pass(rt, secs):
    """Waits for the pass's "GPU time" in the stream sync that ends it."""
    try:
        queue_gpu = rt.cwfake_gpu_ns
    except AttributeError:  # a real libcudart: the kernels here do no work, so the host
        time.sleep(secs)    # spends the GPU time before the sync, still inside the pass
        rt.cudaStreamSynchronize(None)
        return
    queue_gpu.argtypes = [ctypes.c_uint64]
    queue_gpu(int(secs * 1e9))
    rt.cudaStreamSynchronize(None)


def tp_worker(args, rank, uid, commands, done):
    """One tensor-parallel rank: for each forward pass the engine core sends (its "GPU time"),
    launch this rank's kernels, all-reduce with the other ranks, sync, and answer."""
    if args.worker_launch == "mp":
        import setproctitle  # Debian's python3-setproctitle, as vLLM's set_process_title uses it
        setproctitle.setproctitle("VLLM::Worker_TP%d" % rank)
    elif args.worker_launch == "torchrun":
        set_process_name("VllmWorker-%d" % rank)
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    rt = ctypes.CDLL(args.cudart)
    rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    nccl = ctypes.CDLL(args.nccl)
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int]
    nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_void_p, ctypes.c_void_p]
    kernel = ctypes.c_void_p(0x1000)
    buf = ctypes.c_void_p(0x2000)
    comm = None
    passes = 0
    os.write(done, b"r")  # started: the engine core is ready once every rank is
    while True:
        msg = os.read(commands, 8)
        if len(msg) < 8:
            os._exit(0)
        secs = struct.unpack("d", msg)[0]
        if comm is None:
            comm = ctypes.c_void_p()
            nccl.ncclCommInitRank(ctypes.byref(comm), args.tp, uid, rank)
        passes += 1
        for _ in range(2):
            rt.cudaLaunchKernel(kernel, Dim3(32, 1, 1), Dim3(256, 1, 1), None, 0, None)
        if rank == args.late_rank and args.late_every > 0 and passes % args.late_every == 0:
            time.sleep(args.late_ms / 1000.0)  # the planted straggler: this rank starts the pass late
        nccl.ncclAllReduce(buf, buf, 4096, 7, 0, comm, None)  # ncclFloat32, ncclSum
        gpu_pass(rt, secs)
        os.write(done, b"x")


def start_tp_workers(args):
    """Forks the --tp workers; returns forward(secs), which runs one pass on all of them."""
    nccl = ctypes.CDLL(args.nccl)
    uid = UniqueId()
    nccl.ncclGetUniqueId(ctypes.byref(uid))
    links = []
    for rank in range(args.tp):
        cmd_r, cmd_w = os.pipe()
        done_r, done_w = os.pipe()
        launcher = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
        if args.worker_launch != "torchrun":  # vLLM's executor sets none of them
            env = {k: v for k, v in os.environ.items() if k not in launcher}
        else:
            env = dict(os.environ, **dict(zip(launcher, (str(rank), str(args.tp), str(rank), "127.0.0.1",
                                                         str(args.port + 1)))))
        subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:] +
                         ["--tp-worker", "%d,%d,%d,%s" % (rank, cmd_r, done_w, bytes(uid).hex())],
                         pass_fds=(cmd_r, done_w), env=env)
        os.close(cmd_r)
        os.close(done_w)
        links.append((cmd_w, done_r))
    for _, done_r in links:
        os.read(done_r, 1)

    def forward(secs):
        for cmd_w, _ in links:
            os.write(cmd_w, struct.pack("d", secs))
        for _, done_r in links:
            os.read(done_r, 1)

    return forward


def engine_core(args, requests_in, tokens_out, ready):
    """The engine core: continuous batching over a fake (or real) GPU, with a KV cache of
    --kv-tokens tokens (0: unbounded) that preempts the latest admitted request when full,
    as vLLM V1's scheduler does (recomputed when it is admitted again)."""
    set_process_name("EngineCore")
    # Ends with the API server (a fork keeps the parent's pipe ends open, so no EOF comes).
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:
        return
    rt = ctypes.CDLL(args.cudart)
    rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    kernel = ctypes.c_void_p(0x1000)

    def forward_here(launches, secs):
        for _ in range(launches):
            rt.cudaLaunchKernel(kernel, Dim3(32, 1, 1), Dim3(256, 1, 1), None, 0, None)
        gpu_pass(rt, secs)

    tp_forward = start_tp_workers(args) if args.tp > 1 else None
    ready.set()

    def forward(launches, secs):
        if tp_forward:
            tp_forward(secs)
        else:
            forward_here(launches, secs)

    capacity = args.kv_tokens if args.kv_tokens > 0 else 1 << 20
    waiting = collections.deque()  # [id, prompt bytes, tokens left, tokens generated]
    running = {}  # id → the same list, in admission order
    preemptions = 0

    def kv_tokens(r):
        return max(1, r[1] // 4) + r[3]

    def used():
        return sum(kv_tokens(r) for r in running.values())

    while True:
        # Block when idle; take everything that has arrived into the waiting queue.
        while (not running and not waiting) or requests_in.poll():
            msg = requests_in.recv()
            if msg is None:
                return
            rid, prompt_bytes, max_tokens = msg
            waiting.append([rid, prompt_bytes, max_tokens, 0])
        # Admit while the batch and the cache have room (continuous batching).
        while waiting and len(running) < args.max_batch and (not running or used() + kv_tokens(waiting[0]) + 1 <= capacity):
            r = waiting.popleft()
            # Prefill: the prompt's forward pass (and a preempted request's recompute).
            forward(1, (r[1] + 4 * r[3]) * args.prefill_us_per_byte / 1e6)
            running[r[0]] = r
        # The step needs one more token of cache for each running request: preempt the
        # latest admitted until it fits.
        while len(running) > 1 and used() + len(running) > capacity:
            rid = next(reversed(running))
            waiting.appendleft(running.pop(rid))
            preemptions += 1
        # One decode step for the whole batch.
        forward(4, args.step_ms / 1000.0)
        out = []
        for rid in list(running):
            r = running[rid]
            r[2] -= 1
            r[3] += 1
            done = r[2] == 0
            out.append((rid, done))
            if done:
                del running[rid]
        tokens_out.send((out, (len(running), len(waiting), used() / capacity, preemptions)))


# vLLM V1's names and types (vllm/v1/metrics/loggers.py); counters get prometheus_client's
# _total suffix.
METRICS_HEAD = [
    ("vllm:num_requests_running", "gauge", "Number of requests in model execution batches."),
    ("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed."),
    ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage."),
    ("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine."),
]
TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0]


def metrics_text(stats, ttfts):
    labels = 'engine="0",model_name="fake"'
    lines = []
    for (name, kind, doc), value in zip(METRICS_HEAD, stats):
        lines.append("# HELP %s %s" % (name, doc))
        lines.append("# TYPE %s %s" % (name, kind))
        lines.append("%s%s{%s} %s" % (name, "_total" if kind == "counter" else "", labels, float(value)))
    name = "vllm:time_to_first_token_seconds"
    lines.append("# HELP %s Histogram of time to first token in seconds." % name)
    lines.append("# TYPE %s histogram" % name)
    for le in TTFT_BUCKETS:
        lines.append('%s_bucket{%s,le="%s"} %s' % (name, labels, le, float(sum(1 for t in ttfts if t <= le))))
    lines.append('%s_bucket{%s,le="+Inf"} %s' % (name, labels, float(len(ttfts))))
    lines.append("%s_count{%s} %s" % (name, labels, float(len(ttfts))))
    lines.append("%s_sum{%s} %s" % (name, labels, float(sum(ttfts))))
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--cudart", required=True)
    p.add_argument("--step-ms", type=float, default=15.0)
    p.add_argument("--prefill-us-per-byte", type=float, default=20.0)
    p.add_argument("--max-batch", type=int, default=8)
    p.add_argument("--kv-tokens", type=int, default=0)
    p.add_argument("--event-bytes", type=int, default=0)
    p.add_argument("--flush-each-event", action="store_true")
    p.add_argument("--ready-file")
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--nccl", help="libnccl for --tp > 1 (the fake one of tests/testprogs)")
    p.add_argument("--late-rank", type=int, default=-1)
    p.add_argument("--late-ms", type=float, default=0.0)
    p.add_argument("--late-every", type=int, default=0)
    p.add_argument("--worker-launch", choices=("torchrun", "mp", "mp-untitled"), default="torchrun")
    p.add_argument("--tp-worker", help=argparse.SUPPRESS)  # RANK,CMD_FD,DONE_FD,UID_HEX: run one TP rank
    args = p.parse_args()
    if args.tp > 1 and not args.nccl:
        p.error("--tp needs --nccl")
    if args.tp_worker:
        rank, cmd_fd, done_fd, uid = args.tp_worker.split(",")
        tp_worker(args, int(rank), UniqueId.from_buffer_copy(bytes.fromhex(uid)), int(cmd_fd), int(done_fd))
        return

    from aiohttp import web  # Debian's python3-aiohttp

    req_parent, req_child = multiprocessing.Pipe()
    tok_parent, tok_child = multiprocessing.Pipe()
    engine_ready = multiprocessing.Event()
    engine = multiprocessing.Process(target=engine_core, args=(args, req_child, tok_child, engine_ready), daemon=True)
    engine.start()

    loop = asyncio.new_event_loop()
    streams = {}  # engine id → asyncio.Queue of "done" flags
    send_lock = threading.Lock()
    next_id = [0]
    stats = [(0, 0, 0.0, 0)]  # the engine's latest (running, waiting, KV usage, preemptions)
    ttfts = []  # engine-side TTFT, as vLLM measures it: arrival at the engine → first token
    arrived = {}

    def token_reader():
        while True:
            try:
                batch, stats[0] = tok_parent.recv()
            except EOFError:
                return
            now = time.monotonic()
            for rid, done in batch:
                t0 = arrived.pop(rid, None)
                if t0 is not None:
                    ttfts.append(now - t0)
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
        arrived[rid] = time.monotonic()
        with send_lock:
            req_parent.send((rid, len(doc.get("prompt", "")), max_tokens))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if args.flush_each_event:
            request.transport.set_write_buffer_limits(high=0)
        i = 0
        pad = "x" * max(0, args.event_bytes - 250)
        try:
            while True:
                done = await q.get()
                chunk = {"id": "cmpl-%d" % rid, "object": "text_completion", "created": int(time.time()),
                         "model": "fake", "choices": [{"index": 0, "text": " tok%d" % i + pad, "logprobs": None,
                                                       "finish_reason": "length" if done else None}]}
                await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                if args.flush_each_event:
                    await resp.drain()  # waits until the transport's buffer is empty
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

    async def metrics(request):
        return web.Response(text=metrics_text(stats[0], list(ttfts)), content_type="text/plain")

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/health", health)
    app.router.add_get("/metrics", metrics)

    async def start():
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", args.port).start()
        engine_ready.wait(60)  # the engine core and its workers have started
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
