// transfer_bound: synchronous copies take a large share of a thread's active time. Observes
// every synchronous copy (its time on-CPU or asleep in the driver, bytes, kind, call site) and
// reports, per (thread, copy op), against the thread's span (CorrelatorState::activity).
#pragma once

#include <cstdint>
#include <map>
#include <string_view>

#include "diagnosis/causes/cause_module.h"
#include "diagnosis/event_row.h"

namespace causeway {

struct ObserveContext;  // diagnosis/chunk_context.h
struct SessionReport;   // diagnosis/chain_view.h

struct TransferAcc {
  uint32_t pid = 0, tid = 0;
  uint16_t op = 0;
  int64_t copies = 0, copy_ns = 0, bytes = 0;
  std::map<int64_t, int64_t> kinds;  // copy kind -> calls
  std::map<uint64_t, int64_t> stacks;
};

struct TransferBound {
  static constexpr Cause id = Cause::transfer_bound;
  static constexpr std::string_view name = "transfer_bound";
  struct State {
    std::map<uint64_t, TransferAcc> transfers;  // (tid, op)
  };
  static void observe(State& st, const Ev& e, const ObserveContext& cx);
  static void report(SessionReport& r, const State& st);
};

}  // namespace causeway
