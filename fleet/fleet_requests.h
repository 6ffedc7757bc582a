// `requests --fleet`: request latency of every host's serving processes, computed in
// ClickHouse in the shape of `requests --json` (by[] and slowest[] with `host`). Percentiles
// are nearest-rank, as the local command's. The tail's causes are found per host from its
// scheduler data (diagnosis/request_causes.h), which stays on the host: here `tail` counts the
// tail and says where to ask (docs/FLEET.md "Fleet readers").
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "fleet/clickhouse.h"
#include "diagnosis/request_latency.h"

namespace causeway::fleet {

Result<nlohmann::json> fleet_requests(ClickHouse& ch, const requests::RequestQuery& q);

std::string fleet_requests_text(const nlohmann::json& doc);

}  // namespace causeway::fleet
