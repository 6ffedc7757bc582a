// Scenarios where the host steals time from a GPU job: CPU contention, I/O, memory, locks.
#include <algorithm>

#include "bpf/events.h"
#include "synth/scenario.h"
#include "synth/trainer.h"

namespace causeway::synth {

void noise_preempt(ScenarioContext& c, uint32_t tid, uint32_t pid, int32_t cpu, int64_t from, int64_t until) {
  if (until - from < 200 * kUs || !c.rng.chance(0.03)) return;
  int64_t start = from + c.rng.uniform_ns(0, static_cast<double>(until - from - 150 * kUs));
  c.b.preempt(tid, pid, cpu, start, start + c.rng.uniform_ns(15 * kUs, 90 * kUs), kKworkerPid, kKworkerPid);
}

namespace {

void register_kworker(ScenarioContext& c) {
  c.b.process(kKworkerPid, 2, "kworker/3:1", "", "", c.t0, c.t0 + c.duration);
}

// Runs the trainer loop; `perturb` may replace the sync of a step (returns the sync end,
// or 0 to keep the natural one).
template <typename Perturb>
void train_loop(ScenarioContext& c, Trainer& tr, Perturb perturb) {
  int64_t t = c.t0 + 5 * kMs;
  const int64_t end = c.t0 + c.duration;
  while (t < end && !c.stopped()) {
    StepTimes s = tr.launch_phase(t);
    int64_t natural = tr.natural_sync_end(s);
    int64_t sync_end = perturb(s, natural);
    if (sync_end == 0) sync_end = natural;
    tr.sync(s.sync_start, sync_end);
    int64_t next = tr.tail(sync_end);
    noise_preempt(c, tr.spec().tid, tr.spec().pid, tr.spec().cpu, sync_end + 5 * kUs, next - 5 * kUs);
    t = next;
  }
}

}  // namespace

void steady_training(ScenarioContext& c, const TrainerSpec& spec) {
  register_kworker(c);
  Trainer tr(c.b, c.rng, spec);
  tr.register_process(c.t0, c.t0 + c.duration);
  train_loop(c, tr, [](const StepTimes&, int64_t) { return int64_t{0}; });
}

void scenario_quiet(ScenarioContext& c) { steady_training(c, TrainerSpec{}); }

// `tar` compresses a checkpoint on the trainer's CPU: while it runs, 45% of the syncs find
// the trainer thread preempted (runnable, off-CPU) when the GPU is already done.
void scenario_incident(ScenarioContext& c) {
  register_kworker(c);
  constexpr uint32_t kTarPid = 991;
  Trainer tr(c.b, c.rng, TrainerSpec{});
  tr.register_process(c.t0, c.t0 + c.duration);
  c.b.process(kTarPid, 1, "tar", "tar czf /ckpt/epoch3.tgz /ckpt/epoch3", "/usr/bin/tar", c.t0, c.t0 + c.duration, 0x2b07, "",
              "/system.slice/backup.service");
  // tar runs in a window per minute of data: [25%, 75%) of each 60 s (of the whole if shorter).
  const int64_t period = std::min<int64_t>(c.duration, 60 * kSec);
  train_loop(c, tr, [&](const StepTimes& s, int64_t natural) -> int64_t {
    int64_t phase = (s.sync_start - c.t0) % period;
    bool tar_active = phase >= period / 4 && phase < period * 3 / 4;
    if (!tar_active || !c.rng.chance(0.45)) return 0;
    int64_t from = s.sync_start + c.rng.uniform_ns(20 * kUs, 400 * kUs);
    int64_t to = from + c.rng.uniform_ns(8 * kMs, 35 * kMs);
    c.b.preempt(tr.spec().tid, tr.spec().pid, tr.spec().cpu, from, to, kTarPid, kTarPid);
    return std::max(natural, to + 3 * kUs);
  });
}

// The trainer reads its dataset through mmap: when `updatedb` scans the same disk, page
// faults inside cudaMemcpy (pageable source) wait in D state for reads that queue behind it.
void scenario_io_stall(ScenarioContext& c) {
  register_kworker(c);
  constexpr uint32_t kUpdatedbPid = 2210, kIoWorkerPid = 215;
  constexpr int64_t kDev = (8 << 20) | 0;  // 8:0
  Trainer tr(c.b, c.rng, TrainerSpec{});
  tr.register_process(c.t0, c.t0 + c.duration);
  c.b.process(kUpdatedbPid, 1, "updatedb.mlocat", "/usr/bin/updatedb.mlocate", "/usr/bin/updatedb.mlocate", c.t0,
              c.t0 + c.duration);
  c.b.process(kIoWorkerPid, 2, "kworker/u16:1", "", "", c.t0, c.t0 + c.duration);
  uint64_t st_copy = c.b.stack({"libcudart.so.13!cudaMemcpy+0x4", "libtorch_cuda.so!at::native::copy_kernel_cuda+0x2d7",
                                "libtorch_python.so!THPVariable_to+0x1c3", "train.py:127 (batch.to(device))"});
  const int64_t period = std::min<int64_t>(c.duration, 60 * kSec);
  int64_t t = c.t0 + 5 * kMs;
  const int64_t end = c.t0 + c.duration;
  int64_t sector = 1 << 20;
  while (t < end && !c.stopped()) {
    int64_t phase = (t - c.t0) % period;
    bool scan = phase >= period / 3 && phase < period * 5 / 6;
    // updatedb's own reads: a steady stream while it scans.
    if (scan)
      for (int i = 0; i < 6; ++i) {
        int64_t ts = t + c.rng.uniform_ns(0, 3 * kMs);
        c.b.host_event(kUpdatedbPid, kUpdatedbPid, CW_OP_BLOCK_RQ, ts, c.rng.uniform_ns(2 * kMs, 9 * kMs),
                       {16384, kDev, (sector += 97), 0});
      }
    // The dataset copy: 64 MiB pageable HtoD, ~8 ms when resident.
    int64_t copy_start = t;
    int64_t copy_dur = c.rng.around(8 * kMs, 0.05);
    if (scan && c.rng.chance(0.35)) {
      int64_t fault_at = copy_start + c.rng.uniform_ns(200 * kUs, 2 * kMs);
      int64_t wait = c.rng.uniform_ns(18 * kMs, 60 * kMs);
      // The fault's reads: some issued by the trainer, readahead by a kernel worker.
      c.b.host_event(tr.spec().pid, tr.spec().tid, CW_OP_BLOCK_RQ, fault_at + 10 * kUs, wait - 40 * kUs,
                     {131072, kDev, (sector += 4096), 0});
      c.b.host_event(kIoWorkerPid, kIoWorkerPid, CW_OP_BLOCK_RQ, fault_at + 30 * kUs, wait - 80 * kUs,
                     {262144, kDev, (sector += 4096), 0});
      c.b.block(tr.spec().tid, tr.spec().pid, tr.spec().cpu, fault_at, fault_at + wait, kUninterruptible, 0, 0);
      copy_dur += wait;
    }
    c.b.call(tr.spec().pid, tr.spec().tid, CW_OP_CUDA_MEMCPY, copy_start, copy_dur, {64 << 20, 0x7f3a60000000, 1, 0},
             0, st_copy, tr.spec().cpu);
    t = tr.step(copy_start + copy_dur + 30 * kUs);
  }
}

// `java` allocates memory fast; the trainer's pinned-buffer allocations (cudaMallocHost)
// stall in direct reclaim (D state) until the OOM killer ends java.
void scenario_oom(ScenarioContext& c) {
  register_kworker(c);
  constexpr uint32_t kJavaPid = 7702;
  Trainer tr(c.b, c.rng, TrainerSpec{});
  tr.register_process(c.t0, c.t0 + c.duration);
  const int64_t pressure_from = c.t0 + c.duration / 4;
  const int64_t oom_at = c.t0 + c.duration * 3 / 4;
  c.b.process(kJavaPid, 1, "java", "java -Xmx64g -jar feature-etl.jar", "/usr/lib/jvm/java-17/bin/java", c.t0, oom_at,
              0x3b02, "");
  int64_t t = c.t0 + 5 * kMs;
  const int64_t end = c.t0 + c.duration;
  int64_t next_sample = c.t0;
  int step = 0;
  bool killed = false;
  while (t < end && !c.stopped()) {
    bool pressure = t >= pressure_from && t < oom_at;
    // Page allocation, aggregated per 100 ms per process as the kernel side does.
    while (next_sample <= t) {
      if (next_sample < oom_at)
        c.b.host_event(kJavaPid, kJavaPid, CW_OP_PAGE_ALLOC, next_sample, 100 * kMs,
                       {pressure ? c.rng.uniform_ns(180000, 260000) : c.rng.uniform_ns(2000, 6000), 3});
      c.b.host_event(tr.spec().pid, tr.spec().tid, CW_OP_PAGE_ALLOC, next_sample, 100 * kMs,
                     {c.rng.uniform_ns(500, 1500), 0});
      next_sample += 100 * kMs;
    }
    if (!killed && t >= oom_at) {
      c.b.host_event(kJavaPid, kJavaPid, CW_OP_OOM_KILL, t, 0, {kJavaPid, 16 << 18});
      c.b.host_event(kJavaPid, kJavaPid, CW_OP_PROC_EXIT, t + 2 * kMs, 0, {137});
      killed = true;
    }
    if (++step % 20 == 0) {
      // Re-pin a 256 MiB staging buffer: ~30 ms normally, far longer under reclaim.
      int64_t dur = c.rng.around(30 * kMs, 0.1);
      if (pressure) {
        int64_t from = t + 2 * kMs;
        int64_t stall = c.rng.uniform_ns(150 * kMs, 600 * kMs);
        c.b.block(tr.spec().tid, tr.spec().pid, tr.spec().cpu, from, from + stall, kUninterruptible, 0, 0);
        dur += stall;
      }
      c.b.call(tr.spec().pid, tr.spec().tid, CW_OP_CUDA_MALLOC_HOST, t, dur, {256 << 20, 0x7f3b00000000}, 0,
               tr.stack_host_alloc(), tr.spec().cpu);
      t += dur + 20 * kUs;
    }
    t = tr.step(t);
  }
}

// A sibling thread (`pt_checkpoint`) holds the caching allocator's mutex while it copies
// a checkpoint; the main thread's cudaMalloc blocks (S) until that thread wakes it.
void scenario_lock_contention(ScenarioContext& c) {
  register_kworker(c);
  constexpr uint32_t kSiblingTid = 4830;
  Trainer tr(c.b, c.rng, TrainerSpec{});
  tr.register_process(c.t0, c.t0 + c.duration);
  c.b.thread(kSiblingTid, tr.spec().pid, "pt_checkpoint");
  const int64_t period = std::min<int64_t>(c.duration, 60 * kSec);
  int64_t t = c.t0 + 5 * kMs;
  const int64_t end = c.t0 + c.duration;
  while (t < end && !c.stopped()) {
    int64_t phase = (t - c.t0) % period;
    bool saving = phase >= period / 5 && phase < period * 4 / 5;
    // Every step allocates activations: ~15 µs when the allocator lock is free.
    int64_t dur = c.rng.around(15 * kUs);
    if (saving && c.rng.chance(0.4)) {
      int64_t from = t + 6 * kUs;
      int64_t held = c.rng.uniform_ns(6 * kMs, 28 * kMs);
      c.b.block(tr.spec().tid, tr.spec().pid, tr.spec().cpu, from, from + held, kSleeping, kSiblingTid,
                tr.spec().pid);
      dur += held;
    }
    c.b.call(tr.spec().pid, tr.spec().tid, CW_OP_CUDA_MALLOC, t, dur, {32 << 20, 0x7f3c00000000}, 0,
             tr.stack_malloc(), tr.spec().cpu);
    t = tr.step(t + dur + 10 * kUs);
  }
}

}  // namespace causeway::synth
