#include "mcp/check_probe.h"
#include "mcp/text_render.h"
#include "mcp/tools/tools.h"

namespace causeway::mcp::tools {

static Result<ToolOutput> get_check(const json&, ToolContext& ctx) {
  json doc = probe_readiness(ctx.config.host_check, ctx.pool);
  TextBuilder t(ctx.config.limits.max_text_bytes);
  t.line(std::string("ready: ") + (doc["ready"].get<bool>() ? "yes" : "NO") + " (from " + doc["source"].get<std::string>() + ")");
  const json& db = doc["db"];
  if (db["readable"].get<bool>())
    t.line("served DB: " + data_text(db["path"].get<std::string>(), 300) + ", schema " +
           (db["schema_version"].is_null() ? std::string("none") : std::to_string(db["schema_version"].get<int64_t>())) +
           " (this binary: " + std::to_string(db["latest_schema_version"].get<int>()) + "), " +
           std::to_string(db["sessions"].get<int64_t>()) + " sessions" +
           (db["latest_session_id"].is_null() ? std::string() : ", latest " + std::to_string(db["latest_session_id"].get<int64_t>())));
  else
    t.line("served DB: " + data_text(db["path"].get<std::string>(), 300) + " cannot be read: " + db.value("error", std::string()));
  for (const auto& c : doc["checks"]) {
    std::string status = c.value("status", c["ok"].get<bool>() ? "PASS" : "FAIL");
    std::string line = status + " " + c["name"].get<std::string>() + ": " + c["detail"].get<std::string>();
    if (c.contains("remedy")) line += " — fix: " + c["remedy"].get<std::string>();
    t.line(line);
  }
  return ToolOutput{std::move(doc), t.str()};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(get_check, causeway::mcp::tools::get_check)
