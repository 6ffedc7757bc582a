// `report --fleet`: the report's data from the ClickHouse fleet store (docs/FLEET.md "The
// report over the fleet"), a ReportSource (exporters/report_source.h) beside the trace DB's,
// so one renderer draws both. Chains come from fleet_chains (each with culprit.host, the
// cross-host stragglers included), per-op figures from fleet_stats (one histogram per host,
// process and op), requests from fleet_requests; each chain's swimlanes are read from the
// sched, wakeups, events and requests rows of the host it is drawn on. As the read-only user:
// no query sends a setting.
#pragma once

#include <memory>

#include "exporters/report_source.h"
#include "fleet/endpoint.h"

namespace causeway::fleet {

// Errors come when the report is built (the connection's, the schema's, "no_data").
std::unique_ptr<ReportSource> fleet_report_source(const Endpoint& e, const ReportScope& scope);

}  // namespace causeway::fleet
