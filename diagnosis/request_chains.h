// Request-level causal chains (docs/INFERENCE.md "Request chains"): each cause that slowed
// the tail of TTFT or of the token gaps of one server's requests becomes a chain naming the
// requests it slowed, with a severity; each server traced in a session has its own. Computed
// from diagnosis/request_latency.h and stored in the chains table with the call-level chains
// (ids "s<session>-req-<server pid>-<metric>-<cause>", tracedb/chain_store.h), so
// `causeway explain` / MCP get_causal_chains return them (request-level first) and the
// causes of `causeway requests` point at them by chain_id.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "tracedb/records.h"

namespace causeway::requests {

// Severity from how slow the tail is and how much of it the cause explains:
// HIGH: the tail's units average ≥ 2× the median and ≥ 20 ms above it, the cause claims ≥ 50%
// of that time; MEDIUM: ≥ 1.5× and ≥ 5 ms above, ≥ 20%; else LOW.
// A HIGH chain names at least this many slowed requests: one slow request (the whole p99 tail
// of a short run) is one anecdote on a busy host, at most MEDIUM.
// Three, not two: the p99 tail of a short run on a busy host is a few gaps in one or two
// requests, and a late rank or a compiler behind most of those few (seen: 4 gaps of 320 in
// two requests) is the host's ordinary noise, MEDIUM.
inline constexpr uint64_t kHighMinRequests = 3;
const char* request_chain_severity(double tail_mean_ms, double median_ms, double share,
                                   uint64_t requests = kHighMinRequests);

// The session's request chains as rows of the chains table (doc = the chain's JSON, each with
// "level": "request"), most severe first, then by time lost; none when it served no requests.
// Built typed from each server's tail of each metric (request_tails_by_server) and written by
// the one chain serializer (diagnosis/chain_json.h).
Result<std::vector<ChainRecord>> request_chain_records(sqlite3* db, int64_t session_id);

// After a session is written (a demo, a merge): computes its request chains on a read-only
// connection, then replaces the session's stored request chains with them. Returns how many.
// A live trace pushes them through StoreWriter instead (collector/chain_watcher.cpp).
Result<size_t> store_request_chains(const std::string& db_path, int64_t session_id);

}  // namespace causeway::requests
