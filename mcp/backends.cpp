#include "mcp/backends.h"

#include <algorithm>

#include "sqlguard/guard.h"
#include "sqlguard/schema_description.h"
#include "synth/scenarios.h"
#include "tracedb/stale_read.h"

namespace causeway::mcp {

Result<json> stats_document(sqlite3* db, const StatsQuery& query, size_t offset) {
  StatsQuery all = query;
  all.top_n = 0;  // every op, ranked: the page is cut here so the total is known
  auto r = compute_stats(db, all);
  if (!r) return r.error();
  StatsResult& st = r.value();
  const size_t total = st.ops.size();
  const size_t from = std::min(offset, total);
  const size_t to = query.top_n ? std::min(total, from + query.top_n) : total;
  st.ops = std::vector<OpStats>(std::make_move_iterator(st.ops.begin() + static_cast<std::ptrdiff_t>(from)),
                                std::make_move_iterator(st.ops.begin() + static_cast<std::ptrdiff_t>(to)));
  st.truncated = to < total;
  // The same builder as `causeway stats --json`, plus the paging.
  json doc = stats_to_json(st);
  doc["total_ops"] = total;
  if (to < total) doc["next_cursor"] = "o:" + std::to_string(to);
  note_stale_read(doc, db);
  return doc;
}

Result<json> chains_document(sqlite3* db, const ChainQuery& query) {
  auto doc = load_chains(db, query);
  if (doc) note_stale_read(*doc, db);
  return doc;
}

Result<json> guarded_query(sqlite3* db, const std::string& sql, const SqlLimits& limits, CancelToken& cancel) {
  sqlguard::QueryLimits l;
  l.deadline_ms = limits.timeout_ms;
  l.max_rows = std::min(limits.max_rows, sqlguard::kMaxRowsHardCap);
  l.max_bytes = limits.max_bytes;
  l.skip_rows = limits.skip_rows;
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
