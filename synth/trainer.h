// A PyTorch-like training step on one thread: H2D copy of the batch, a burst of kernel
// launches, a stream sync that waits for the GPU, then host-side Python work. Scenarios
// perturb it (preemption inside the sync, slow copies, allocator storms, …).
#pragma once

#include <cstdint>
#include <string>

#include "synth/demo_builder.h"

namespace causeway::synth {

struct TrainerSpec {
  uint32_t pid = 4821;
  uint32_t tid = 4821;
  int32_t cpu = 3;
  int kernels = 24;
  double kernel_us = 110;      // GPU time per kernel
  double launch_us = 5;        // host time per launch call
  double gap_us = 22;          // Python between launches
  int64_t batch_bytes = 8 << 20;
  double tail_us = 420;        // optimizer bookkeeping, logging after the sync
  std::string script = "train.py";
};

struct StepTimes {
  int64_t sync_start = 0;
  int64_t gpu_done = 0;
};

class Trainer {
 public:
  Trainer(DemoBuilder& b, Rng& rng, TrainerSpec spec);

  const TrainerSpec& spec() const { return spec_; }

  // Copy + launches from t; `gpu_slowdown` stretches kernel time (a shared GPU).
  StepTimes launch_phase(int64_t t, double gpu_slowdown = 1.0);
  // The sync call over [start, end].
  void sync(int64_t start, int64_t end);
  // A whole undisturbed step from t; returns when the next one starts.
  int64_t step(int64_t t, double gpu_slowdown = 1.0);
  // The sync's natural end for a step (GPU done, or a few µs after start).
  int64_t natural_sync_end(const StepTimes& s) const;
  // Python work after the sync; returns the start of the next step.
  int64_t tail(int64_t sync_end);

  uint64_t stack_sync() const { return st_sync_; }
  uint64_t stack_launch() const { return st_launch_; }
  uint64_t stack_copy() const { return st_copy_; }
  uint64_t stack_malloc() const { return st_malloc_; }
  uint64_t stack_free() const { return st_free_; }
  uint64_t stack_host_alloc() const { return st_host_alloc_; }
  uint64_t kernel_function(int i) const { return 0x7f3a40001000ULL + static_cast<uint64_t>(i) * 0x140; }

  // The process row for this trainer.
  void register_process(int64_t first_ns, int64_t last_ns, const std::string& comm = "python3");

 private:
  DemoBuilder& b_;
  Rng& rng_;
  TrainerSpec spec_;
  int64_t gpu_busy_until_ = 0;
  uint64_t st_sync_, st_launch_, st_copy_, st_malloc_, st_free_, st_host_alloc_;
};

}  // namespace causeway::synth
