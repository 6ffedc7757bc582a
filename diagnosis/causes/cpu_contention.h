// cpu_contention: the thread was runnable but another task held its CPU (preempted, or woken and
// waiting for the CPU). Culprits: who ran on that CPU meanwhile, by stolen time.
#pragma once

#include <cstdint>
#include <map>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // diagnosis/chunk_context.h
struct Slow;
struct Ev;

struct CpuContention {
  static constexpr Cause id = Cause::cpu_contention;
  static constexpr std::string_view name = "cpu_contention";
  struct Evidence {
    int64_t preemptions = 0;  // preemptions and wakeup waits inside the slow calls
    // Time the thread's own switch records do not show (lost on a full ring) but its CPU's
    // records do: other tasks ran there while it seemed on-CPU.
    int64_t inferred_ns = 0;
    int64_t inferred_calls = 0;
    // What the tracer's own threads ran on the victim's CPU meanwhile: reported, never blamed.
    int64_t tracer_ns = 0;
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  // Claims a slow call whose runnable time won the arbitration (host_claim).
  static void detect(ChunkContext& cx, const Slow& w);
};

}  // namespace causeway
