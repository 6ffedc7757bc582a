// gpu_wait: a sync or synchronous copy that waited for the GPU with no host cause (the thread was
// on-CPU or asleep, not preempted, not in D). Culprit: another process that submitted GPU work
// during the slow syncs far more often than during normal ones (it shares the GPU).
#pragma once

#include <cstdint>
#include <map>

#include "analysis/causes/cause_module.h"

namespace causeway {

struct GpuWait {
  static constexpr Cause id = Cause::gpu_wait;
  static constexpr std::string_view name = "gpu_wait";
  struct Evidence {
    int64_t on_cpu_ns = 0, sleep_ns = 0;  // inside the calls this cause won
    int64_t host_ns = 0;                  // runnable or D time inside them: a host cause's, not counted as lost here
    int64_t own_submits_before = 0;       // this process's GPU submissions in the 50 ms before each call
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);
};

}  // namespace causeway
