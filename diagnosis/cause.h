// The closed set of causes a chain can name. The JSON spelling of each lives with its module
// (diagnosis/causes/<cause>.h) and is looked up through the registry (causes/registry.h).
#pragma once

#include <cstdint>

namespace causeway {

enum class Cause : uint8_t {
  cpu_contention,
  io_contention,
  memory_pressure,
  network,
  nccl_straggler,
  gpu_wait,
  lock_contention,
  cold_start,
  allocator,
  transfer_bound,
  dataloader_starvation,
  host_bound,
  launch_bound,
  graph_recapture,
  unknown,
};

// How many enumerators Cause has: the registry checks that each has exactly one module.
inline constexpr int kCauseCount = static_cast<int>(Cause::unknown) + 1;

}  // namespace causeway
