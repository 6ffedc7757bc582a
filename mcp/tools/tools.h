// The built-in tool handlers, one file each, and their embedded schema documents.
#pragma once

#include "mcp/tool_registry.h"

namespace causeway {
extern const char* const kToolSchema_get_check;
extern const char* const kToolSchema_get_trace_stats;
extern const char* const kToolSchema_get_causal_chains;
extern const char* const kToolSchema_get_stacks;
extern const char* const kToolSchema_run_sql;
extern const char* const kToolSchema_describe_schema;
extern const char* const kToolSchema_get_test_report;
extern const char* const kToolSchema_run_demo;
}  // namespace causeway

namespace causeway::mcp::tools {

Result<ToolOutput> get_check(const json& args, ToolContext& ctx);
Result<ToolOutput> get_trace_stats(const json& args, ToolContext& ctx);
Result<ToolOutput> get_causal_chains(const json& args, ToolContext& ctx);
Result<ToolOutput> get_stacks(const json& args, ToolContext& ctx);
Result<ToolOutput> run_sql(const json& args, ToolContext& ctx);
Result<ToolOutput> describe_schema(const json& args, ToolContext& ctx);
Result<ToolOutput> get_test_report(const json& args, ToolContext& ctx);
Result<ToolOutput> run_demo(const json& args, ToolContext& ctx);

}  // namespace causeway::mcp::tools

namespace causeway::mcp::tools {
// Compact text of a chains list (shared by get_causal_chains and run_demo).
std::string render_chains(const json& chains, size_t max_text_bytes, bool truncated);
// Example queries handed out with the schema (describe_schema, the schema resource).
json example_queries();
}  // namespace causeway::mcp::tools
