// Request latency for people and models: percentiles of TTFT / ITL / E2E per server, path
// and tenant, the tail by cause, the slowest requests. The one builder behind `causeway
// requests --json`, MCP get_request_latency and the HTML report; the JSON shape is
// docs/INTERFACES.md "Inference requests".
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/result.h"

namespace causeway::requests {

enum class Metric : uint8_t { ttft, itl, e2e };
std::optional<Metric> metric_from(std::string_view name);
const char* metric_name(Metric m);
// The id of the stored request-level chain of a cause in a metric's tail (docs/INFERENCE.md
// "Request chains"): "s<session>-req-<metric>-<cause>".
std::string request_chain_id(int64_t session_id, Metric m, std::string_view cause);

struct RequestQuery {
  std::optional<int64_t> since_ns;     // the last D of the session's data
  std::optional<uint32_t> pid;         // server pid
  std::optional<std::string> path;     // exact
  std::optional<std::string> tenant;   // exact
  Metric metric = Metric::ttft;
  double quantile = 0.99;
  size_t slowest = 10;
  std::optional<int64_t> session_id;   // default: the latest session
  // For request chains (diagnosis/request_chains.h), not in the interface's JSON: each tail
  // cause also lists the ids of the requests it slowed ("request_ids", most lost first, 20
  // at most), the server that lost the most to it ("server_pid"), the span of the units it
  // claimed ("from_ns", "to_ns"), and the tail its time above the median ("excess_ms") and
  // "median_ms".
  bool chain_detail = false;
};

// Fails with "no_data" (no session), "invalid_argument" (quantile outside (0, 1)).
Result<nlohmann::json> request_latency_json(sqlite3* db, const RequestQuery& query);

// Lines for people: the overall percentiles, one line per (server, path, tenant), the
// slowest requests. Untrusted strings (paths, ids, tenants) sanitized.
std::string request_latency_text(const nlohmann::json& doc);

}  // namespace causeway::requests
