// Timing a call that a probe may interrupt, on a busy host: what `check` and the request hook's
// choice (collector/sock_hook.h) measure a uprobe trap with.
#pragma once

#include <time.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace causeway::collector {

// ns of this thread's CPU per call of f (a trap is handled in the calling thread, so it counts;
// the time other processes take the CPU does not, on a busy host): blocks of kCalls calls, the
// median block (a block with an interrupt or a migration is dearer; the median ignores up to
// half of them). 550 calls: ~0.3 ms where a trap costs 0.5 us, ~14 ms on the 2-vCPU PVM VM
// (25 us of CPU a trap there).
template <typename F>
double time_per_call(F f) {
  constexpr int kBlocks = 11, kCalls = 50;
  const auto now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  };
  std::array<double, kBlocks> per_call{};
  for (double& b : per_call) {
    const int64_t t0 = now();
    for (int i = 0; i < kCalls; ++i) f();
    b = double(now() - t0) / kCalls;
  }
  std::nth_element(per_call.begin(), per_call.begin() + kBlocks / 2, per_call.end());
  return per_call[kBlocks / 2];
}

}  // namespace causeway::collector
