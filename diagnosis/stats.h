// Per-op latency statistics over a window, answered from rollups (whole seconds) plus raw
// events (partial seconds at the window's edges and seconds not yet rolled up). Shared by
// `causeway stats` and MCP get_trace_stats; JSON shape of docs/INTERFACES.md.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "tracedb/histogram.h"

namespace causeway {

struct StatsQuery {
  std::optional<int64_t> since_ns;     // window = [end - since, end]; end = last data of the scope
  std::optional<uint32_t> pid;
  std::optional<std::string> source;   // cuda | driver | nccl | host | io | net | mem
  std::optional<std::string> op;       // exact op name
  std::optional<int64_t> session_id;   // default: the latest session
  size_t top_n = 0;                    // 0 = all ops; else the top N by total time
};

struct OpStats {
  std::string source;
  std::string op;
  uint32_t pid = 0;
  std::string comm;  // untrusted (from the traced process)
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t p50_ns = 0, p95_ns = 0, p99_ns = 0, max_ns = 0, min_ns = 0;
  uint64_t errors = 0;
  LatencyHistogram hist;  // every call in the window (rollups + raw edges): tail_breakdown's quantiles
};

struct HostCount {
  std::string event;
  uint64_t count = 0;
};

struct StatsResult {
  int64_t session_id = 0;
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  std::vector<OpStats> ops;        // sorted by total time, descending
  std::vector<HostCount> host;     // point events (sched_switch, process_exec, …)
  uint64_t dropped_ring = 0;
  uint64_t dropped_writer = 0;
  bool truncated = false;          // top_n cut the list
  nlohmann::json system;           // the host the session ran on (docs/TRACEDB.md "System identity")
  nlohmann::json systems;          // a merged DB: one per host; else null
  nlohmann::json by_host;          // a merged DB: calls per host in the window; else null
};

// Fails with "no_data" when the DB holds no session (or not the one asked for).
Result<StatsResult> compute_stats(sqlite3* db, const StatsQuery& query);

// docs/INTERFACES.md `stats` shape (times in µs).
nlohmann::json stats_to_json(const StatsResult& stats);

// Aligned table for people; comm is sanitized.
std::string stats_to_table(const StatsResult& stats);

}  // namespace causeway
