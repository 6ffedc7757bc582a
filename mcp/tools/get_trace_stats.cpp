#include "common/units.h"
#include "mcp/backends.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"

namespace causeway::mcp::tools {

std::string render_stats(const json& d, size_t offset, size_t max_text_bytes) {
  TextBuilder t(max_text_bytes);
  const auto& w = d["window"];
  t.line(std::string(kDataNotice));
  t.line("window " + format_utc(w["from_ns"].get<int64_t>()) + " .. " + format_utc(w["to_ns"].get<int64_t>()) + " (" +
         format_duration_ns(w["to_ns"].get<int64_t>() - w["from_ns"].get<int64_t>()) + "); " +
         std::to_string(d["ops"].size()) + " op/process rows by total time");
  for (const auto& o : d["ops"]) {
    // Under --fleet each row names its host (ops[].host).
    const std::string where = o.contains("host") ? " on host " + data_text(o["host"].get<std::string>()) : "";
    t.line(o["source"].get<std::string>() + "/" + o["op"].get<std::string>() + where + " pid " + std::to_string(o["pid"].get<int64_t>()) +
           " " + data_text(o.value("comm", "")) + ": " + std::to_string(o["count"].get<int64_t>()) + " calls, total " +
           us_text(o["total_us"].get<double>()) + ", p50 " + us_text(o["p50_us"].get<double>()) + ", p95 " +
           us_text(o["p95_us"].get<double>()) + ", p99 " + us_text(o["p99_us"].get<double>()) + ", max " +
           us_text(o["max_us"].get<double>()) + ", errors " + std::to_string(o["errors"].get<int64_t>()));
  }
  std::string host;
  for (const auto& h : d["host"]) host += (host.empty() ? "" : ", ") + h["event"].get<std::string>() + " " + std::to_string(h["count"].get<int64_t>());
  if (!host.empty()) t.line("host events: " + host);
  t.line("dropped: ring " + std::to_string(d["dropped"]["ring"].get<int64_t>()) + ", writer " +
         std::to_string(d["dropped"]["writer"].get<int64_t>()));
  if (d.contains("next_cursor")) {
    const int64_t total = d["total_ops"].get<int64_t>();
    const int64_t shown_to = static_cast<int64_t>(offset + d["ops"].size());
    t.footer(std::to_string(total - shown_to) + " more op/process rows left out (" + std::to_string(total) +
           " match); get them with the same arguments plus cursor=\"" + d["next_cursor"].get<std::string>() +
           "\", or filter by pid/source/op");
  }
  return t.str();
}

Result<StatsQuery> stats_query(const json& args) {
  StatsQuery q;
  auto since = duration_arg(args, "since");
  if (!since) return since.error();
  q.since_ns = since.value();
  q.pid = pid_arg(args);
  q.source = string_arg(args, "source");
  q.op = string_arg(args, "op");
  q.top_n = static_cast<size_t>(args.value("top_n", 20));
  return q;
}

static Result<ToolOutput> get_trace_stats(const json& args, ToolContext& ctx) {
  auto query = stats_query(args);
  if (!query) return query.error();
  const StatsQuery& q = *query;
  auto offset = cursor_offset(args);
  if (!offset) return offset.error();
  auto db = open_db(ctx);
  if (!db) return db.error();
  CancelScope scope(ctx.cancel, db->get());
  auto doc = stats_document(db->get(), q, *offset);
  if (!doc) return doc.error();
  json& d = doc.value();
  if (!d.contains("truncated")) d["truncated"] = false;
  fit_page(d, "ops", ctx.config.limits.structured_bytes(), *offset, d.contains("next_cursor"));

  std::string text = render_stats(d, *offset, ctx.config.limits.max_text_bytes);
  return ToolOutput{std::move(d), std::move(text)};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(get_trace_stats, causeway::mcp::tools::get_trace_stats)
