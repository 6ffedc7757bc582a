// `stats --fleet`: per-op counts and latency percentiles of every host, computed in ClickHouse
// (exact quantiles over the calls in the window), in the shape of `stats --json` with
// `ops[].host` and `host[].host`; `hosts` lists the shipped host sessions.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "diagnosis/stats.h"
#include "common/result.h"
#include "fleet/clickhouse.h"

namespace causeway::fleet {

struct FleetStats {
  StatsResult all;                          // every host's ops, by total time (session_id 0)
  std::vector<std::string> op_hosts;        // host of all.ops[i]
  std::vector<std::string> event_hosts;     // host of all.host[i]
  nlohmann::json hosts;                     // fleet_hosts()
};

// Filters as the local command: since, pid (on any host), source, op, top_n.
Result<FleetStats> fleet_stats(ClickHouse& ch, const StatsQuery& q);

nlohmann::json fleet_stats_json(const FleetStats& s);

// One table per host, for people.
std::string fleet_stats_text(const FleetStats& s);

}  // namespace causeway::fleet
