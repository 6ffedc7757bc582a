// allocator: storms of device alloc/free calls that went to the driver (the caching allocator
// released its cache and re-grew it). Observes the expensive alloc/free calls no per-call cause
// claimed and reports the periodic bursts among them.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "diagnosis/causes/cause_module.h"
#include "diagnosis/event_row.h"

namespace causeway {

struct ObserveContext;  // diagnosis/chunk_context.h
struct SessionReport;   // diagnosis/chain_view.h

struct AllocCall {
  int64_t ts = 0, dur = 0;
  uint16_t op = 0;
  uint32_t tid = 0;
  uint64_t stack = 0;
  bool claimed = false;  // recorded in call_causes (once it fell inside a storm)
};

struct Allocator {
  static constexpr Cause id = Cause::allocator;
  static constexpr std::string_view name = "allocator";
  struct State {
    std::unordered_map<uint32_t, std::vector<AllocCall>> allocs;  // pid -> expensive alloc/free calls
  };
  static void observe(State& st, const Ev& e, const ObserveContext& cx);
  // Marks the calls it claims (call_causes are written once per call), hence not const.
  static void report(SessionReport& r, State& st);
};

}  // namespace causeway
