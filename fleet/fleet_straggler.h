// The cross-host NCCL straggler, computed in ClickHouse: every host's collective entries
// grouped by communicator and sequence, the last rank of each group found there, and a rank
// that is last by >= 1 ms in most of its collectives reported as one nccl_straggler chain in
// the local shape, with the host it runs on (docs/FLEET.md "Fleet readers").
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "fleet/clickhouse.h"
#include "fleet/fleet_query.h"

namespace causeway::fleet {

// The one heavy query: every collective group whose ranks sit on >= 2 hosts, summed per
// (late rank, entrant). `filter`: only entries inside it (none: the whole store, so the query
// can start before the window is known).
using StragglerRows = std::vector<std::vector<std::string>>;
Result<StragglerRows> straggler_rows(ClickHouse& ch, const std::optional<FleetWindow>& filter);

// Chains for the ranks that straggle across hosts, from those rows; ranks late within one
// host are already in that host's own chains. `w` is the window the impact is a share of.
Result<nlohmann::json> straggler_chains(ClickHouse& ch, const StragglerRows& rows, const FleetWindow& w);

}  // namespace causeway::fleet
