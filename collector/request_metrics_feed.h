// The one place where a live trace feeds /metrics' request families (metrics/
// request_families.h, docs/METRICS.md "Requests"): every request as it is stored, and the
// tail's time lost per cause after each pass of the request causes. It reads the request
// causes only through their public API (requests/latency.h), so a move of that code changes
// this file alone.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "metrics/registry.h"
#include "tracedb/records.h"

namespace causeway::collector {

// The request's output token count, for gen_ai_server_time_per_output_token_seconds
// (genai::output_tokens_of: the SSE events until the record carries a counted number).
std::optional<uint64_t> output_token_count(const RequestRecord& r);
// gen_ai.request.model when the request named one (none is recorded yet).
std::optional<std::string> request_model(const RequestRecord& r);

// The facts /metrics needs of a stored request (comm: the server's process name).
RequestFacts request_facts(const RequestRecord& r, const std::string& comm);

class RequestMetricsFeed {
 public:
  // Every (metric, cause) series of the time lost starts at 0 (the causes are a closed set):
  // PromQL's rate() never counts a series' first sample, so a counter that first appeared
  // with the time a pass found would show no increase at all (docs/METRICS.md "Requests").
  explicit RequestMetricsFeed(MetricsRegistry& registry);

  // A request as the trace stores it (the session's thread).
  void observe(const RequestRecord& r);

  // After a pass of the request causes over the session (the analysis thread, on its
  // read-only connection): the TTFT and token-gap tails' time above the median, per cause and
  // unexplained, as `causeway requests` computes it. Fails quietly (the next pass retries):
  // metrics must never stop the trace.
  void publish_time_lost(sqlite3* ro, int64_t session_id);

 private:
  MetricsRegistry& registry_;
  std::map<uint32_t, std::string> comms_;  // server pid -> comm, read once from /proc
};

}  // namespace causeway::collector
