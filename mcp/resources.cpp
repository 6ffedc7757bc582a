#include "mcp/resources.h"
#include "common/sanitize.h"

#include "common/json_exact.h"
#include "mcp/backends.h"
#include "mcp/jsonrpc.h"
#include "mcp/tools/tools.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::mcp {

using json = nlohmann::json;

json resource_list() {
  return json::array({
      {{"uri", "causeway://schema"}, {"name", "schema"}, {"title", "Trace DB schema"},
       {"description", "Tables, views, columns, units and example queries for run_sql"}, {"mimeType", "application/json"}},
      {{"uri", "causeway://sessions"}, {"name", "sessions"}, {"title", "Trace sessions"},
       {"description", "Captures in the served trace DB (live, demo, import)"}, {"mimeType", "application/json"}},
  });
}

Result<json> read_resource(const std::string& uri, DbPool& pool, const ServerConfig& config) {
  if (uri != "causeway://schema" && uri != "causeway://sessions")
    return make_error("unknown_resource", "Unknown resource " + uri + "; available: causeway://schema, causeway://sessions.");
  if (config.fleet)
    return make_error("needs_host_db", uri + " describes one host's trace DB; this server reads the fleet store (mcp --fleet). "
                                             "Ask run_sql for `SELECT name FROM system.tables WHERE database = currentDatabase()`.");
  auto db = pool.acquire();
  if (!db) return db.error();
  json body;
  if (uri == "causeway://schema") {
    auto s = schema_document(db->get());
    if (!s) return s.error();
    body = std::move(s.value());
    if (!body.contains("examples")) body["examples"] = tools::example_queries();
  } else {
    auto st = Statement::prepare(db->get(),
                                 "SELECT id, source_kind, label, host, started_ns, stopped_ns FROM sessions ORDER BY id DESC LIMIT 100");
    if (!st) return st.error();
    body = {{"sessions", json::array()}};
    while (st->step() == SQLITE_ROW)
      // Labels (an imported file's name) and hosts come from the DB: sanitized for the model.
      body["sessions"].push_back({{"id", st->col_int(0)}, {"source_kind", sanitize_untrusted(st->col_text(1), 32)},
                                  {"label", sanitize_untrusted(st->col_text(2), 128)},
                                  {"host", sanitize_untrusted(st->col_text(3), 128)}, {"started_ns", st->col_int(4)},
                                  {"stopped_ns", st->col_null(5) ? json(nullptr) : json(st->col_int(5))}});
  }
  add_utc_twins(body);  // docs/INTERFACES.md "Exact numbers"
  // The schema is fixed while the server runs; sessions grow while a trace is being written.
  const bool schema = uri == "causeway://schema";
  return json{{"contents", json::array({{{"uri", uri}, {"mimeType", "application/json"}, {"text", dump_compact(body)}}})},
              {"ttlMs", schema ? 3'600'000 : 5'000},
              {"cacheScope", "private"}};
}

}  // namespace causeway::mcp
