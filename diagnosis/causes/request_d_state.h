// `io_contention` and `memory_pressure` keyed to requests: the engine's threads were in D
// state (uninterruptible) during a request's slow part, waiting on the disk or on memory
// reclaim (docs/INFERENCE.md "Causes keyed to requests"). The same evidence the correlator
// uses for a slow call (diagnosis/causes/io_contention.h, memory_pressure.h): block requests
// in flight during the waits, else page-allocation bursts or an OOM kill near them.
#pragma once

#include "diagnosis/causes/request_cause.h"

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>


namespace causeway::requests {

// io_contention: the engine's threads waited in D with block I/O in flight.
struct IoContentionRequestCause {
  static constexpr RequestCause id = RequestCause::io_contention;
  static constexpr std::string_view name = "io_contention";
  static constexpr ClaimTier tier = ClaimTier::host_state;
  static const char* recommendation(const Culprit& culprit);
  // Both D-state causes' claims (d_state_claims below): memory_pressure is found with it.
  static void find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out);
};

// memory_pressure: the engine's threads stalled in D in memory reclaim.
struct MemoryPressureRequestCause {
  static constexpr RequestCause id = RequestCause::memory_pressure;
  static constexpr std::string_view name = "memory_pressure";
  static constexpr ClaimTier tier = ClaimTier::host_state;
  static constexpr RequestCause found_with = RequestCause::io_contention;
  static const char* recommendation(const Culprit& culprit);
};

// [from, to]: a request's slow part; pids: the engine's processes. At most one claim each of
// io_contention (the D time under block I/O in flight; culprit {"pid", "comm",
// "overlap_share", "own_io"}: the process with I/O in flight for the most of it, another
// process's before the engine's own) and memory_pressure (the rest of the D time, when
// pages were allocated in bursts during it or an OOM kill came within 10 s; culprit {"pid",
// "comm", "pages"}: who allocated the most).
std::vector<CauseClaim> d_state_claims(sqlite3* db, int64_t session_id, const std::vector<uint32_t>& pids,
                                       const std::map<uint32_t, std::string>& comms, int64_t from, int64_t to);

}  // namespace causeway::requests
