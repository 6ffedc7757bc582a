// `io_contention` and `memory_pressure` keyed to requests: the engine's threads were in D
// state (uninterruptible) during a request's slow part, waiting on the disk or on memory
// reclaim (docs/INFERENCE.md "Causes keyed to requests"). The same evidence the correlator
// uses for a slow call (diagnosis/causes/io_contention.h, memory_pressure.h): block requests
// in flight during the waits, else page-allocation bursts or an OOM kill near them.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "requests/request_causes.h"

namespace causeway::requests {

// [from, to]: a request's slow part; pids: the engine's processes. At most one claim each of
// io_contention (the D time under block I/O in flight; culprit {"pid", "comm",
// "overlap_share", "own_io"}: the process with I/O in flight for the most of it, another
// process's before the engine's own) and memory_pressure (the rest of the D time, when
// pages were allocated in bursts during it or an OOM kill came within 10 s; culprit {"pid",
// "comm", "pages"}: who allocated the most).
std::vector<CauseClaim> d_state_claims(sqlite3* db, int64_t session_id, const std::vector<uint32_t>& pids,
                                       const std::map<uint32_t, std::string>& comms, int64_t from, int64_t to);

}  // namespace causeway::requests
