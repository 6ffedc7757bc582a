// Helpers shared by more than one tool (each tool is one file and declares itself with
// CAUSEWAY_TOOL, see mcp/tool_registry.h).
#pragma once

#include "mcp/tool_registry.h"

namespace causeway::mcp::tools {
// Compact text of a chains list (shared by get_causal_chains and run_demo); `more` is the
// line that says what was left out and how to get it ("" when nothing was).
std::string render_chains(const json& chains, size_t max_text_bytes, const std::string& more);
// Example queries handed out with the schema (describe_schema, the schema resource).
json example_queries();
}  // namespace causeway::mcp::tools
