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
  // Each worker's batches, in order: when each is ready.
  std::array<std::vector<int64_t>, kWorkers> ready;
  int64_t sector = 1 << 24;
  for (int k = 0; k < kWorkers; ++k) {
    const uint32_t pid = kFirstWorker + static_cast<uint32_t>(k);
    const int32_t cpu = 4 + k;
    c.b.process(pid, sp.pid, "pt_data_worker", "python3 train.py --config configs/llama-7b.yaml", "/usr/bin/python3.11", c.t0,
                end, 0x2a1f, "", "/user.slice/user-1000.slice/session-3.scope");
    const double read_ms = k == 0 ? 110 : 75;
    int64_t t = c.t0 + static_cast<int64_t>(k) * 6 * kMs;
    while (t < end) {
      const int64_t read = c.rng.around(read_ms * kMs, 0.1);
      c.b.block(pid, pid, cpu, t, t + read, kUninterruptible, 0, 0);
      // The reads that put it in D: 128 KiB requests back to back on the NVMe device.
      for (int64_t r = t + 20 * kUs; r < t + read - 600 * kUs; r += c.rng.uniform_ns(2 * kMs, 4 * kMs))
        c.b.host_event(pid, pid, CW_OP_BLOCK_RQ, r, c.rng.uniform_ns(1500 * kUs, 2500 * kUs), {131072, kNvme, (sector += 256), 0});
      t += read + c.rng.around(20 * kMs, 0.1);  // decode on-CPU
      ready[static_cast<size_t>(k)].push_back(t);
      t += 50 * kUs;
    }
  }
  int64_t t = c.t0 + 5 * kMs;
  for (size_t n = 0; t < end && !c.stopped(); ++n) {
    const size_t k = n % kWorkers;
    if (n / kWorkers >= ready[k].size()) break;
    const int64_t batch = ready[k][n / kWorkers];
    const uint32_t worker = kFirstWorker + static_cast<uint32_t>(k);
    if (batch > t + 20 * kUs) {
      // Blocked in the queue's get(): the worker's pipe write wakes it.
      c.b.block(sp.tid, sp.pid, sp.cpu, t + 10 * kUs, batch + 15 * kUs, kSleeping, worker, worker);
      t = batch + 25 * kUs;
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
