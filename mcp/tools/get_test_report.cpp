#include "common/json_exact.h"
#include "common/units.h"
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
  json doc = json::parse(st->col_text(5), nullptr, false);
  if (doc.is_discarded()) doc = st->col_text(5);
  json report = {{"id", st->col_int(0)}, {"ts_ns", st->col_int(1)}, {"host", st->col_text(2)},
                 {"ok", st->col_int(3) != 0}, {"summary", st->col_text(4)}, {"doc", doc}};
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
