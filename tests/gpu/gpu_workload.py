#!/usr/bin/env python3
"""The planted incidents of scripts/gpu-check.sh (docs/GPU.md): one phase of a training (or
inference) loop per process, on real PyTorch + CUDA (--backend torch) or on the project's fake
libcudart through ctypes (--backend fake --cudart LIB), so the same script runs on a GPU host
and in CI:

  cpu_hog          a training loop pinned to one CPU; a process named cw_hog (nice -20) spins
                   on that CPU for a window                      -> cpu_contention, culprit cw_hog
  dataloader       a DataLoader whose 2 workers read each batch with random 4 KiB reads of a
                   file (O_DIRECT when the file system allows)   -> dataloader_starvation
  launch_bound     tiny kernels, torch.cuda.synchronize() every 32 of them -> launch_bound
  graph_replay     a CUDA graph captured once, replayed every step -> no graph_recapture
  graph_recapture  the same step captured and instantiated again every step -> graph_recapture
  inference        a small randomly initialized transformer behind an HTTP server streaming
                   tokens as server-sent events; a client process sends --requests requests

Each phase loads its libraries and warms up first, writes --ready-file (its pid), waits for
--wait-file (a tracer attaches meanwhile), runs --seconds, and writes --result: a JSON object
with the pids a verdict needs (trainer, hog, workers, server) and what the phase did.
"""
import argparse
import ctypes
import json
import mmap
import os
import random
import subprocess
import sys
import time

PHASES = ["cpu_hog", "dataloader", "launch_bound", "graph_replay", "graph_recapture", "inference"]


def set_comm(name):
    """prctl(PR_SET_NAME): the name /proc/PID/comm shows and the trace records."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(15, name.encode(), 0, 0, 0)


# ----------------------------------------------------------------------------------------------
# Backends: the GPU side of each step, on real PyTorch or on the fake libcudart.


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


class FakeBackend:
    """The fake libcudart (tests/testprogs/fake_cudart.c): every call busy-waits the latency set
    just before it, so each phase gets the call durations its real counterpart has."""

    LAUNCH_NS = 20_000      # a kernel launch (a real one takes a few µs)
    STEP_SYNC_NS = 2_000_000  # loss.item(): the GPU runs the step
    GRAPH_BUILD_NS = 3_000_000  # end capture / instantiate: milliseconds in real life

    def __init__(self, cudart):
        rt = ctypes.CDLL(cudart)
        vp = ctypes.c_void_p
        rt.cudaMemcpyAsync.argtypes = [vp, vp, ctypes.c_size_t, ctypes.c_int, vp]
        rt.cudaLaunchKernel.argtypes = [vp, Dim3, Dim3, vp, ctypes.c_size_t, vp]
        rt.cudaStreamSynchronize.argtypes = [vp]
        rt.cudaStreamBeginCapture.argtypes = [vp, ctypes.c_int]
        rt.cudaStreamEndCapture.argtypes = [vp, ctypes.POINTER(vp)]
        rt.cudaGraphInstantiate.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_ulonglong]
        rt.cudaGraphLaunch.argtypes = [vp, vp]
        rt.cudaGraphExecDestroy.argtypes = [vp]
        rt.cwfake_set_latency_ns.argtypes = [ctypes.c_uint64]
        rt.cwfake_set_graph_build_ns.argtypes = [ctypes.c_uint64]
        self.rt = rt
        self.stream = vp(0x1000)
        self.dev = vp(0x7F0000001000)
        self.host = ctypes.create_string_buffer(4096)
        self.grid, self.block = Dim3(4, 2, 1), Dim3(128, 1, 1)
        rt.cwfake_set_graph_build_ns(self.GRAPH_BUILD_NS)
        self.exec = None

    def _lat(self, ns):
        self.rt.cwfake_set_latency_ns(ns)

    def _launches(self, n):
        self._lat(self.LAUNCH_NS)
        for k in range(n):
            self.rt.cudaLaunchKernel(0xDEAD0000 + k, self.grid, self.block, None, 0, self.stream)

    def _sync(self, ns):
        self._lat(ns)
        self.rt.cudaStreamSynchronize(self.stream)

    def warm_up(self, phase):
        pass

    def train_step(self, batch=None):
        self._lat(self.LAUNCH_NS)
        self.rt.cudaMemcpyAsync(self.dev, self.host, 4096, 1, self.stream)  # batch.to(device)
        self._launches(4)  # forward / backward / optimizer
        self._sync(self.STEP_SYNC_NS)  # loss.item()

    def tiny_kernels(self, n):
        self._launches(n)
        self._lat(0)
        self.rt.cudaDeviceSynchronize()

    def _capture(self):
        self._lat(self.LAUNCH_NS)
        self.rt.cudaStreamBeginCapture(self.stream, 0)
        self._launches(4)
        graph, exe = ctypes.c_void_p(), ctypes.c_void_p()
        self.rt.cudaStreamEndCapture(self.stream, ctypes.byref(graph))
        self.rt.cudaGraphInstantiate(ctypes.byref(exe), graph, 0)
        return exe

    def _replay(self, exe):
        self._lat(self.LAUNCH_NS)
        self.rt.cudaGraphLaunch(exe, self.stream)
        self._sync(self.STEP_SYNC_NS // 4)

    def graph_replay_step(self):
        if self.exec is None:
            self.exec = self._capture()
        self._replay(self.exec)

    def graph_recapture_step(self):
        exe = self._capture()
        self._replay(exe)
        self.rt.cudaGraphExecDestroy(exe)

    def make_batch(self, checksum):
        return checksum

    def token(self, context):
        self._launches(6)
        self._sync(300_000)
        return (sum(context) * 31 + len(context)) % 50000


class TorchBackend:
    """Real PyTorch on the first CUDA device: an MLP training step, tiny kernels, CUDA graphs
    (torch.cuda.graph: cudaStreamBeginCapture / EndCapture / GraphInstantiateWithFlags /
    GraphLaunch in libcudart) and a small transformer for the inference phase."""

    def __init__(self):
        import torch

        self.torch = torch
        if not torch.cuda.is_available():
            raise SystemExit("torch.cuda.is_available() is False: no usable GPU")
        self.dev = torch.device("cuda")
        torch.manual_seed(0)
        self.model = torch.nn.Sequential(
            torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096), torch.nn.GELU(),
            torch.nn.Linear(4096, 1024)).to(self.dev)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.batch = torch.randn(512, 1024).pin_memory()
        self.tiny = torch.zeros(256, device=self.dev)
        self.g_in = torch.randn(256, 1024, device=self.dev)
        self.g_w = torch.randn(1024, 1024, device=self.dev)
        self.graph = None
        self.lm = None

    def warm_up(self, phase):
        if phase == "inference":
            self.token([1, 2, 3])  # the model built and its kernels loaded before the tracer attaches
        for _ in range(3):
            self.train_step()
        self.tiny_kernels(64)
        # Graph capture needs its kernels warmed up on a side stream first (torch docs, "CUDA Graphs").
        s = self.torch.cuda.Stream()
        s.wait_stream(self.torch.cuda.current_stream())
        with self.torch.cuda.stream(s):
            for _ in range(3):
                self._graph_body()
        self.torch.cuda.current_stream().wait_stream(s)
        self.torch.cuda.synchronize()

    def train_step(self, batch=None):
        x = (self.batch if batch is None else batch).to(self.dev, non_blocking=True)
        loss = self.model(x).square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss.item()

    def tiny_kernels(self, n):
        for _ in range(n):
            self.tiny.add_(1.0)
        self.torch.cuda.synchronize()

    def _graph_body(self):
        y = self.g_in
        for _ in range(8):
            y = self.torch.relu(y @ self.g_w)
        return y

    def _capture(self):
        g = self.torch.cuda.CUDAGraph()
        with self.torch.cuda.graph(g):
            self.g_out = self._graph_body()
        return g

    def graph_replay_step(self):
        if self.graph is None:
            self.graph = self._capture()
        self.graph.replay()
        self.torch.cuda.synchronize()

    def graph_recapture_step(self):
        g = self._capture()  # a new shape / a compile-cache miss every step, in real life
        g.replay()
        self.torch.cuda.synchronize()
        g.reset()

    def make_batch(self, checksum):
        return self.torch.full((512, 1024), float(checksum % 7))

    def token(self, context):
        torch = self.torch
        if self.lm is None:
            layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
            self.lm = torch.nn.ModuleDict({
                "emb": torch.nn.Embedding(50000, 256), "body": torch.nn.TransformerEncoder(layer, num_layers=4),
                "head": torch.nn.Linear(256, 50000)}).to(self.dev).eval()
        with torch.no_grad():
            ids = torch.tensor([context[-128:]], device=self.dev)
            h = self.lm["body"](self.lm["emb"](ids))
            return int(self.lm["head"](h[:, -1]).argmax().item())


# ----------------------------------------------------------------------------------------------
# Slow data: what each DataLoader worker does to produce a batch.


class SlowReads:
    """Random 4 KiB reads of a file on disk: O_DIRECT where the file system allows it (the
    page cache cannot serve them), else buffered reads after dropping the file's cached pages."""

    def __init__(self, path, reads):
        self.path, self.reads = path, reads
        self.fd = None
        self.mode = None

    def _open(self):
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
            self.mode = "o_direct"
        except OSError:
            self.fd = os.open(self.path, os.O_RDONLY)
            self.mode = "buffered_fadvise_dontneed"
        self.buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT needs
        self.blocks = max(1, os.fstat(self.fd).st_size // 4096)

    def checksum(self, index):
        if self.fd is None:
            self._open()
        if self.mode != "o_direct":
            os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)
        rnd = random.Random(index)
        acc = 0
        for _ in range(self.reads):
            try:
                os.preadv(self.fd, [self.buf], rnd.randrange(self.blocks) * 4096)
            except OSError:  # O_DIRECT accepted at open but not for this read (some FUSE/overlay)
                os.close(self.fd)
                self.fd = os.open(self.path, os.O_RDONLY)
                self.mode = "buffered_fadvise_dontneed"
                os.preadv(self.fd, [self.buf], rnd.randrange(self.blocks) * 4096)
            acc ^= self.buf[0]
        return acc


def make_data_file(path, mib):
    if os.path.exists(path) and os.path.getsize(path) >= mib << 20:
        return
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())


def fake_worker(worker_id, reads, index_queue, batch_queue):
    set_comm("pt_data_worker")  # what torch.utils.data's workers call themselves
    while True:
        index = index_queue.get()
        if index is None:
            break
        batch_queue.put((index, reads.checksum(index)))


class FakeLoader:
    """torch.utils.data.DataLoader's shape without torch: forked workers, prefetch 2 per worker,
    batches back over a multiprocessing queue."""

    def __init__(self, reads, workers):
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        self.index_queues = [ctx.Queue() for _ in range(workers)]
        self.batch_queue = ctx.Queue()
        self.procs = [ctx.Process(target=fake_worker, args=(w, reads, self.index_queues[w], self.batch_queue))
                      for w in range(workers)]
        for p in self.procs:
            p.start()
        self.sent = 0
        for _ in range(2 * workers):
            self._request()

    def _request(self):
        self.index_queues[self.sent % len(self.procs)].put(self.sent)
        self.sent += 1

    def pids(self):
        return [p.pid for p in self.procs]

    def next(self):
        _, checksum = self.batch_queue.get()
        self._request()
        return checksum

    def close(self):
        for q in self.index_queues:
            q.put(None)
        for p in self.procs:
            p.join(10)
            if p.is_alive():
                p.kill()


class TorchLoader:
    def __init__(self, backend, reads, workers):
        import torch.utils.data as tud

        class Batches(tud.Dataset):
            def __len__(self):
                return 1 << 30

            def __getitem__(self, i):
                return backend.make_batch(reads.checksum(i))

        self.loader = tud.DataLoader(Batches(), batch_size=None, num_workers=workers, prefetch_factor=2,
                                     multiprocessing_context="fork")
        self.it = iter(self.loader)

    def pids(self):
        return [w.pid for w in getattr(self.it, "_workers", [])]

    def next(self):
        return next(self.it)

    def close(self):
        self.it._shutdown_workers()


# ----------------------------------------------------------------------------------------------
# Phases: each returns what the verdict needs to know.


def set_own_session_nice(nice):
    """This process in a session of its own, its autogroup and itself at `nice` (the hog and the
    loader workers it forks inherit them). With sched autogroup (/proc/sys/kernel/sched_autogroup_enabled)
    nice only ranks tasks inside one session: on a busy host a compiler in another session took
    the tiny-kernel loop's CPU as often as it liked, and launch_bound read as cpu_contention. The
    same remedy as tests/testprogs/cw_workload.cpp set_nice."""
    if nice == 0:
        return
    try:
        os.setsid()
    except OSError:  # a process group leader keeps its session
        pass
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except OSError as e:  # not root: the workload runs at the nice it has
        print("gpu_workload: --nice %d: %s" % (nice, e), file=sys.stderr)


def loop_for(seconds, step):
    deadline, steps = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        step()
        steps += 1
    return steps


def spin_hog(cpu, delay_s, seconds):
    """Forks the hog: named cw_hog, nice -20 (it takes its CPU from every nice-0 task there, so
    it is the one culprit even on a host busy with other work), pinned to cpu."""
    pid = os.fork()
    if pid == 0:
        try:
            set_comm("cw_hog")
            os.sched_setaffinity(0, {cpu})
            try:
                os.nice(-20)
            except OSError:  # not root: a nice-0 hog still takes half the CPU
                pass
            time.sleep(delay_s)
            end = time.monotonic() + seconds
            x = 0
            while time.monotonic() < end:
                x += 1
        finally:
            os._exit(0)
    return pid


def phase_cpu_hog(b, args):
    hog = spin_hog(args.cpu, args.seconds * 0.15, args.seconds * 0.7)
    steps = loop_for(args.seconds, b.train_step)
    os.waitpid(hog, 0)
    return {"hog_pid": hog, "cpu": args.cpu, "steps": steps}


def phase_dataloader(b, args):
    reads = SlowReads(args.data, args.reads_per_batch)
    loader = FakeLoader(reads, args.workers) if isinstance(b, FakeBackend) else TorchLoader(b, reads, args.workers)
    steps = 0
    try:
        steps = loop_for(args.seconds, lambda: b.train_step(loader.next()))
        pids = loader.pids()
    finally:
        loader.close()
    probe = SlowReads(args.data, 1)
    probe.checksum(0)
    return {"worker_pids": pids, "steps": steps, "read_mode": probe.mode, "reads_per_batch": args.reads_per_batch}


def phase_launch_bound(b, args):
    steps = loop_for(args.seconds, lambda: b.tiny_kernels(32))
    return {"steps": steps, "launches": steps * 32}


def phase_graph_replay(b, args):
    return {"steps": loop_for(args.seconds, b.graph_replay_step)}


def phase_graph_recapture(b, args):
    return {"steps": loop_for(args.seconds, b.graph_recapture_step)}


def phase_inference(b, args):
    """An HTTP/1.1 server streaming each generated token as an SSE `data:` event (chunked), and a
    client process sending --requests requests one after another over one keep-alive connection."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            prompt = [ord(c) % 50000 for c in body.get("prompt", "hi")]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            ctx = list(prompt)
            for _ in range(int(body.get("max_tokens", 16))):
                tok = b.token(ctx)
                ctx.append(tok)
                self._chunk(b"data: " + json.dumps({"token": tok}).encode() + b"\n\n")
            self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _chunk(self, data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    client = subprocess.run([sys.executable, os.path.abspath(__file__), "--phase", "client", "--port", str(port),
                             "--requests", str(args.requests)], capture_output=True, text=True, timeout=args.seconds + 60)
    server.shutdown()
    done = json.loads(client.stdout or "{}")
    return {"server_pid": os.getpid(), "port": port, "sent": args.requests, "completed": done.get("completed", 0),
            "events": done.get("events", 0), "client_rc": client.returncode, "client_err": client.stderr[-2000:]}


def run_client(args):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
    completed = events = 0
    for i in range(args.requests):
        body = json.dumps({"prompt": "request %d of the gpu check" % i, "max_tokens": 16})
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json", "x-request-id": "gc-%d" % i})
        resp = conn.getresponse()
        for line in resp.read().split(b"\n"):
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                events += 1
        completed += resp.status == 200
    print(json.dumps({"completed": completed, "events": events}))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--phase", choices=PHASES + ["client"], required=True)
    p.add_argument("--backend", choices=["torch", "fake"], default="torch")
    p.add_argument("--cudart", help="fake backend: the fake libcudart.so.13")
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--cpu", type=int, default=-1, help="pin to this CPU (default: the last allowed one)")
    p.add_argument("--data", help="dataloader: the file the workers read")
    p.add_argument("--data-mib", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--reads-per-batch", type=int, default=64)
    p.add_argument("--requests", type=int, default=20)
    p.add_argument("--port", type=int)
    p.add_argument("--ready-file")
    p.add_argument("--wait-file")
    p.add_argument("--wait-timeout", type=float, default=180)
    p.add_argument("--result", help="write the phase's JSON result here")
    p.add_argument("--nice", type=int, default=0,
                   help="run in a session of its own at this nice (root: below 0 it outranks a busy host's other sessions)")
    args = p.parse_args()
    if args.phase == "client":
        return run_client(args)
    set_own_session_nice(args.nice)
    if args.cpu < 0:
        args.cpu = max(os.sched_getaffinity(0))
    # cpu_hog pins the trainer, before the libraries start their threads (every thread of the
    # process shares the hog's CPU); the other phases let the scheduler place it, as users do.
    if args.phase == "cpu_hog":
        os.sched_setaffinity(0, {args.cpu})
    if args.phase == "dataloader":
        if not args.data:
            p.error("--phase dataloader needs --data")
        make_data_file(args.data, args.data_mib)
    if args.backend == "fake":
        if not args.cudart:
            p.error("--backend fake needs --cudart")
        b = FakeBackend(args.cudart)
    else:
        b = TorchBackend()
    t0 = time.monotonic()
    b.warm_up(args.phase)
    warm_s = time.monotonic() - t0
    if args.ready_file:
        with open(args.ready_file + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(args.ready_file + ".tmp", args.ready_file)
    if args.wait_file:
        deadline = time.monotonic() + args.wait_timeout
        while not os.path.exists(args.wait_file):
            if time.monotonic() > deadline:
                raise SystemExit("no %s after %.0f s" % (args.wait_file, args.wait_timeout))
            time.sleep(0.005)
    t1 = time.monotonic()
    result = globals()["phase_" + args.phase](b, args)
    result.update({"phase": args.phase, "backend": args.backend, "pid": os.getpid(), "cpu": args.cpu,
                   "warm_up_s": round(warm_s, 3), "run_s": round(time.monotonic() - t1, 3)})
    if args.backend == "torch":
        import torch
        result.update({"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0)})
    text = json.dumps(result)
    print(text, flush=True)
    if args.result:
        with open(args.result, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
