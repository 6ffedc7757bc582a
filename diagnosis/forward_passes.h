// Forward passes of a one-GPU engine from its host threads' CUDA calls (docs/INFERENCE.md
// "Forward passes (steps)"): on each thread, the kernel and graph launches from the first one
// after the previous pass up to the call that waits for them (a stream, event, device or
// context sync, or a blocking device-to-host copy of the sampled tokens). The pass lasts from
// its first launch's entry to that wait's return: the GPU time of the step plus the host time
// that launched it.
#pragma once

#include <sqlite3.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"

namespace causeway::requests {

// One traced call, as the finder reads it (a: the op's args, tracedb/op_args.h).
struct PassCall {
  int64_t ts_ns = 0, dur_ns = 0;
  uint32_t pid = 0, tid = 0;
  uint16_t op = 0;
  std::array<int64_t, 6> a{};
};

struct ForwardPass {
  uint32_t pid = 0, tid = 0;
  int64_t start_ns = 0;  // the first launch's entry
  int64_t end_ns = 0;    // the wait's return
  uint32_t launches = 0; // kernel and graph launches in it
  bool graph = false;    // one of them was a CUDA graph launch
  int64_t dur_ns() const { return end_ns - start_ns; }
};

struct PassScan {
  std::vector<ForwardPass> passes;  // by start time
  // Threads that launched but never waited for their launches (asynchronous scheduling
  // polling an event, or a trace too short): their passes cannot be delimited.
  std::vector<uint32_t> undelimited_tids;
};

// calls: in time order, threads interleaved. A launch still open at the end is dropped (its
// end is not known).
PassScan find_forward_passes(std::span<const PassCall> calls);

// The passes of the threads of `pids` whose first launch lies in [from_ns, to_ns], read from
// the session's events.
Result<PassScan> load_forward_passes(sqlite3* db, int64_t session_id, const std::vector<uint32_t>& pids, int64_t from_ns,
                                     int64_t to_ns);

// The median pass duration (0 with no pass).
int64_t median_pass_ns(const std::vector<ForwardPass>& passes);

}  // namespace causeway::requests
