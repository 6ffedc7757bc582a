// `causeway mcp --fleet URL`: the same tools (names and schemas unchanged) answered from the
// ClickHouse fleet store as its read-only user (docs/MCP.md "Fleet mode", docs/FLEET.md
// "Fleet readers"). get_causal_chains, get_trace_stats and get_request_latency use the fleet
// readers (fleet/fleet_explain.h, fleet_stats.h, fleet_requests.h); run_sql runs ClickHouse SQL
// (sqlguard/clickhouse_guard.h, then the server's readonly=1 profile). Every other tool reads
// one host's trace DB and answers a tool error that says so: never local data.
#pragma once

#include "fleet/endpoint.h"
#include "mcp/tool_registry.h"

namespace causeway::mcp {

void serve_from_fleet(ToolRegistry& tools, const fleet::Endpoint& endpoint);

}  // namespace causeway::mcp
