// Scenarios where the GPU waits for the host: a DataLoader that cannot keep up, a loop whose own
// Python work dominates the step, and a loop of kernels too small for their launch cost.
#include <algorithm>
#include <array>

#include "bpf/events.h"
#include "synth/scenario.h"
#include "synth/trainer.h"

namespace causeway::synth {

// Four DataLoader workers (forked by the trainer, named pt_data_worker as PyTorch names them)
// read their samples from NVMe: each batch takes a worker ~75 ms of disk reads (D state) and
// ~20 ms of decoding, so a batch is ready every ~25 ms while a step needs 4 ms of GPU work.
// Worker 4901 reads a cold shard and takes ~110 ms per read. The trainer sleeps on the batch
// queue between steps until a worker's pipe write wakes it.
void scenario_dataloader(ScenarioContext& c) {
  constexpr int kWorkers = 4;
  constexpr uint32_t kFirstWorker = 4901;
  constexpr int64_t kNvme = (259 << 20) | 0;  // 259:0
  Trainer tr(c.b, c.rng, TrainerSpec{});
  tr.register_process(c.t0, c.t0 + c.duration);
  const TrainerSpec& sp = tr.spec();
  const int64_t end = c.t0 + c.duration;
  struct Worker {
    uint32_t pid;
    int32_t cpu;
    double read_ms;
    int64_t next = 0;              // when its next read starts
    std::vector<int64_t> ready;    // when each of its batches was ready
  };
  std::vector<Worker> workers;
  for (int k = 0; k < kWorkers; ++k) {
    const uint32_t pid = kFirstWorker + static_cast<uint32_t>(k);
    c.b.process(pid, sp.pid, "pt_data_worker", "python3 train.py --config configs/llama-7b.yaml", "/usr/bin/python3.11", c.t0,
                end, 0x2a1f, "", "/user.slice/user-1000.slice/session-3.scope");
    workers.push_back({pid, 4 + k, k == 0 ? 110.0 : 75.0, c.t0 + static_cast<int64_t>(k) * 6 * kMs, {}});
  }
  int64_t sector = 1 << 24;
  // One batch of worker w: the reads that keep it in D, then the decode on-CPU. Written as the
  // trainer reaches them, so the session's rows stay in time order as a live trace's do.
  auto produce = [&](Worker& w) {
    const int64_t t = w.next, read = c.rng.around(w.read_ms * kMs, 0.1);
    c.b.block(w.pid, w.pid, w.cpu, t, t + read, kUninterruptible, 0, 0);
    for (int64_t r = t + 20 * kUs; r < t + read - 600 * kUs; r += c.rng.uniform_ns(2 * kMs, 4 * kMs))
      c.b.host_event(w.pid, w.pid, CW_OP_BLOCK_RQ, r, c.rng.uniform_ns(1500 * kUs, 2500 * kUs), {131072, kNvme, (sector += 256), 0});
    w.ready.push_back(t + read + c.rng.around(20 * kMs, 0.1));
    w.next = w.ready.back() + 50 * kUs;
  };
  int64_t t = c.t0 + 5 * kMs;
  for (size_t n = 0; t < end && !c.stopped(); ++n) {
    Worker& w = workers[n % kWorkers];
    const size_t batch = n / kWorkers;
    for (Worker& x : workers)
      while (x.next < t && x.next < end) produce(x);
    while (w.ready.size() <= batch) produce(w);
    const int64_t ready = w.ready[batch];
    if (ready > t + 20 * kUs) {
      // Blocked in the queue's get(): the worker's pipe write wakes it.
      c.b.block(sp.tid, sp.pid, sp.cpu, t + 10 * kUs, ready + 15 * kUs, kSleeping, w.pid, w.pid);
      t = ready + 25 * kUs;
    }
    t = tr.step(t);
  }
}

// The loop's own Python work — per-sample CPU augmentation in the main process — takes ~24 ms
// of every step; the GPU finishes its 3 ms of kernels long before the sync.
void scenario_host_bound(ScenarioContext& c) { steady_training(c, TrainerSpec{.tail_us = 24000}); }

// 100 tiny kernels per step (~2 µs of GPU work each) launched at ~23 µs apiece: the GPU
// drains every kernel before the next launch arrives and the syncs return at once.
void scenario_launch_bound(ScenarioContext& c) {
  steady_training(c, TrainerSpec{.kernels = 100, .kernel_us = 2, .launch_us = 23, .gap_us = 1.5, .tail_us = 100});
}

}  // namespace causeway::synth
