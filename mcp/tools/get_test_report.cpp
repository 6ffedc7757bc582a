#include "common/sanitize.h"
#include "common/json_exact.h"
#include "common/units.h"
#include "common/untrusted_json.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::mcp::tools {

static Result<ToolOutput> get_test_report(const json&, ToolContext& ctx) {
  auto db = open_db(ctx);
  if (!db) return db.error();
  auto st = Statement::prepare(db->get(), "SELECT id, ts_ns, host, ok, summary, doc FROM test_reports ORDER BY ts_ns DESC, id DESC LIMIT 1");
  if (!st) return st.error();
  int rc = st->step();
  if (rc == SQLITE_DONE)
    return ToolOutput{json{{"found", false}}, "no selftest report stored yet: run `causeway selftest` on this host"};
  if (rc != SQLITE_ROW) return make_error("query_failed", sqlite_error_text(db->get()));
  // The stored report may come from another host's DB: depth-limited (it is copied and dumped
  // below) and its strings sanitized; text that is not a usable document is passed as text.
  const size_t cap = ctx.config.limits.structured_bytes() + 1;  // over budget is cut below
  auto parsed = parse_untrusted_json(st->col_text(5));
  json doc = parsed ? sanitize_json_strings(std::move(*parsed), cap) : json(sanitize_untrusted(st->col_text(5), cap));
  json report = {{"id", st->col_int(0)}, {"ts_ns", st->col_int(1)}, {"host", sanitize_untrusted(st->col_text(2), 128)},
                 {"ok", st->col_int(3) != 0}, {"summary", sanitize_untrusted(st->col_text(4), 1000)}, {"doc", doc}};
  json d = {{"found", true}, {"report", report}};
  add_utc_twins(d);
  if (d.dump(-1, ' ', false, json::error_handler_t::replace).size() > ctx.config.limits.structured_bytes()) {
    d["report"]["doc"] = "(report document over the response budget; read it with run_sql on test_reports.doc)";
  }
  TextBuilder t(ctx.config.limits.max_text_bytes);
  t.line("selftest " + std::string(report["ok"].get<bool>() ? "PASSED" : "FAILED") + " at " + format_utc(report["ts_ns"].get<int64_t>()) +
         " on " + data_text(report["host"].get<std::string>(), 80));
  t.line("summary: " + data_text(report["summary"].get<std::string>(), 1000));
  return ToolOutput{std::move(d), t.str()};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(get_test_report, causeway::mcp::tools::get_test_report)
