// lock_contention: the thread slept inside the call (or between calls) and was woken by a sibling
// thread of the same process (it released what the call needed). Culprit: that sibling thread,
// never the victim thread itself.
#pragma once

#include <cstdint>
#include <map>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // diagnosis/chunk_context.h
struct Slow;
struct Ev;

struct LockContention {
  static constexpr Cause id = Cause::lock_contention;
  static constexpr std::string_view name = "lock_contention";
  struct Evidence {
    // Victim thread -> the sibling threads that woke it (pid, tid, blocked ns, calls). A chain
    // holds every thread of the process slow in that op, and threads can wake each other: the
    // culprit is the top waker *of the thread the chain reports*, which is never that thread.
    struct Waker {
      int64_t ns = 0, hits = 0;  // blocked time it ended, slow calls it ended
    };
    std::map<uint32_t, std::map<uint32_t, Waker>> wakers;
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  // Claims a call whose sleep, ended by sibling thread sibling_tid, won the arbitration.
  static void detect(ChunkContext& cx, const Slow& w, uint32_t sibling_tid, int64_t sibling_ns);
};

}  // namespace causeway
