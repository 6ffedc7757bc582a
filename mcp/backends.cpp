#include "mcp/backends.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "tracedb/sqlite_handle.h"

#if CAUSEWAY_HAVE_SYNTH
#include "synth/scenarios.h"
#endif
#if CAUSEWAY_HAVE_SQLGUARD
#include "sqlguard/guard.h"
#include "sqlguard/schema_description.h"
#endif

namespace causeway::mcp {
namespace {

[[maybe_unused]] Result<int64_t> session_or_latest(sqlite3* db, const std::optional<int64_t>& asked) {
  if (asked) return *asked;
  auto id = query_int(db, "SELECT MAX(id) FROM sessions");
  if (!id) return id.error();
  if (!id.value() || *id.value() == 0)
    return make_error("no_data", "The trace DB holds no session yet: run `causeway trace` or `causeway demo` first.");
  return *id.value();
}

[[maybe_unused]] Error sql_error(sqlite3* db, const std::string& what) {
  if (sqlite3_errcode(db) == SQLITE_INTERRUPT)
    return make_error("cancelled", what + " was interrupted (cancelled or over its time limit).");
  return make_error("query_failed", what + " failed: " + sqlite_error_text(db));
}

#if !CAUSEWAY_HAVE_ANALYSIS
// Fallback: exact percentiles from raw events (fine for small DBs; analysis/ answers from
// rollups on large ones).
Result<json> fallback_stats(sqlite3* db, const StatsQuery& q) {
  auto sid = session_or_latest(db, q.session_id);
  if (!sid) return sid.error();
  int64_t from = 0, to = 0;
  {
    auto st = Statement::prepare(db, "SELECT MIN(ts_ns), MAX(ts_ns + dur_ns) FROM events WHERE session_id = ?");
    if (!st) return st.error();
    st->bind(1, sid.value());
    if (st->step() == SQLITE_ROW && !st->col_null(0)) {
      from = st->col_int(0);
      to = st->col_int(1);
    }
  }
  if (q.since_ns && to - *q.since_ns > from) from = to - *q.since_ns;
  auto st = Statement::prepare(db,
      "SELECT o.source, o.name, o.kind, e.pid, e.dur_ns, e.ret FROM events e JOIN ops o ON o.id = e.op_id"
      " WHERE e.session_id = ?1 AND e.ts_ns >= ?2 AND (?3 IS NULL OR e.pid = ?3)"
      " AND (?4 IS NULL OR o.source = ?4) AND (?5 IS NULL OR o.name = ?5)");
  if (!st) return st.error();
  st->bind(1, sid.value());
  st->bind(2, from);
  if (q.pid) st->bind(3, int64_t{*q.pid}); else st->bind_null(3);
  if (q.source) st->bind(4, *q.source); else st->bind_null(4);
  if (q.op) st->bind(5, *q.op); else st->bind_null(5);
  struct Acc {
    std::vector<int64_t> durs;
    uint64_t errors = 0;
  };
  std::map<std::tuple<std::string, std::string, int64_t>, Acc> calls;
  std::map<std::string, uint64_t> host;
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    if (st->col_text(2) == "call") {
      auto& a = calls[{st->col_text(0), st->col_text(1), st->col_int(3)}];
      a.durs.push_back(st->col_int(4));
      a.errors += st->col_int(5) != 0;
    } else {
      ++host[st->col_text(1)];
    }
  }
  if (rc != SQLITE_DONE) return sql_error(db, "Reading events");
  auto comm_of = Statement::prepare(db, "SELECT comm FROM processes WHERE session_id = ? AND pid = ?");
  if (!comm_of) return comm_of.error();
  json ops = json::array();
  std::vector<std::pair<int64_t, json>> rows;
  for (auto& [key, acc] : calls) {
    auto& d = acc.durs;
    std::sort(d.begin(), d.end());
    auto pct = [&](double p) { return d[std::min(d.size() - 1, static_cast<size_t>(p * static_cast<double>(d.size() - 1) + 0.5))] / 1000.0; };
    int64_t total = 0;
    for (int64_t x : d) total += x;
    comm_of->bind(1, sid.value());
    comm_of->bind(2, std::get<2>(key));
    std::string comm = comm_of->step() == SQLITE_ROW ? comm_of->col_text(0) : "";
    comm_of->reset();
    rows.push_back({total, json{{"source", std::get<0>(key)}, {"op", std::get<1>(key)}, {"pid", std::get<2>(key)},
                                {"comm", comm}, {"count", d.size()}, {"total_us", total / 1000.0},
                                {"p50_us", pct(0.50)}, {"p95_us", pct(0.95)}, {"p99_us", pct(0.99)},
                                {"max_us", d.back() / 1000.0}, {"errors", acc.errors}}});
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  bool truncated = false;
  for (auto& r : rows) {
    if (q.top_n && ops.size() == q.top_n) {
      truncated = true;
      break;
    }
    ops.push_back(std::move(r.second));
  }
  json host_arr = json::array();
  for (auto& [name, n] : host) host_arr.push_back({{"event", name}, {"count", n}});
  int64_t dropped_ring = 0, dropped_writer = 0;
  auto cs = Statement::prepare(db, "SELECT name, value FROM collector_stats WHERE session_id = ?");
  if (cs) {
    cs->bind(1, sid.value());
    while (cs->step() == SQLITE_ROW) {
      if (cs->col_text(0) == "dropped_ring") dropped_ring = cs->col_int(1);
      if (cs->col_text(0) == "dropped_writer") dropped_writer = cs->col_int(1);
    }
  }
  return json{{"window", {{"from_ns", from}, {"to_ns", to}}},
              {"session_id", sid.value()},
              {"ops", std::move(ops)},
              {"host", std::move(host_arr)},
              {"dropped", {{"ring", dropped_ring}, {"writer", dropped_writer}}},
              {"truncated", truncated}};
}

Result<json> fallback_chains(sqlite3* db, const ChainQuery& q) {
  auto sid = session_or_latest(db, q.session_id);
  if (!sid) return sid.error();
  auto st = Statement::prepare(db,
      "SELECT doc FROM chains WHERE session_id = ?1 AND (?2 IS NULL OR pid = ?2 OR culprit_pid = ?2)"
      " AND (CASE severity WHEN 'HIGH' THEN 3 WHEN 'MEDIUM' THEN 2 ELSE 1 END) >= ?3"
      " AND (?4 IS NULL OR to_ns >= (SELECT MAX(to_ns) FROM chains WHERE session_id = ?1) - ?4)"
      " ORDER BY CASE severity WHEN 'HIGH' THEN 3 WHEN 'MEDIUM' THEN 2 ELSE 1 END DESC, calls DESC LIMIT ?5");
  if (!st) return st.error();
  st->bind(1, sid.value());
  if (q.pid) st->bind(2, int64_t{*q.pid}); else st->bind_null(2);
  int64_t min_rank = 1;
  if (q.min_severity == "HIGH") min_rank = 3;
  if (q.min_severity == "MEDIUM") min_rank = 2;
  st->bind(3, min_rank);
  if (q.since_ns) st->bind(4, *q.since_ns); else st->bind_null(4);
  st->bind(5, static_cast<int64_t>(q.limit));
  json chains = json::array();
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    json doc = json::parse(st->col_text(0), nullptr, false);
    if (doc.is_object()) chains.push_back(std::move(doc));
  }
  if (rc != SQLITE_DONE) return sql_error(db, "Reading chains");
  return json{{"chains", std::move(chains)}};
}
#endif

#if !CAUSEWAY_HAVE_SQLGUARD
// Fallback guard for builds without sqlguard/: a read-only connection, exactly one statement that
// SQLite itself reports as read-only, an authorizer that refuses ATTACH, PRAGMA writes and
// extension loading, a deadline and row/byte caps.
int fallback_authorizer(void*, int action, const char* a, const char*, const char*, const char*) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_FUNCTION: {
      std::string f = a ? a : "";
      for (const char* bad : {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
        if (f == bad) return SQLITE_DENY;
      return SQLITE_OK;
    }
    default:
      return SQLITE_DENY;
  }
}

struct Deadline {
  std::chrono::steady_clock::time_point until;
  CancelToken* cancel;
};

int deadline_handler(void* p) {
  auto* d = static_cast<Deadline*>(p);
  return (std::chrono::steady_clock::now() > d->until || d->cancel->cancelled()) ? 1 : 0;
}

json column_value(sqlite3_stmt* st, int i) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: return sqlite3_column_int64(st, i);
    case SQLITE_FLOAT: return sqlite3_column_double(st, i);
    case SQLITE_NULL: return nullptr;
    case SQLITE_BLOB: return "<blob " + std::to_string(sqlite3_column_bytes(st, i)) + " bytes>";
    default: {
      const char* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
      return std::string(t ? t : "", sqlite3_column_bytes(st, i));
    }
  }
}

Result<json> fallback_query(sqlite3* db, const std::string& sql, const SqlLimits& limits, CancelToken& cancel) {
  auto t0 = std::chrono::steady_clock::now();
  sqlite3_set_authorizer(db, fallback_authorizer, nullptr);
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &raw, &tail);
  Statement st(raw);
  sqlite3_set_authorizer(db, nullptr, nullptr);
  if (rc != SQLITE_OK)
    return make_error("sql_rejected", "The query was rejected: " + std::string(sqlite3_errmsg(db)) +
                                          ". Only SELECT/WITH over the trace tables and views is allowed; call describe_schema for names.");
  if (!raw) return make_error("sql_rejected", "The query is empty.");
  for (const char* p = tail; p && *p; ++p)
    if (!isspace(static_cast<unsigned char>(*p)) && *p != ';')
      return make_error("sql_rejected", "Send exactly one statement (found more after the first).");
  if (!sqlite3_stmt_readonly(raw)) return make_error("sql_rejected", "Only read-only statements are allowed.");

  Deadline d{t0 + std::chrono::milliseconds(limits.timeout_ms), &cancel};
  sqlite3_progress_handler(db, 1000, deadline_handler, &d);
  CancelScope scope(cancel, db);
  json columns = json::array();
  int n = sqlite3_column_count(raw);
  for (int i = 0; i < n; ++i) columns.push_back(sqlite3_column_name(raw, i));
  json rows = json::array();
  size_t bytes = 0;
  bool truncated = false;
  while ((rc = st.step()) == SQLITE_ROW) {
    if (rows.size() == limits.max_rows || bytes > limits.max_bytes) {
      truncated = true;
      break;
    }
    json row = json::array();
    for (int i = 0; i < n; ++i) row.push_back(column_value(raw, i));
    bytes += row.dump(-1, ' ', false, json::error_handler_t::replace).size();
    rows.push_back(std::move(row));
  }
  sqlite3_progress_handler(db, 0, nullptr, nullptr);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    if (rc == SQLITE_INTERRUPT)
      return make_error(cancel.cancelled() ? "cancelled" : "timeout",
                        cancel.cancelled() ? "The query was cancelled."
                                           : "The query ran past " + std::to_string(limits.timeout_ms) +
                                                 " ms: add a WHERE on ts_ns or session_id, or aggregate (v_op_seconds).");
    return make_error("query_failed", "The query failed: " + std::string(sqlite3_errmsg(db)));
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return json{{"columns", std::move(columns)}, {"rows", std::move(rows)}, {"truncated", truncated}, {"elapsed_ms", ms}};
}

Result<json> fallback_schema(sqlite3* db) {
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> docs;  // (obj,col) → (unit,desc)
  if (auto d = Statement::prepare(db, "SELECT object, column_name, unit, description FROM schema_docs")) {
    while (d->step() == SQLITE_ROW) docs[{d->col_text(0), d->col_text(1)}] = {d->col_text(2), d->col_text(3)};
  }
  auto st = Statement::prepare(db,
      "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"
      " ORDER BY type DESC, name");
  if (!st) return st.error();
  json objects = json::array();
  while (st->step() == SQLITE_ROW) {
    std::string name = st->col_text(0);
    json o = {{"name", name}, {"type", st->col_text(1)}, {"description", docs[{name, ""}].second}, {"columns", json::array()}};
    auto cols = Statement::prepare(db, "SELECT name, type FROM pragma_table_info(?)");
    if (!cols) return cols.error();
    cols->bind(1, name);
    while (cols->step() == SQLITE_ROW) {
      std::string c = cols->col_text(0);
      auto it = docs.find({name, c});
      json col = {{"name", c}, {"type", cols->col_text(1)}};
      if (it != docs.end()) {
        if (!it->second.first.empty()) col["unit"] = it->second.first;
        col["description"] = it->second.second;
      }
      o["columns"].push_back(std::move(col));
    }
    objects.push_back(std::move(o));
  }
  return json{{"objects", std::move(objects)}};
}
#endif

}  // namespace

Result<json> stats_document(sqlite3* db, const StatsQuery& query) {
#if CAUSEWAY_HAVE_ANALYSIS
  auto r = compute_stats(db, query);
  if (!r) return r.error();
  json doc = stats_to_json(r.value());
  doc["session_id"] = r->session_id;
  doc["truncated"] = r->truncated;
  return doc;
#else
  return fallback_stats(db, query);
#endif
}

Result<json> chains_document(sqlite3* db, const ChainQuery& query) {
#if CAUSEWAY_HAVE_ANALYSIS
  return load_chains(db, query);
#else
  return fallback_chains(db, query);
#endif
}

Result<json> guarded_query(sqlite3* db, const std::string& sql, const SqlLimits& limits, CancelToken& cancel) {
#if CAUSEWAY_HAVE_SQLGUARD
  sqlguard::QueryLimits l;
  l.deadline_ms = limits.timeout_ms;
  l.max_rows = std::min(limits.max_rows, sqlguard::kMaxRowsHardCap);
  l.max_bytes = limits.max_bytes;
  l.cancel = cancel.flag();
  CancelScope scope(cancel, db);
  auto r = sqlguard::run_guarded_query(db, sql, l);
  if (!r) return r.error();
  return sqlguard::to_json(r.value());
#else
  return fallback_query(db, sql, limits, cancel);
#endif
}

Result<json> schema_document(sqlite3* db) {
#if CAUSEWAY_HAVE_SQLGUARD
  return sqlguard::describe_schema(db);
#else
  return fallback_schema(db);
#endif
}

std::vector<DemoScenario> demo_scenario_list() {
  std::vector<DemoScenario> out;
#if CAUSEWAY_HAVE_SYNTH
  for (const auto& s : demo_scenarios()) out.push_back({s.name, s.description});
#endif
  return out;
}

bool demo_available() {
#if CAUSEWAY_HAVE_SYNTH
  return true;
#else
  return false;
#endif
}

Result<json> write_demo(const std::string& db_path, const std::string& scenario, uint64_t seed) {
#if CAUSEWAY_HAVE_SYNTH
  DemoOptions o;
  o.scenario = scenario;
  o.seed = seed;
  auto r = run_demo(db_path, o);
  if (!r) return r.error();
  return json{{"session_id", r->session_id}, {"events_written", r->events_written}, {"sched_written", r->sched_written}};
#else
  return make_error("demo_unavailable",
                    "This build has no demo generator (synth module). Use get_trace_stats on the served DB instead.");
#endif
}

}  // namespace causeway::mcp
