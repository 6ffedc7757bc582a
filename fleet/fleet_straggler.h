// The cross-host NCCL straggler, computed in ClickHouse: every host's collective entries
// grouped by communicator and sequence, the last rank of each group found there, and a rank
// that is last by >= 1 ms in most of its collectives reported as one nccl_straggler chain in
// the local shape, with the host it runs on (docs/FLEET.md "Fleet readers").
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "fleet/clickhouse.h"
#include "fleet/fleet_query.h"

namespace causeway::fleet {

// Chains for the ranks that straggle across hosts (groups whose ranks sit on >= 2 hosts);
// ranks late within one host are already in that host's own chains.
Result<nlohmann::json> cross_host_stragglers(ClickHouse& ch, const FleetWindow& w);

}  // namespace causeway::fleet
