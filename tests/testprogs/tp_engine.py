#!/usr/bin/env python3
"""A second, independently written vLLM-V1-shaped engine for causeway's live request tests
(tests/bpf/test_requests_engine_bpf.cpp; docs/INFERENCE.md "Live tests"). Three kinds of
process, each this file in a different role (argv[1]):

  tp_engine.py api --port P --cudart LIB --nccl LIB [--names A,B] [--late-ms M] [--spin-ms S]
                   [--chunk-tokens 2048] [--pass-ms 8] [--us-per-token 15] [--ready-file F]

* `api`: the API server. Hand-written HTTP/1.1 on blocking sockets, a thread per
  connection. POST /v1/chat/completions (OpenAI chat shape: model, messages, max_tokens,
  stream) answers an SSE stream in chunked transfer encoding, one `chat.completion.chunk` per
  token, a last chunk carrying `usage` (prompt_tokens, completion_tokens), then
  `data: [DONE]`. Requests go to the engine core as JSON lines over a Unix socket pair, and
  its tokens come back the same way, read by one dispatcher thread.
* `core`: the engine core. Loads no CUDA or NCCL library and calls none. Continuous batching
  with chunked prefill: each step takes one decode token of every running request and fills
  the rest of a token budget (--chunk-tokens) with the oldest waiting prompt's next chunk,
  so a prompt of 5 budgets is prefilled over 5 passes while the running streams wait for
  each. A pass's "GPU time" is --pass-ms plus --us-per-token per prefilled token. It hands
  each pass to the two workers over pipes and waits for both.
* `worker`: a tensor-parallel rank. Names itself (prctl PR_SET_NAME) from --names, joins
  the communicator at start-up (before any trace: ncclCommInitRank with a unique id the core
  drew), and per pass launches its kernels on the fake libcudart, all-reduces once on the
  fake libnccl, and syncs its stream, which sleeps the pass's GPU time. With --late-ms the
  rank 1 worker enters every all-reduce that much late. With --spin-ms every rank computes
  on its CPU that long before its all-reduce (host-side work: a rank that cannot get its CPU
  enters late). Rank 1 holds a rank-sized block
  before it joins, so the two workers never get one communicator handle value by chance.

One token is 4 prompt bytes.
"""
import ctypes
import json
import os
import queue
import socket
import struct
import subprocess
import sys
import threading
import time

BYTES_PER_TOKEN = 4


def option(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def set_comm(name):
    ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME


# ----------------------------------------------------------------------------- worker
class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


class NcclId(ctypes.Structure):  # ncclUniqueId, passed by value
    _fields_ = [("internal", ctypes.c_char * 128)]


def worker_main(args):
    rank = int(option(args, "--rank"))
    set_comm(option(args, "--names", "Worker_TP0,Worker_TP1").split(",")[rank])
    ctypes.CDLL(None).prctl(1, 15, 0, 0, 0)  # PR_SET_PDEATHSIG SIGTERM: gone with the core
    late_s = float(option(args, "--late-ms", "0")) / 1000.0 if rank == 1 else 0.0
    spin_s = float(option(args, "--spin-ms", "0")) / 1000.0
    cmd = os.fdopen(int(option(args, "--cmd-fd")), "rb", buffering=0)
    ack = int(option(args, "--ack-fd"))
    rt = ctypes.CDLL(option(args, "--cudart"))
    rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    rt.cwfake_gpu_ns.argtypes = [ctypes.c_uint64]
    nccl = ctypes.CDLL(option(args, "--nccl"))
    nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_void_p, ctypes.c_void_p]
    uid = NcclId()
    ctypes.memmove(ctypes.byref(uid), bytes.fromhex(option(args, "--uid")), 128)
    keep = ctypes.create_string_buffer(4096 * (1 + 7 * rank))  # shifts rank 1's heap: handles differ
    comm = ctypes.c_void_p()
    init = nccl.ncclCommInitRank
    init.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, NcclId, ctypes.c_int]
    if init(ctypes.byref(comm), 2, uid, rank) != 0:
        sys.exit("ncclCommInitRank failed")
    os.write(ack, b"%d %d\n" % (os.getpid(), comm.value or 0))
    buf = ctypes.create_string_buffer(1 << 16)
    gemm = ctypes.c_void_p(0x7100 + rank)
    while True:
        head = cmd.read(8)
        if len(head) < 8:
            break
        gpu_s = struct.unpack("<d", head)[0]
        for _ in range(3):
            rt.cudaLaunchKernel(gemm, Dim3(64, 1, 1), Dim3(128, 1, 1), None, 0, None)
        if spin_s:
            until = time.thread_time() + spin_s  # CPU time: a preempted rank takes longer
            while time.thread_time() < until:
                pass
        if late_s:
            time.sleep(late_s)
        nccl.ncclAllReduce(buf, buf, 8192, 6, 0, comm, None)  # ncclFloat16 = 6, ncclSum
        rt.cwfake_gpu_ns(int(gpu_s * 1e9))
        rt.cudaStreamSynchronize(None)
        os.write(ack, b".")
    del keep


# ----------------------------------------------------------------------------- core
class Sequence:
    def __init__(self, rid, prompt_tokens, max_tokens):
        self.rid, self.prompt_tokens, self.max_tokens = rid, prompt_tokens, max_tokens
        self.prefilled = 0
        self.emitted = 0


def core_main(args):
    set_comm("EngineCore")
    ctypes.CDLL(None).prctl(1, 15, 0, 0, 0)  # PR_SET_PDEATHSIG SIGTERM: gone with the API server
    link = socket.socket(fileno=int(option(args, "--link-fd")))
    chunk = int(option(args, "--chunk-tokens", "2048"))
    pass_s = float(option(args, "--pass-ms", "8")) / 1000.0
    per_token_s = float(option(args, "--us-per-token", "15")) / 1e6
    uid = os.urandom(128).hex()
    workers = []
    for rank in range(2):
        cmd_r, cmd_w = os.pipe()
        ack_r, ack_w = os.pipe()
        child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", "--rank", str(rank), "--uid", uid,
                                  "--cmd-fd", str(cmd_r), "--ack-fd", str(ack_w)] + args,
                                 pass_fds=(cmd_r, ack_w))
        os.close(cmd_r)
        os.close(ack_w)
        workers.append((child, cmd_w, os.fdopen(ack_r, "rb", buffering=0)))
    hello = []
    for _, _, ack in workers:  # both joined the communicator
        line = b""
        while not line.endswith(b"\n"):
            line += ack.read(1)
        hello.append(line.split())
    if hello[0][1] == hello[1][1]:
        sys.exit("the two workers got one communicator handle value")
    inbox = queue.Queue()

    def receive():
        f = link.makefile("rb")
        for line in f:
            inbox.put(json.loads(line))
        inbox.put(None)

    threading.Thread(target=receive, daemon=True).start()
    out = link.makefile("wb", buffering=0)
    out.write(b'{"ready": [%s]}\n' % b",".join(h[0] for h in hello))
    waiting, running = [], []
    while True:
        block = not waiting and not running
        while True:
            try:
                msg = inbox.get(block=block, timeout=None)
            except queue.Empty:
                break
            if msg is None:
                return
            waiting.append(Sequence(msg["id"], msg["prompt_tokens"], msg["max_tokens"]))
            block = False
        budget = chunk - len(running)
        prefill_tokens, finished_prefill = 0, []
        for seq in waiting:
            if budget <= 0:
                break
            take = min(budget, seq.prompt_tokens - seq.prefilled)
            seq.prefilled += take
            prefill_tokens += take
            budget -= take
            if seq.prefilled >= seq.prompt_tokens:
                finished_prefill.append(seq)
        gpu_s = pass_s + per_token_s * prefill_tokens
        for _, cmd_w, _ in workers:
            os.write(cmd_w, struct.pack("<d", gpu_s))
        for _, _, ack in workers:
            ack.read(1)
        lines = []
        for seq in running + finished_prefill:
            seq.emitted += 1
            done = seq.emitted >= seq.max_tokens
            lines.append(json.dumps({"id": seq.rid, "token": seq.emitted, "done": done,
                                     "prompt_tokens": seq.prompt_tokens}).encode())
        for seq in finished_prefill:
            waiting.remove(seq)
        running = [s for s in running + finished_prefill if s.emitted < s.max_tokens]
        if lines:
            out.write(b"\n".join(lines) + b"\n")


# ----------------------------------------------------------------------------- api
class Api:
    def __init__(self, args):
        self.args = args
        mine, theirs = socket.socketpair()
        self.core = subprocess.Popen([sys.executable, os.path.abspath(__file__), "core", "--link-fd",
                                      str(theirs.fileno())] + args, pass_fds=(theirs.fileno(),))
        theirs.close()
        self.to_core = mine.makefile("wb", buffering=0)
        self.from_core = mine.makefile("rb")
        self.lock = threading.Lock()
        self.streams = {}
        self.worker_pids = json.loads(self.from_core.readline())["ready"]
        threading.Thread(target=self.dispatch, daemon=True).start()

    def dispatch(self):
        for line in self.from_core:
            msg = json.loads(line)
            with self.lock:
                q = self.streams.get(msg["id"])
            if q:
                q.put(msg)

    def submit(self, rid, prompt_tokens, max_tokens):
        q = queue.Queue()
        with self.lock:
            self.streams[rid] = q
            self.to_core.write(json.dumps({"id": rid, "prompt_tokens": prompt_tokens,
                                           "max_tokens": max_tokens}).encode() + b"\n")
        return q

    def finish(self, rid):
        with self.lock:
            self.streams.pop(rid, None)


def read_request(conn, pending):
    """One request head and body from a keep-alive connection: (method, path, headers, body,
    leftover bytes), or None at the connection's end."""
    data = pending
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return None
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    need = int(headers.get("content-length", "0"))
    while len(rest) < need:
        more = conn.recv(65536)
        if not more:
            return None
        rest += more
    return method, path, headers, rest[:need], rest[need:]


def chunk(payload):
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def serve_connection(api, conn, counter):
    pending = b""
    try:
        while True:
            got = read_request(conn, pending)
            if got is None:
                return
            method, path, headers, body, pending = got
            if method != "POST" or path != "/v1/chat/completions":
                conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                continue
            req = json.loads(body)
            prompt = "".join(m.get("content", "") for m in req.get("messages", []))
            prompt_tokens = max(1, len(prompt.encode()) // BYTES_PER_TOKEN)
            with api.lock:
                counter[0] += 1
                n = counter[0]
            rid = headers.get("x-request-id") or "chatcmpl-%d" % n
            model = req.get("model", "tp-engine")
            q = api.submit(rid, prompt_tokens, int(req.get("max_tokens", 16)))
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
                         b"x-request-id: " + rid.encode() + b"\r\ntransfer-encoding: chunked\r\n\r\n")
            created = int(time.time())
            while True:
                msg = q.get()
                event = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
                         "choices": [{"index": 0, "delta": {"content": " tok%d" % msg["token"]},
                                      "finish_reason": "length" if msg["done"] else None}]}
                data = b"data: " + json.dumps(event).encode() + b"\n\n"
                if msg["done"]:
                    usage = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
                             "choices": [], "usage": {"prompt_tokens": msg["prompt_tokens"],
                                                      "completion_tokens": msg["token"],
                                                      "total_tokens": msg["prompt_tokens"] + msg["token"]}}
                    data += b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n"
                    conn.sendall(chunk(data) + b"0\r\n\r\n")
                    break
                conn.sendall(chunk(data))
            api.finish(rid)
    except (ConnectionError, OSError):
        return
    finally:
        conn.close()


def api_main(args):
    set_comm("api_server")
    api = Api(args)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(option(args, "--port"))))
    listener.listen(256)
    ready = option(args, "--ready-file")
    if ready:
        with open(ready + ".tmp", "w") as f:
            f.write(json.dumps({"api": os.getpid(), "core": api.core.pid, "workers": api.worker_pids}))
        os.rename(ready + ".tmp", ready)
    counter = [0]
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve_connection, args=(api, conn, counter), daemon=True).start()


if __name__ == "__main__":
    role, rest = sys.argv[1], sys.argv[2:]
    {"api": api_main, "core": core_main, "worker": worker_main}[role](rest)
