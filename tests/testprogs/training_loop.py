#!/usr/bin/env python3
"""A PyTorch-shaped training loop over libcudart (the project's fake one, or a real one) for
causeway's live diagnosis tests — real CPython, real processes, real disk reads:

  training_loop.py --cudart LIB --mode dataloader --data FILE --workers 2 --reads-per-batch 32 --seconds 3
      DataLoader workers (forked, named pt_data_worker like PyTorch's) each read a batch with
      random 4 KiB O_DIRECT reads of FILE and put it on a multiprocessing queue; the loop blocks
      in queue.get() between steps: the GPU starves for data.
  training_loop.py --cudart LIB --mode host-bound --work 40000
      the loop's own Python work (an augmentation in the main process) dominates each step.

Each step is the GPU side of a training step: the batch's H2D copy, a few kernel launches and
a stream sync (loss.item()). --ready-file/--wait-file let a tracer attach before the work.
"""
import argparse
import ctypes
import mmap
import multiprocessing
import os
import random
import sys
import time


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def load_cudart(path):
    rt = ctypes.CDLL(path)
    rt.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    return rt


def set_process_name(name):
    """What torch.utils.data workers do: the name shows in /proc/PID/comm (prctl PR_SET_NAME)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(15, name.encode(), 0, 0, 0)


def data_worker(worker_id, path, reads, index_queue, batch_queue):
    set_process_name("pt_data_worker")
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT needs
    blocks = os.fstat(fd).st_size // 4096
    rnd = random.Random(worker_id)
    while True:
        index = index_queue.get()
        if index is None:
            break
        checksum = 0
        for _ in range(reads):
            os.preadv(fd, [buf], rnd.randrange(blocks) * 4096)
            checksum ^= buf[0]
        batch_queue.put((index, checksum))
    os.close(fd)


def train_step(rt, stream, device_buf, host_buf):
    rt.cudaMemcpyAsync(device_buf, host_buf, 4096, 1, stream)  # batch.to(device)
    for k in range(4):
        rt.cudaLaunchKernel(0xdead0000 + k, Dim3(4, 2, 1), Dim3(128, 1, 1), None, 0, stream)  # forward/backward
    return rt.cudaStreamSynchronize(stream)  # loss.item()


def augment(work):
    """CPU-side preprocessing done in the training loop itself (the host-bound case)."""
    acc = 0
    for i in range(work):
        acc += (i * i) % 7
    return acc


def wait_for_go(args):
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write(str(os.getpid()))
    if args.wait_file:
        while not os.path.exists(args.wait_file):
            time.sleep(0.005)


def run_dataloader(args, rt, stream, device_buf, host_buf):
    ctx = multiprocessing.get_context("fork")
    index_queues = [ctx.Queue() for _ in range(args.workers)]
    batch_queue = ctx.Queue()
    workers = [ctx.Process(target=data_worker, args=(w, args.data, args.reads_per_batch, index_queues[w], batch_queue))
               for w in range(args.workers)]
    for w in workers:
        w.start()
    sent = 0
    for _ in range(2 * args.workers):  # prefetch_factor 2, as DataLoader's default
        index_queues[sent % args.workers].put(sent)
        sent += 1
    deadline = time.monotonic() + args.seconds if args.seconds else None
    steps = 0
    while steps < sent:
        index, checksum = batch_queue.get()  # blocks until a worker's batch is ready
        in_time = deadline is None or time.monotonic() < deadline
        if sent < args.iterations and in_time:
            index_queues[sent % args.workers].put(sent)
            sent += 1
        train_step(rt, stream, device_buf, host_buf)
        steps += 1
    for q in index_queues:
        q.put(None)
    for w in workers:
        w.join()
    print(f"steps: {steps}", flush=True)
    return 0 if all(w.exitcode == 0 for w in workers) else 1


def run_host_bound(args, rt, stream, device_buf, host_buf):
    deadline = time.monotonic() + args.seconds if args.seconds else None
    steps = 0
    while steps < args.iterations and (deadline is None or time.monotonic() < deadline):
        augment(args.work)
        train_step(rt, stream, device_buf, host_buf)
        steps += 1
    print(f"steps: {steps}", flush=True)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cudart", required=True)
    p.add_argument("--mode", choices=["dataloader", "host-bound"], required=True)
    p.add_argument("--iterations", type=int, default=200, help="at most this many steps")
    p.add_argument("--seconds", type=float, default=0, help="stop starting new steps after this long (0: no limit)")
    p.add_argument("--data", help="file the DataLoader workers read (on a real disk)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--reads-per-batch", type=int, default=16)
    p.add_argument("--work", type=int, default=40000, help="host-bound: loop iterations of Python work per step")
    p.add_argument("--ready-file")
    p.add_argument("--wait-file")
    args = p.parse_args()
    if args.mode == "dataloader" and not args.data:
        p.error("--mode dataloader needs --data")
    rt = load_cudart(args.cudart)
    stream, device_buf = ctypes.c_void_p(0x1000), ctypes.c_void_p(0x7F0000001000)
    host_buf = ctypes.create_string_buffer(4096)
    wait_for_go(args)
    run = run_dataloader if args.mode == "dataloader" else run_host_bound
    return run(args, rt, stream, device_buf, ctypes.cast(host_buf, ctypes.c_void_p))


if __name__ == "__main__":
    sys.exit(main())
