// Causes found over the whole session from their own accumulators rather than per slow call.
// Each writes its chain documents into the SessionReport (chain_view.h).
#pragma once

#include <string_view>

#include "analysis/causes/cause_module.h"

namespace causeway {

// nccl_straggler: the rank that enters collectives last (analysis/collectives.h groups them).
struct NcclStraggler {
  static constexpr Cause id = Cause::nccl_straggler;
  static constexpr std::string_view name = "nccl_straggler";
  static void report(SessionReport& r);
};

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

}  // namespace causeway
