#include "mcp/backends.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"
#include "tracedb/stale_read.h"

namespace causeway::mcp::tools {

std::string render_rows(const json& d, size_t max_text_bytes) {
  // Cells may hold traced strings (comm, frames): fence every text cell as data.
  TextBuilder t(max_text_bytes);
  t.line(std::string(kDataNotice));
  std::string header;
  for (size_t i = 0; i < d["columns"].size(); ++i)
    header += (header.empty() ? "" : " | ") + d["columns"][i].get<std::string>() + " (" + d["column_types"][i].get<std::string>() + ")";
  t.line(header);
  for (const auto& row : d["rows"]) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const json& cell = row[i];
      line += line.empty() ? "" : " | ";
      // An integer column sent as decimal strings (common/json_exact.h) is ours, not traced text.
      if (cell.is_string() && d["column_types"][i] == "integer") line += cell.get<std::string>();
      else if (cell.is_string()) line += data_text(cell.get<std::string>(), 160);
      else line += cell.dump();
    }
    t.line(line);
  }
  char ms[32];
  snprintf(ms, sizeof ms, "%.1f", d["elapsed_ms"].get<double>());
  const size_t rows = d["rows"].size();
  std::string tail = std::to_string(rows) + " rows in " + ms + " ms";
  if (t.truncated()) tail += " (the text shows the first ones; structuredContent has all " + std::to_string(rows) + ")";
  if (d.contains("next_cursor"))
    tail += "; truncated: more rows exist; get them with the same query plus cursor=\"" + d["next_cursor"].get<std::string>() +
            "\", or aggregate / narrow with WHERE";
  t.footer(tail);
  return t.str();
}

static Result<ToolOutput> run_sql(const json& args, ToolContext& ctx) {
  SqlLimits limits;
  limits.max_rows = std::min<size_t>(static_cast<size_t>(args.value("limit", 100)), ctx.config.limits.max_rows * 5);
  limits.max_bytes = ctx.config.limits.structured_bytes();
  limits.timeout_ms = ctx.config.limits.sql_timeout_ms;
  auto offset = cursor_offset(args);
  if (!offset) return offset.error();
  limits.skip_rows = *offset;
  auto db = open_db(ctx);
  if (!db) return db.error();
  auto r = guarded_query(db->get(), args["query"].get<std::string>(), limits, ctx.cancel);
  if (!r) return r.error();
  json d = std::move(r.value());
  fit_page(d, "rows", ctx.config.limits.structured_bytes(), *offset, d["truncated"].get<bool>());
  // The rows may miss the newest commits (docs/INTERFACES.md "Stale reads"): said in
  // structuredContent ("stale", "warnings") and first in the text, which the model reads.
  note_stale_read(d, db->get());

  std::string text = render_rows(d, ctx.config.limits.max_text_bytes);
  if (d.value("stale", false)) text = "warning: " + d["warnings"][0].get<std::string>() + "\n" + text;
  return ToolOutput{std::move(d), std::move(text)};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(run_sql, causeway::mcp::tools::run_sql)
