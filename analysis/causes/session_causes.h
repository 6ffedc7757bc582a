// Causes found over the whole session from their own accumulators rather than per slow call.
// Each writes its chain documents into the SessionReport (chain_view.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/causes/cause_module.h"

namespace causeway {

// nccl_straggler: the rank that enters collectives last (analysis/collectives.h groups them).
struct NcclStraggler {
  static constexpr Cause id = Cause::nccl_straggler;
  static constexpr std::string_view name = "nccl_straggler";
  static void report(SessionReport& r);
};
// Its chain id: the waits it causes on other ranks are claimed under it (call_causes).
std::string nccl_straggler_chain_id(int64_t session_id, uint32_t straggler_pid, int64_t comm);

// transfer_bound: synchronous copies take a large share of a thread's active time.
struct TransferBound {
  static constexpr Cause id = Cause::transfer_bound;
  static constexpr std::string_view name = "transfer_bound";
  static void report(SessionReport& r);
};

// allocator: storms of device alloc/free calls that went to the driver (cache released).
struct Allocator {
  static constexpr Cause id = Cause::allocator;
  static constexpr std::string_view name = "allocator";
  static void report(SessionReport& r);
};

// host_bound: a thread that drives the GPU spends most of its time on-CPU between its CUDA
// calls while its GPU waits return at once: the GPU waits for the host (Python overhead, CPU
// preprocessing), no other process to blame.
struct HostBound {
  static constexpr Cause id = Cause::host_bound;
  static constexpr std::string_view name = "host_bound";
  static void report(SessionReport& r);
};

// launch_bound: the time goes into the kernel-launch API itself — many tiny kernels, launched
// no faster than the GPU runs them (its waits return at once).
struct LaunchBound {
  static constexpr Cause id = Cause::launch_bound;
  static constexpr std::string_view name = "launch_bound";
  static void report(SessionReport& r);
};

// graph_recapture: CUDA graphs captured and instantiated again and again after graphs are in
// use (dynamic shapes, compile-cache misses), each replayed only a few times.
struct GraphRecapture {
  static constexpr Cause id = Cause::graph_recapture;
  static constexpr std::string_view name = "graph_recapture";
  static void report(SessionReport& r);
};

}  // namespace causeway
