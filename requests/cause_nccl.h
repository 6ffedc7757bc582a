// `nccl_straggler` keyed to requests: a tensor-parallel rank entered the forward pass's
// collective late, so the other ranks (and every running request's next token) waited for
// it (docs/INFERENCE.md "Causes keyed to requests"). Read from the engine's traced NCCL
// collectives, matched across ranks as the correlator matches them (diagnosis/collectives.h).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "requests/request_causes.h"

namespace causeway::requests {

// [from, to]: the slow part of a request; pids: the engine's processes (the server and its
// children). A claim when collectives of those processes had a straggler (the last rank
// entered ≥ 1 ms after the second-last) during it: the time between the second-last rank's
// entry and the straggler's, covered; culprit {"pid", "comm", "rank", "nranks", "share"} of
// the rank that was late for the most of that time.
std::optional<CauseClaim> nccl_straggler_claim(sqlite3* db, int64_t session_id, const std::vector<uint32_t>& pids,
                                               const std::map<uint32_t, std::string>& comms, int64_t from, int64_t to);

}  // namespace causeway::requests
