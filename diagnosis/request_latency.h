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
#include <vector>

#include "common/result.h"
#include "diagnosis/causes/request_cause.h"

namespace causeway::requests {

enum class Metric : uint8_t { ttft, itl, e2e };
std::optional<Metric> metric_from(std::string_view name);
const char* metric_name(Metric m);
// The id of the stored request-level chain of a cause in the tail of a metric of one server's
// requests (docs/INFERENCE.md "Request chains"): "s<session>-req-<server pid>-<metric>-<cause>".
std::string request_chain_id(int64_t session_id, uint32_t server_pid, Metric m, std::string_view cause);

struct RequestQuery {
  std::optional<int64_t> since_ns;     // the last D of the session's data
  std::optional<uint32_t> pid;         // server pid
  std::optional<std::string> path;     // exact
  std::optional<std::string> tenant;   // exact
  Metric metric = Metric::ttft;
  double quantile = 0.99;
  size_t slowest = 10;
  std::optional<int64_t> session_id;   // default: the latest session
  // For request chains: the JSON's tail also carries what RequestTail does beyond the
  // interface (each cause's "request_ids", "server_pid", "from_ns", "to_ns"; the tail's
  // "excess_ms" and "median_ms").
  bool chain_detail = false;
};

// One cause of a metric's tail, as the request chains read it (diagnosis/request_chains.h).
struct TailCause {
  RequestCause cause = RequestCause::cpu_contention;
  double share_time = 0;  // of the tail's time above the median, rounded to 0.001
  double lost_ns = 0;     // claimed in all
  uint64_t requests = 0;  // requests slowed
  Culprit culprit;  // the culprit of its largest claim
  uint32_t server_pid = 0;                // the server that lost the most to it
  int64_t from_ns = 0, to_ns = 0;         // the span of the units it claimed
  std::vector<std::string> request_ids;   // most lost first, 20 at most
};

// The tail of one metric: the units at or above the quantile, and their causes by share.
struct RequestTail {
  int64_t session_id = 0;
  std::optional<uint32_t> server_pid;  // the one server judged (request_tails_by_server); none: the query's requests
  Metric metric = Metric::ttft;
  double quantile = 0.99;
  std::optional<double> threshold_ms;  // none when no unit was measured
  uint64_t units = 0;
  double unexplained_share = 0;
  double excess_ms = 0;  // the tail's time above the median, in all
  double median_ms = 0;
  std::vector<TailCause> causes;  // largest share first
};

// The tail of `query.metric` (its filters, quantile and session), typed: what request chains
// are built from, without the rest of the answer.
Result<RequestTail> request_tail(sqlite3* db, const RequestQuery& query);

// The tail of `metric` for each server of the session apart (its own requests judged; the
// evidence every request the session recorded, read once for all), by server pid: what each
// server's request chains are built from (two engines traced in one session keep their own).
Result<std::vector<RequestTail>> request_tails_by_server(sqlite3* db, int64_t session_id, Metric metric);

// Fails with "no_data" (no session), "invalid_argument" (quantile outside (0, 1)).
Result<nlohmann::json> request_latency_json(sqlite3* db, const RequestQuery& query);

// Lines for people: the overall percentiles, one line per (server, path, tenant), the
// slowest requests. Untrusted strings (paths, ids, tenants) sanitized.
std::string request_latency_text(const nlohmann::json& doc);

}  // namespace causeway::requests
