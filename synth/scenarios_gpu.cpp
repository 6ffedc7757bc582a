// Scenarios where the time goes on the GPU side of the API: start-up, transfers, the
// caching allocator, and a GPU shared with another process.
#include <algorithm>

#include "bpf/events.h"
#include "synth/scenario.h"
#include "synth/trainer.h"

namespace causeway::synth {

// Process start: context creation in the first cudaMalloc, module loading on the first
// launch of each kernel; after ~2 s the job runs at its steady pace.
void scenario_cold_start(ScenarioContext& c) {
  Trainer tr(c.b, c.rng, TrainerSpec{.pid = 5301, .tid = 5301, .cpu = 1, .script = "infer.py"});
  tr.register_process(c.t0, c.t0 + c.duration);
  int64_t t = c.t0 + 40 * kMs;
  c.b.call(5301, 5301, CW_OP_CUDA_MALLOC, t, c.rng.around(420 * kMs, 0.05), {1 << 30, 0x7f3a00000000}, 0,
           tr.stack_malloc(), 1);
  t += 430 * kMs;
  // First launch of each of the 12 kernels loads its module (cubin/PTX JIT).
  for (int k = 0; k < 12; ++k) {
    int64_t dur = c.rng.uniform_ns(9 * kMs, 48 * kMs);
    c.b.call(5301, 5301, CW_OP_CUDA_LAUNCH_KERNEL, t, dur,
             {0, static_cast<int64_t>(tr.kernel_function(k)), 0, 0x55d0c0de, pack_dim3(128, 1, 1), pack_dim3(256, 1, 1)},
             0, tr.stack_launch(), 1);
    t += dur + 40 * kUs;
  }
  c.b.call(5301, 5301, CW_OP_CUDA_STREAM_SYNC, t, c.rng.around(65 * kMs), {0, 0, 0, 0x55d0c0de}, 0, tr.stack_sync(), 1);
  t += 70 * kMs;
  const int64_t end = c.t0 + c.duration;
  while (t < end && !c.stopped()) t = tr.step(t);
}

// Each step copies a 256 MiB batch from pageable memory with synchronous cudaMemcpy at
// ~6 GB/s: the copy is 90% of the step and the GPU idles meanwhile.
void scenario_memcpy_bottleneck(ScenarioContext& c) {
  Trainer tr(c.b, c.rng, TrainerSpec{.kernels = 16, .kernel_us = 180});
  tr.register_process(c.t0, c.t0 + c.duration);
  uint64_t st = c.b.stack({"libcudart.so.13!cudaMemcpy+0x4", "libtorch_cuda.so!at::native::copy_kernel_cuda+0x2d7",
                           "libtorch_python.so!THPVariable_to+0x1c3", "train.py:127 (batch.to(device))"});
  int64_t t = c.t0 + 5 * kMs;
  const int64_t end = c.t0 + c.duration;
  while (t < end && !c.stopped()) {
    constexpr int64_t kBytes = 256ll << 20;
    int64_t dur = c.rng.around(static_cast<double>(kBytes) / 6.1, 0.04);  // bytes / (6.1 B/ns)
    c.b.call(tr.spec().pid, tr.spec().tid, CW_OP_CUDA_MEMCPY, t, dur, {kBytes, 0x7f3a60000000, 1, 0}, 0, st,
             tr.spec().cpu);
    t = tr.step(t + dur + 15 * kUs);
  }
}

// torch.cuda.empty_cache() every ~2 s: the cache is released (cudaFree storm, each one
// synchronizing the device) and re-grown (cudaMalloc storm) in the steps after.
void scenario_periodic_spike(ScenarioContext& c) {
  Trainer tr(c.b, c.rng, TrainerSpec{});
  tr.register_process(c.t0, c.t0 + c.duration);
  int64_t t = c.t0 + 5 * kMs;
  const int64_t end = c.t0 + c.duration;
  int64_t next_flush = c.t0 + 2 * kSec;
  int regrow = 0;
  while (t < end && !c.stopped()) {
    if (t >= next_flush) {
      for (int i = 0; i < 28; ++i) {
        int64_t dur = c.rng.uniform_ns(0.6 * kMs, 2.4 * kMs);
        c.b.call(tr.spec().pid, tr.spec().tid, CW_OP_CUDA_FREE, t, dur, {0, 0x7f3c00000000 + (int64_t{i} << 26)}, 0,
                 tr.stack_free(), tr.spec().cpu);
        t += dur + 8 * kUs;
      }
      next_flush += c.rng.uniform_ns(1.9 * kSec, 2.1 * kSec);
      regrow = 28;
    }
    // Normal steps allocate from the cache (no cudaMalloc); after a flush each step
    // re-grows a few blocks through cudaMalloc at 1–6 ms each.
    for (int i = 0; i < 4 && regrow > 0; ++i, --regrow) {
      int64_t dur = c.rng.uniform_ns(1 * kMs, 6 * kMs);
      c.b.call(tr.spec().pid, tr.spec().tid, CW_OP_CUDA_MALLOC, t, dur, {int64_t{64} << 20, 0x7f3c00000000}, 0,
               tr.stack_malloc(), tr.spec().cpu);
      t += dur + 10 * kUs;
    }
    // Steady-state: the odd small cudaMalloc served fast.
    if (c.rng.chance(0.05)) {
      int64_t dur = c.rng.around(45 * kUs);
      c.b.call(tr.spec().pid, tr.spec().tid, CW_OP_CUDA_MALLOC, t, dur, {2 << 20, 0x7f3d00000000}, 0, tr.stack_malloc(),
               tr.spec().cpu);
      t += dur + 10 * kUs;
    }
    t = tr.step(t);
  }
}

// An inference server shares the trainer's GPU (time slicing). While it serves a burst,
// the trainer's syncs take 2–3x longer although its thread stays on-CPU, spinning.
void scenario_gpu_steal(ScenarioContext& c) {
  constexpr uint32_t kServerPid = 5120;
  Trainer tr(c.b, c.rng, TrainerSpec{});
  tr.register_process(c.t0, c.t0 + c.duration);
  // The server runs in its own container on the same host: a Kubernetes pod (containerd).
  c.b.process(kServerPid, 1, "VLLM::EngineCor", "python3 -m vllm.entrypoints.openai.api_server --model llama-3-8b",
              "/usr/bin/python3.11", c.t0, c.t0 + c.duration, 0x3c41, "3f9a2b7c1d0e5a6b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6",
              "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7c2e9a41_5d3b_4f1e_9a0c_2b8d6e4f1a37.slice/"
              "cri-containerd-3f9a2b7c1d0e5a6b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6.scope");
  uint64_t st_server = c.b.stack({"libcuda.so.1!cuLaunchKernel+0x4", "libtorch_cuda.so!at::cuda::launch_kernel+0x51",
                                  "vllm/_C.abi3.so!paged_attention_v2+0x3e1", "vllm/worker/model_runner.py:1450 (execute_model)"});
  int64_t t = c.t0 + 5 * kMs;
  const int64_t end = c.t0 + c.duration;
  // Bursts: 1.5 s of serving every 4 s.
  auto serving = [&](int64_t ts) { return (ts - c.t0) % (4 * kSec) >= 2500 * kMs; };
  int64_t server_t = c.t0 + 5 * kMs;
  while (t < end && !c.stopped()) {
    // The server's own launches (driver API, as vLLM's custom kernels do) in its bursts.
    while (server_t < t) {
      if (serving(server_t)) {
        int64_t dur = c.rng.around(6 * kUs);
        c.b.call(kServerPid, kServerPid, CW_OP_CU_LAUNCH_KERNEL, server_t, dur,
                 {0, 0x7e1100002000, 0, 0x7e11aa00, pack_dim3(64, 32, 1), pack_dim3(128, 1, 1)}, 0, st_server, 6);
        server_t += dur + c.rng.around(60 * kUs);
      } else {
        server_t += 50 * kMs;
      }
    }
    t = tr.step(t, serving(t) ? c.rng.uniform(2.2, 3.2) : 1.0);
  }
}

}  // namespace causeway::synth

namespace causeway::synth {

// vLLM/torch.compile-style CUDA graphs: the step is captured once and replayed for the first
// 8 s; then inputs arrive in shapes no captured graph covers and every step captures,
// instantiates (~6 ms) and launches a new graph, replayed once before the next replaces it.
void scenario_graph_recapture(ScenarioContext& c) {
  Trainer tr(c.b, c.rng, TrainerSpec{.script = "serve.py"});
  tr.register_process(c.t0, c.t0 + c.duration);
  const TrainerSpec& sp = tr.spec();
  constexpr int64_t kStream = 0x55d0c0de;
  const uint64_t st_capture =
      c.b.stack({"libcudart.so.13!cudaGraphInstantiateWithFlags+0x4", "libtorch_cuda.so!at::cuda::CUDAGraph::capture_end+0x1b2",
                 "libtorch_python.so!THCPGraph_capture_end+0x3c", "torch/cuda/graphs.py:94 (capture_end)",
                 "serve.py:211 (run_with_graph: g.replay() after a new shape)"});
  const uint64_t st_launch = c.b.stack({"libcudart.so.13!cudaGraphLaunch+0x4", "libtorch_cuda.so!at::cuda::CUDAGraph::replay+0x5e",
                                        "torch/cuda/graphs.py:112 (replay)", "serve.py:214 (run_with_graph: g.replay())"});
  int64_t next_graph = 0x7f4a10000000;
  // Exec handles come back: the exec destroyed before a re-capture leaves its memory to the
  // next one (PyTorch on an H100 built 1,278 execs on 381 handles in 6 s), so three rotate.
  constexpr int64_t kExecBase = 0x7f4a20000000;
  int64_t exec = 0, builds = 0;
  auto capture = [&](int64_t t) {
    c.b.call(sp.pid, sp.tid, CW_OP_CUDA_STREAM_BEGIN_CAPTURE, t, c.rng.around(6 * kUs), {0, 0, 0, kStream}, 0, 0, sp.cpu);
    t += 10 * kUs;
    for (int k = 0; k < sp.kernels; ++k) {  // recorded into the graph, not run
      const int64_t d = c.rng.around(sp.launch_us * kUs);
      c.b.call(sp.pid, sp.tid, CW_OP_CUDA_LAUNCH_KERNEL, t, d,
               {0, static_cast<int64_t>(tr.kernel_function(k % 12)), 0, kStream, pack_dim3(256, 1, 1), pack_dim3(256, 1, 1)}, 0,
               tr.stack_launch(), sp.cpu);
      t += d + c.rng.around(3 * kUs);
    }
    const int64_t graph = (next_graph += 0x1000);
    const int64_t end_dur = c.rng.around(1800 * kUs, 0.1);
    c.b.call(sp.pid, sp.tid, CW_OP_CUDA_STREAM_END_CAPTURE, t, end_dur, {0, 0, graph, kStream}, 0, 0, sp.cpu);
    t += end_dur + 5 * kUs;
    exec = kExecBase + 0x1000 * (builds++ % 3);
    const int64_t inst = c.rng.around(4200 * kUs, 0.1);
    c.b.call(sp.pid, sp.tid, CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS, t, inst, {0, exec, graph}, 0, st_capture, sp.cpu);
    return t + inst + 5 * kUs;
  };
  int64_t t = capture(c.t0 + 5 * kMs);
  const int64_t dynamic_from = c.t0 + std::min<int64_t>(8 * kSec, c.duration / 3);
  const int64_t end = c.t0 + c.duration;
  int64_t gpu_done = 0;
  while (t < end && !c.stopped()) {
    if (t >= dynamic_from) t = capture(t);
    const int64_t d = c.rng.around(9 * kUs);
    c.b.call(sp.pid, sp.tid, CW_OP_CUDA_GRAPH_LAUNCH, t, d, {0, exec, 0, kStream}, 0, st_launch, sp.cpu);
    gpu_done = std::max(gpu_done, t + d) + c.rng.around(static_cast<double>(sp.kernels) * sp.kernel_us * kUs * 0.8);
    t += d + 15 * kUs;
    const int64_t sync_end = std::max(gpu_done, t + 3 * kUs) + 2 * kUs;
    tr.sync(t, sync_end);
    t = tr.tail(sync_end);
  }
}

}  // namespace causeway::synth
