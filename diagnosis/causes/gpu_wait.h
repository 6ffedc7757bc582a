// gpu_wait: a sync or synchronous copy that waited for the GPU with no host cause (the thread was
// on-CPU or asleep, not preempted, not in D). Culprit: another process that submitted GPU work
// during the slow syncs far more often than during normal ones (it shares the GPU). Above LOW
// only with positive GPU evidence: work queued ahead of the calls or beside them. Its State, per
// victim process, counts which other processes submitted work during its slow syncs and during
// its normal ones (observed), the baseline of the sharing test.
#pragma once

#include <cstdint>
#include <map>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;    // diagnosis/chunk_context.h
struct ObserveContext;  // diagnosis/chunk_context.h
struct Slow;
struct Ev;

struct GpuShareAcc {  // per victim pid: how often other GPU processes submitted work during its syncs
  int64_t slow = 0, normal = 0;
  std::map<uint32_t, int64_t> slow_hits, normal_hits;  // other pid -> syncs overlapped
  std::map<uint32_t, int64_t> slow_launches;           // other pid -> launches inside slow syncs
};

struct GpuWait {
  static constexpr Cause id = Cause::gpu_wait;
  static constexpr std::string_view name = "gpu_wait";
  struct Evidence {
    int64_t on_cpu_ns = 0, sleep_ns = 0;  // inside the calls this cause won
    int64_t host_ns = 0;                  // runnable or D time inside them: a host cause's, not counted as lost here
    int64_t own_submits_before = 0;       // the calling thread's GPU submissions since its previous GPU wait, each call
    // Positive GPU evidence (docs/DIAGNOSIS.md "GPU evidence"): calls, and their lost time, with
    // GPU work queued ahead of them by this process (since its previous GPU wait returned) or
    // submitted by another process during them. Without it for most of the lost time the chain
    // is never above LOW: no host cause seen is not a GPU cause seen.
    int64_t queued_calls = 0, queued_lost_ns = 0;
  };
  struct State {
    std::map<uint32_t, GpuShareAcc> gpu_share;  // victim pid -> its syncs' sharing
  };
  static Finding explain(const ChainView& v, const Evidence& e, const State& st);
  static std::string fix(const ChainView& v, const Evidence& e, const State& st);

  // Claims an outlier GPU sync or synchronous copy no host cause explains; the host time
  // inside it is not counted as lost.
  // queued_ahead: GPU operations this process submitted since its previous GPU wait returned.
  static void detect(ChunkContext& cx, const Slow& w, int64_t queued_ahead, State& st);
  // A sync that was not slow: which other processes submitted GPU work during it (the
  // baseline for the sharing test).
  static void observe(State& st, const Ev& e, const ObserveContext& cx);
};

}  // namespace causeway
