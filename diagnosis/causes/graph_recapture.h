// graph_recapture: CUDA graphs captured and instantiated again and again after graphs are in
// use (dynamic shapes, compile-cache misses), each replayed only a few times. Observes every
// graph capture, instantiation and launch per process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "diagnosis/causes/cause_module.h"
#include "diagnosis/event_row.h"

namespace causeway {

struct ObserveContext;  // diagnosis/chunk_context.h
struct SessionReport;   // diagnosis/chain_view.h

// Per process: CUDA graph capture, instantiation and replay. "Steady" is after the process's
// first graph launch: captures before it are the warm-up.
struct GraphAcc {
  uint32_t tid = 0;              // the thread that instantiated last
  uint16_t instantiate_op = 0;   // the instantiation op it used
  int64_t first_launch_ns = INT64_MAX;
  int64_t launches = 0;
  int64_t warmup_instantiations = 0;
  int64_t steady_captures = 0, steady_capture_ns = 0;  // begin capture -> end capture
  int64_t steady_instantiations = 0, steady_instantiate_ns = 0;
  int64_t first_steady_ns = INT64_MAX, last_ns = INT64_MIN;
  std::map<int64_t, int64_t> open_captures;  // stream -> when its capture began
  std::set<int64_t> streams;                 // streams captured on
  // Launches of each exec built in the steady state; at most kMaxTracked execs are followed
  // (a process re-instantiating every step for hours must not grow this without bound).
  static constexpr size_t kMaxTracked = 65536;
  std::unordered_map<int64_t, int64_t> steady_exec_launches;
  // Execs built in the steady state among those followed. Not the map's size: an exec
  // destroyed and built again often gets the same handle back (PyTorch re-capturing every step
  // on an H100: 1,278 execs on 381 handles), and each build is one exec to replay.
  int64_t steady_execs_built = 0;
  std::map<uint64_t, int64_t> instantiate_stacks;
};

struct GraphRecapture {
  static constexpr Cause id = Cause::graph_recapture;
  static constexpr std::string_view name = "graph_recapture";
  struct State {
    std::map<uint32_t, GraphAcc> graphs;  // pid -> its CUDA graphs
  };
  static void observe(State& st, const Ev& e, const ObserveContext& cx);
  static void report(SessionReport& r, const State& st);
};

}  // namespace causeway
