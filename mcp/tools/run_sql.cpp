#include "mcp/backends.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"

namespace causeway::mcp::tools {

static Result<ToolOutput> run_sql(const json& args, ToolContext& ctx) {
  SqlLimits limits;
  limits.max_rows = std::min<size_t>(static_cast<size_t>(args.value("limit", 100)), ctx.config.limits.max_rows * 5);
  limits.max_bytes = ctx.config.limits.max_structured_bytes;
  limits.timeout_ms = ctx.config.limits.sql_timeout_ms;
  auto db = open_db(ctx);
  if (!db) return db.error();
  auto r = guarded_query(db->get(), args["query"].get<std::string>(), limits, ctx.cancel);
  if (!r) return r.error();
  json d = std::move(r.value());
  fit_json_budget(d, "rows", ctx.config.limits.max_structured_bytes);

  // Cells may hold traced strings (comm, frames): fence every text cell as data.
  TextBuilder t(ctx.config.limits.max_text_bytes);
  t.line(std::string(kDataNotice));
  std::string header;
  for (const auto& c : d["columns"]) header += (header.empty() ? "" : " | ") + c.get<std::string>();
  t.line(header);
  for (const auto& row : d["rows"]) {
    std::string line;
    for (const auto& cell : row) {
      line += line.empty() ? "" : " | ";
      if (cell.is_string()) line += data_text(cell.get<std::string>(), 160);
      else line += cell.dump();
    }
    t.line(line);
  }
  char ms[32];
  snprintf(ms, sizeof ms, "%.1f", d["elapsed_ms"].get<double>());
  t.line(std::to_string(d["rows"].size()) + " rows in " + ms + " ms" +
         (d["truncated"].get<bool>() ? "; truncated: more rows exist, aggregate or add LIMIT/WHERE" : ""));
  return ToolOutput{std::move(d), t.str()};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(run_sql, causeway::mcp::tools::run_sql)
