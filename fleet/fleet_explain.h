// `explain --fleet`: the chains every host shipped (each with culprit.host) plus the
// cross-host NCCL stragglers computed in the store, in the shape of `explain --json`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/result.h"
#include "fleet/clickhouse.h"

namespace causeway::fleet {

struct FleetChainQuery {
  std::optional<int64_t> since_ns;
  std::optional<std::string> min_severity;   // HIGH, MEDIUM or LOW
  std::optional<uint32_t> pid;               // victim or culprit pid, on any host
};

// {"chains": [...], "total": N, "window": {...}, "hosts": [{host, boot_id, session_id,
// system}]}; chains unsorted and uncut (the command ranks and limits them like local ones).
Result<nlohmann::json> fleet_chains(ClickHouse& ch, const FleetChainQuery& q);

// The hosts (sessions) in the store: host, boot_id, session_id, session_start, system.
Result<nlohmann::json> fleet_hosts(ClickHouse& ch);

}  // namespace causeway::fleet
