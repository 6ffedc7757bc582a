// host_bound: a thread that drives the GPU spends most of its time on-CPU between its CUDA
// calls while its GPU waits return at once: the GPU waits for the host (Python overhead, CPU
// preprocessing), no other process to blame. Reads the per-thread activity the correlator
// keeps (CorrelatorState::activity); no state of its own.
#pragma once

#include <string_view>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct SessionReport;  // diagnosis/chain_view.h

struct HostBound {
  static constexpr Cause id = Cause::host_bound;
  static constexpr std::string_view name = "host_bound";
  static void report(SessionReport& r);
};

}  // namespace causeway
