#include "mcp/backends.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"

namespace causeway::mcp::tools {

// SQLite types values, not columns: a column's type is the storage class its returned values
// have ("integer", "real", "text", "null" when every value is NULL, "mixed" when they differ).
static json column_types(size_t columns, const json& rows) {
  std::vector<std::string> types(columns, "null");
  for (const auto& row : rows)
    for (size_t i = 0; i < columns && i < row.size(); ++i) {
      const json& v = row[i];
      std::string t = v.is_null() ? "null" : v.is_number_integer() ? "integer" : v.is_number() ? "real" : v.is_string() ? "text" : "blob";
      if (t == "null" || types[i] == t) continue;
      types[i] = types[i] == "null" ? t : "mixed";
    }
  return types;
}

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
  d["column_types"] = column_types(d["columns"].size(), d["rows"]);

  // Cells may hold traced strings (comm, frames): fence every text cell as data.
  TextBuilder t(ctx.config.limits.max_text_bytes);
  t.line(std::string(kDataNotice));
  std::string header;
  for (size_t i = 0; i < d["columns"].size(); ++i)
    header += (header.empty() ? "" : " | ") + d["columns"][i].get<std::string>() + " (" + d["column_types"][i].get<std::string>() + ")";
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
         (d["truncated"].get<bool>() ? "; truncated: more rows exist; aggregate, narrow with WHERE, or page with LIMIT n OFFSET m" : ""));
  return ToolOutput{std::move(d), t.str()};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(run_sql, causeway::mcp::tools::run_sql)
