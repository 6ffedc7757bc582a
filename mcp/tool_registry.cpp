#include "mcp/tool_registry.h"

#include <stdexcept>

#include "mcp/tools/tools.h"

namespace causeway::mcp {

void ToolRegistry::add(const char* schema_document, ToolHandler handler) {
  json spec = json::parse(schema_document);
  for (const char* key : {"name", "description", "inputSchema", "outputSchema"})
    if (!spec.contains(key)) throw std::logic_error(std::string("tool schema without ") + key);
  tools_.push_back(ToolDef{std::move(spec), std::move(handler)});
}

const ToolDef* ToolRegistry::find(const std::string& name) const {
  for (const auto& t : tools_)
    if (t.name() == name) return &t;
  return nullptr;
}

json ToolRegistry::list_entry(const ToolDef& tool) {
  const json& s = tool.spec;
  json entry = {{"name", s["name"]},
                {"description", s["description"]},
                {"inputSchema", s["inputSchema"]},
                {"outputSchema", s["outputSchema"]}};
  if (s.contains("title")) entry["title"] = s["title"];
  // Every tool only reads the served DB (run_demo writes a separate scratch DB).
  entry["annotations"] = {{"readOnlyHint", true},
                          {"destructiveHint", false},
                          {"idempotentHint", s.value("idempotent", true)},
                          {"openWorldHint", false}};
  if (s.contains("title")) entry["annotations"]["title"] = s["title"];
  return entry;
}

ToolRegistry builtin_tools() {
  ToolRegistry r;
  r.add(kToolSchema_get_check, tools::get_check);
  r.add(kToolSchema_get_trace_stats, tools::get_trace_stats);
  r.add(kToolSchema_get_causal_chains, tools::get_causal_chains);
  r.add(kToolSchema_get_stacks, tools::get_stacks);
  r.add(kToolSchema_run_sql, tools::run_sql);
  r.add(kToolSchema_describe_schema, tools::describe_schema);
  r.add(kToolSchema_get_test_report, tools::get_test_report);
  r.add(kToolSchema_run_demo, tools::run_demo);
  return r;
}

}  // namespace causeway::mcp
