#include "mcp/check_probe.h"
#include "mcp/text_render.h"
#include "mcp/tools/tools.h"

namespace causeway::mcp::tools {

static Result<ToolOutput> get_check(const json&, ToolContext& ctx) {
  json doc = probe_readiness(ctx.config.self_exe, ctx.config.db_path);
  TextBuilder t(ctx.config.limits.max_text_bytes);
  t.line(std::string("ready: ") + (doc["ready"].get<bool>() ? "yes" : "NO") + " (from " + doc["source"].get<std::string>() + ")");
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
