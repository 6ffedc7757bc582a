#include "mcp/backends.h"

#include <algorithm>

#include "sqlguard/guard.h"
#include "sqlguard/schema_description.h"
#include "synth/scenarios.h"

namespace causeway::mcp {

Result<json> stats_document(sqlite3* db, const StatsQuery& query) {
  auto r = compute_stats(db, query);
  if (!r) return r.error();
  // The same builder as `causeway stats --json`, plus which session answered and whether
  // the top-N list was cut.
  json doc = stats_to_json(r.value());
  doc["session_id"] = r->session_id;
  doc["truncated"] = r->truncated;
  return doc;
}

Result<json> chains_document(sqlite3* db, const ChainQuery& query) { return load_chains(db, query); }

Result<json> guarded_query(sqlite3* db, const std::string& sql, const SqlLimits& limits, CancelToken& cancel) {
  sqlguard::QueryLimits l;
  l.deadline_ms = limits.timeout_ms;
  l.max_rows = std::min(limits.max_rows, sqlguard::kMaxRowsHardCap);
  l.max_bytes = limits.max_bytes;
  l.cancel = cancel.flag();
  CancelScope scope(cancel, db);
  auto r = sqlguard::run_guarded_query(db, sql, l);
  if (!r) return r.error();
  return sqlguard::to_json(r.value());
}

Result<json> schema_document(sqlite3* db) { return sqlguard::describe_schema(db); }

std::vector<DemoScenario> demo_scenario_list() {
  std::vector<DemoScenario> out;
  for (const auto& s : demo_scenarios()) out.push_back({s.name, s.description});
  return out;
}

Result<json> write_demo(const std::string& db_path, const std::string& scenario, uint64_t seed) {
  DemoOptions o;
  o.scenario = scenario;
  o.seed = seed;
  auto r = run_demo(db_path, o);
  if (!r) return r.error();
  return json{{"session_id", r->session_id}, {"events_written", r->events_written}, {"sched_written", r->sched_written}};
}

}  // namespace causeway::mcp
