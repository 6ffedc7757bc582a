// Request-level causal chains (docs/INFERENCE.md "Request chains"): each cause that slowed
// the tail of TTFT or of the token gaps becomes a chain naming the requests it slowed, with
// a severity, for `causeway explain` (shown before the call-level chains when the session
// served requests). Computed from requests/latency.h when asked; nothing is stored.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/result.h"

namespace causeway::requests {

struct RequestChainQuery {
  std::optional<int64_t> session_id;  // default: the latest
  std::optional<int64_t> since_ns;
  std::optional<uint32_t> pid;        // server pid
};

// Severity from how slow the tail is and how much of it the cause explains:
// HIGH: the tail's units average ≥ 2× the median and ≥ 20 ms above it, the cause claims ≥ 50%
// of that time; MEDIUM: ≥ 1.5× and ≥ 5 ms above, ≥ 20%; else LOW.
const char* request_chain_severity(double tail_mean_ms, double median_ms, double share);

// The chains, most severe first, then by time lost ({"chains": [...]}, each with "level":
// "request"). An empty array when the session served no requests.
Result<nlohmann::json> request_chains(sqlite3* db, const RequestChainQuery& q);

}  // namespace causeway::requests
