// launch_bound: the time goes into the kernel-launch API itself — many tiny kernels, launched
// no faster than the GPU runs them (its waits return at once). Reads the per-thread activity
// the correlator keeps (CorrelatorState::activity); no state of its own.
#pragma once

#include <string_view>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct SessionReport;  // diagnosis/chain_view.h

struct LaunchBound {
  static constexpr Cause id = Cause::launch_bound;
  static constexpr std::string_view name = "launch_bound";
  static void report(SessionReport& r);
};

}  // namespace causeway
