// lock_contention: the thread slept inside the call and was woken by a sibling thread of the same
// process (it released what the call needed). Culprit: that sibling thread.
#pragma once

#include <cstdint>
#include <map>

#include "analysis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // analysis/chunk_context.h
struct Slow;
struct Ev;

struct LockContention {
  static constexpr Cause id = Cause::lock_contention;
  static constexpr std::string_view name = "lock_contention";
  struct Evidence {
    // The waking sibling threads are the chain's culprits (ChainAcc::culprits, by tid).
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  // Claims a call whose sleep, ended by sibling thread sibling_tid, won the arbitration.
  static void detect(ChunkContext& cx, const Slow& w, uint32_t sibling_tid, int64_t sibling_ns);
};

}  // namespace causeway
