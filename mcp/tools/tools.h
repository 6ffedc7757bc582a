// Helpers shared by more than one tool (each tool is one file and declares itself with
// CAUSEWAY_TOOL, see mcp/tool_registry.h).
#pragma once

#include <optional>
#include <string>

#include "diagnosis/stats.h"
#include "mcp/tool_registry.h"
#include "diagnosis/request_latency.h"

namespace causeway::mcp::tools {
// Compact text of a chains list (shared by get_causal_chains and run_demo); `more` is the
// line that says what was left out and how to get it ("" when nothing was).
std::string render_chains(const json& chains, size_t max_text_bytes, const std::string& more);
// The query a get_trace_stats / get_request_latency call asks for (top_n as given; the
// stats page is cut from all ops), shared with the fleet handlers.
Result<StatsQuery> stats_query(const json& args);
Result<requests::RequestQuery> request_query(const json& args);
// One page of get_causal_chains: `chains` (most severe first) kept where cause matches, from
// `offset`, at most `limit`, cut to the reply budget, with its text; shared with the fleet handler.
ToolOutput chains_page(json& chains, const std::optional<std::string>& cause, size_t offset, size_t limit, const Limits& limits);
// The text of a get_trace_stats page (ops from `offset`), of a run_sql result, and of a
// plain-text report whose every line is data (get_request_latency); shared with the fleet
// handlers (mcp/fleet_tools.h), whose documents have the same shapes.
std::string render_stats(const json& d, size_t offset, size_t max_text_bytes);
std::string render_rows(const json& d, size_t max_text_bytes);
std::string render_data_lines(const std::string& text, size_t max_text_bytes);
// Example queries handed out with the schema (describe_schema, the schema resource).
json example_queries();
}  // namespace causeway::mcp::tools
