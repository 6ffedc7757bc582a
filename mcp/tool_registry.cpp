#include "mcp/tool_registry.h"

#include <stdexcept>


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

void ToolRegistry::set_handler(const std::string& name, ToolHandler handler) {
  for (auto& t : tools_)
    if (t.name() == name) t.handler = std::move(handler);
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

}  // namespace causeway::mcp
