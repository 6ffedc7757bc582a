#include "diagnosis/stats.h"

#include "bpf/events.h"

#include "diagnosis/system_info.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "diagnosis/event_window.h"
#include "diagnosis/session_scope.h"
#include "common/sanitize.h"
#include "common/units.h"
#include "common/untrusted_json.h"
#include "tracedb/event_columns.h"
#include "tracedb/histogram.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;

struct Acc {
  uint64_t count = 0, sum = 0, min = UINT64_MAX, max = 0, errors = 0;
  LatencyHistogram hist;
};

struct OpMeta {
  std::string source, name;
  bool is_call = true;
};

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : a / b; }
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : (a - b + 1) / b; }

Result<std::map<int64_t, OpMeta>> load_ops(sqlite3* db) {
  auto st = Statement::prepare(db, "SELECT id, source, name, kind FROM ops");
  if (!st) return st.error();
  std::map<int64_t, OpMeta> ops;
  while (st->step() == SQLITE_ROW) ops[st->col_int(0)] = OpMeta{st->col_text(1), st->col_text(2), st->col_text(3) == "call"};
  return ops;
}

bool op_selected(const OpMeta& m, const StatsQuery& q) {
  if (q.source && m.source != *q.source) return false;
  if (q.op && m.name != *q.op) return false;
  return true;
}

using Key = std::pair<int64_t, uint32_t>;  // op id, pid

Result<void> add_rollups(sqlite3* db, const SessionScope& s, int64_t sec_lo, int64_t sec_hi, const StatsQuery& q,
                         std::map<Key, Acc>& accs) {
  if (sec_lo >= sec_hi) return {};
  auto st = Statement::prepare(db,
                               "SELECT op_id, pid, count, sum_ns, min_ns, max_ns, errors, hist FROM rollups "
                               "WHERE sec >= ?1 AND sec < ?2 AND session_id = ?3 AND (?4 IS NULL OR pid = ?4)");
  if (!st) return st.error();
  st->bind(1, sec_lo);
  st->bind(2, sec_hi);
  st->bind(3, s.session_id);
  if (q.pid) st->bind(4, int64_t{*q.pid});
  else st->bind_null(4);
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    Acc& a = accs[{st->col_int(0), static_cast<uint32_t>(st->col_int(1))}];
    a.count += static_cast<uint64_t>(st->col_int(2));
    a.sum += static_cast<uint64_t>(st->col_int(3));
    a.min = std::min(a.min, static_cast<uint64_t>(st->col_int(4)));
    a.max = std::max(a.max, static_cast<uint64_t>(st->col_int(5)));
    a.errors += static_cast<uint64_t>(st->col_int(6));
    if (!a.hist.merge_encoded(st->col_blob(7)))
      return make_error("db_corrupt", "a rollup histogram in the trace DB is malformed");
  }
  if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db));
  return {};
}

Result<void> add_raw(sqlite3* db, const SessionScope& s, int64_t from_ns, int64_t to_ns, bool include_end,
                     const StatsQuery& q, std::map<Key, Acc>& accs) {
  if (from_ns > to_ns || (from_ns == to_ns && !include_end)) return {};
  auto ids = event_ids_for_window(db, s.session_id, from_ns, to_ns);
  if (!ids) return ids.error();
  constexpr EventColumns<4> kCols{{EventCol::op_id, EventCol::pid, EventCol::dur_ns, EventCol::ret}};
  auto ev = Statement::prepare(db, "SELECT " + kCols.sql() + " FROM events WHERE id BETWEEN ?5 AND ?6 AND ts_ns >= ?1 AND ts_ns " +
                                       (include_end ? "<=" : "<") +
                                       " ?2 AND session_id = ?3 AND (?4 IS NULL OR pid = ?4)");
  if (!ev) return ev.error();
  ev->bind(1, from_ns);
  ev->bind(2, to_ns);
  ev->bind(3, s.session_id);
  if (q.pid) ev->bind(4, int64_t{*q.pid});
  else ev->bind_null(4);
  ev->bind(5, ids->lo);
  ev->bind(6, ids->hi);
  int rc;
  while ((rc = ev->step()) == SQLITE_ROW) {
    // A thread's run of calls counted in the kernel: those calls are in the rollups, with their
    // histogram (docs/COLLECTOR.md "Aggregated calls"), not here.
    if (ev->col_int(kCols.at(EventCol::op_id)) == CW_OP_CALLS_AGGREGATED) continue;
    Acc& a = accs[{ev->col_int(kCols.at(EventCol::op_id)), static_cast<uint32_t>(ev->col_int(kCols.at(EventCol::pid)))}];
    uint64_t d = static_cast<uint64_t>(std::max<int64_t>(0, ev->col_int(kCols.at(EventCol::dur_ns))));
    ++a.count;
    a.sum += d;
    a.min = std::min(a.min, d);
    a.max = std::max(a.max, d);
    a.errors += ev->col_int(kCols.at(EventCol::ret)) != 0 ? 1 : 0;
    a.hist.add(d);
  }
  if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db));
  // Context switches and wakeups live in their own tables; their op ids are fixed
  // (400 sched_switch, 401 sched_wakeup in bpf/events.h), keyed like the writer's rollups.
  struct HostTable {
    const char* sql_lt;
    const char* sql_le;
    int64_t op;
  } tables[] = {
      {"SELECT prev_pid FROM sched WHERE ts_ns >= ?1 AND ts_ns < ?2 AND session_id = ?3 AND (?4 IS NULL OR prev_pid = ?4)",
       "SELECT prev_pid FROM sched WHERE ts_ns >= ?1 AND ts_ns <= ?2 AND session_id = ?3 AND (?4 IS NULL OR prev_pid = ?4)",
       400},
      {"SELECT pid FROM wakeups WHERE ts_ns >= ?1 AND ts_ns < ?2 AND session_id = ?3 AND (?4 IS NULL OR pid = ?4)",
       "SELECT pid FROM wakeups WHERE ts_ns >= ?1 AND ts_ns <= ?2 AND session_id = ?3 AND (?4 IS NULL OR pid = ?4)", 401},
  };
  for (const HostTable& t : tables) {
    auto st = Statement::prepare(db, include_end ? t.sql_le : t.sql_lt);
    if (!st) return st.error();
    st->bind(1, from_ns);
    st->bind(2, to_ns);
    st->bind(3, s.session_id);
    if (q.pid) st->bind(4, int64_t{*q.pid});
    else st->bind_null(4);
    while ((rc = st->step()) == SQLITE_ROW) {
      Acc& a = accs[{t.op, static_cast<uint32_t>(st->col_int(0))}];
      ++a.count;
      a.min = 0;
      a.hist.add(0);
    }
    if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db));
  }
  return {};
}

std::map<uint32_t, std::string> load_comms(sqlite3* db, int64_t session_id) {
  std::map<uint32_t, std::string> comms;
  auto st = Statement::prepare(db, "SELECT pid, comm FROM processes WHERE session_id = ?1");
  if (!st) return comms;
  st->bind(1, session_id);
  while (st->step() == SQLITE_ROW) comms[static_cast<uint32_t>(st->col_int(0))] = st->col_text(1);
  return comms;
}

void load_drops(sqlite3* db, int64_t session_id, StatsResult& out) {
  auto st = Statement::prepare(db, "SELECT name, value FROM collector_stats WHERE session_id = ?1");
  if (!st) return;
  st->bind(1, session_id);
  while (st->step() == SQLITE_ROW) {
    std::string name = st->col_text(0);
    auto v = static_cast<uint64_t>(std::max<int64_t>(0, st->col_int(1)));
    // Totals only: dropped_ring = dropped_ring_calls + dropped_ring_host, and dropped_writer
    // includes dropped_write_error and the per-op dropped_writer.OP rows.
    if (name == "dropped_ring") out.dropped_ring = v;
    else if (name == "dropped_writer") out.dropped_writer = v;
  }
}

// A merged session (causeway merge): one system per host and the calls of each host.
Result<void> add_host_breakdown(sqlite3* db, int64_t session_id, StatsResult& out) {
  auto hosts = HostOfPid::load(db, session_id);
  if (!hosts) return hosts.error();
  if (!hosts->merged()) return {};
  out.systems = nlohmann::json::array();
  std::map<int64_t, nlohmann::json> per;  // by pid_base: two hosts may share a name
  for (const HostSpan& h : hosts->spans()) {
    out.systems.push_back(h.system);
    per[h.pid_base] = {{"host", h.host}, {"pid_base", h.pid_base}, {"calls", 0}, {"errors", 0}, {"total_us", 0.0},
                       {"ops", nlohmann::json::array()}};
  }
  for (const OpStats& o : out.ops) {
    nlohmann::json& h = per[o.pid - hosts->host_pid(o.pid)];
    h["host"] = hosts->host(o.pid);
    h["calls"] = h.value("calls", uint64_t{0}) + o.count;
    h["errors"] = h.value("errors", uint64_t{0}) + o.errors;
    h["total_us"] = h.value("total_us", 0.0) + static_cast<double>(o.total_ns) / 1000.0;
    h["ops"].push_back({{"op", o.op}, {"pid", o.pid}, {"host_pid", hosts->host_pid(o.pid)}, {"count", o.count}});
  }
  out.by_host = nlohmann::json::array();
  for (auto& [name, h] : per) out.by_host.push_back(std::move(h));
  // The merged session's own system names no single host.
  if (out.system.is_object()) out.system["hosts"] = out.systems.size();
  return {};
}

}  // namespace

Result<StatsResult> compute_stats(sqlite3* db, const StatsQuery& query) {
  auto scope = resolve_scope(db, query.session_id, query.since_ns);
  if (!scope) return scope.error();
  auto ops = load_ops(db);
  if (!ops) return ops.error();
  const SessionScope& s = *scope;

  // Whole seconds inside the window that rollups already cover come from rollups; the
  // partial seconds at the edges and the not-yet-rolled-up tail come from raw rows.
  // A window edge that is the data's own edge (the session start without --since; the end
  // of data always) leaves no event outside it in that second, so its rollup is exact too.
  int64_t sec_lo = query.since_ns ? ceil_div(s.from_ns, kNsPerSec) : floor_div(s.from_ns, kNsPerSec);
  int64_t sec_hi = std::min(floor_div(s.to_ns, kNsPerSec) + 1, floor_div(s.rolled_up_to_ns, kNsPerSec));
  std::map<Key, Acc> accs;
  if (sec_lo < sec_hi) {
    if (auto r = add_raw(db, s, s.from_ns, sec_lo * kNsPerSec, false, query, accs); !r) return r.error();
    if (auto r = add_rollups(db, s, sec_lo, sec_hi, query, accs); !r) return r.error();
    if (auto r = add_raw(db, s, sec_hi * kNsPerSec, s.to_ns, true, query, accs); !r) return r.error();
  } else {
    if (auto r = add_raw(db, s, s.from_ns, s.to_ns, true, query, accs); !r) return r.error();
  }

  StatsResult out;
  out.session_id = s.session_id;
  out.from_ns = s.from_ns;
  out.to_ns = s.to_ns;
  if (auto sys = load_session_system(db, s.session_id); sys) out.system = std::move(*sys);
  else return sys.error();
  auto comms = load_comms(db, s.session_id);
  std::map<std::string, uint64_t> host;
  for (auto& [key, a] : accs) {
    auto it = ops->find(key.first);
    OpMeta meta = it != ops->end() ? it->second : OpMeta{"unknown", "op#" + std::to_string(key.first), true};
    if (!op_selected(meta, query)) continue;
    if (!meta.is_call) {
      host[meta.name] += a.count;
      continue;
    }
    OpStats o;
    o.source = meta.source;
    o.op = meta.name;
    o.pid = key.second;
    if (auto c = comms.find(key.second); c != comms.end()) o.comm = c->second;
    o.count = a.count;
    o.total_ns = a.sum;
    o.min_ns = a.count ? a.min : 0;
    o.max_ns = a.max;
    o.p50_ns = a.hist.percentile(0.50, o.min_ns, a.max);
    o.p95_ns = a.hist.percentile(0.95, o.min_ns, a.max);
    o.p99_ns = a.hist.percentile(0.99, o.min_ns, a.max);
    o.errors = a.errors;
    o.hist = std::move(a.hist);
    out.ops.push_back(std::move(o));
  }
  std::sort(out.ops.begin(), out.ops.end(), [](const OpStats& a, const OpStats& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    if (a.op != b.op) return a.op < b.op;
    return a.pid < b.pid;
  });
  if (query.top_n && out.ops.size() > query.top_n) {
    out.ops.resize(query.top_n);
    out.truncated = true;
  }
  for (auto& [name, count] : host) out.host.push_back(HostCount{name, count});
  std::sort(out.host.begin(), out.host.end(), [](const HostCount& a, const HostCount& b) { return a.count > b.count; });
  load_drops(db, s.session_id, out);
  if (auto r = add_host_breakdown(db, s.session_id, out); !r) return r.error();
  return out;
}

namespace {
double us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }
// Rounds to 0.001 µs (1 ns) so JSON stays compact without losing precision.
double round_us(uint64_t ns) { return static_cast<double>(static_cast<int64_t>(ns)) / 1000.0; }
}  // namespace

namespace {
// Host identity strings came from the traced host (hostname, CPU model, GPU names).
nlohmann::json sanitized(nlohmann::json j) { return sanitize_json_strings(std::move(j), 128); }
}  // namespace

nlohmann::json stats_to_json(const StatsResult& stats) {
  nlohmann::json ops = nlohmann::json::array();
  for (const OpStats& o : stats.ops) {
    ops.push_back({{"source", sanitize_untrusted(o.source, 64)},
                   {"op", sanitize_untrusted(o.op, 128)},
                   {"pid", o.pid},
                   {"comm", sanitize_untrusted(o.comm, 64)},
                   {"count", o.count},
                   {"total_us", round_us(o.total_ns)},
                   {"p50_us", round_us(o.p50_ns)},
                   {"p95_us", round_us(o.p95_ns)},
                   {"p99_us", round_us(o.p99_ns)},
                   {"max_us", round_us(o.max_ns)},
                   {"errors", o.errors}});
  }
  nlohmann::json host = nlohmann::json::array();
  for (const HostCount& h : stats.host) host.push_back({{"event", sanitize_untrusted(h.event, 64)}, {"count", h.count}});
  (void)us;
  nlohmann::json doc = {{"session_id", stats.session_id},
          {"window", {{"from_ns", stats.from_ns}, {"to_ns", stats.to_ns}}},
          {"ops", ops},
          {"host", host},
          {"dropped", {{"ring", stats.dropped_ring}, {"writer", stats.dropped_writer}}},
          {"truncated", stats.truncated},
          {"system", sanitized(stats.system)}};
  if (!stats.systems.is_null()) doc["systems"] = sanitized(stats.systems);
  if (!stats.by_host.is_null()) doc["ops_by_host"] = sanitized(stats.by_host);
  return doc;
}

std::string stats_to_table(const StatsResult& stats) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"SOURCE", "OP", "PID", "COMM", "CALLS", "TOTAL", "P50", "P95", "P99", "MAX", "ERRORS"});
  for (const OpStats& o : stats.ops)
    rows.push_back({sanitize_untrusted(o.source, 32), sanitize_untrusted(o.op, 64), std::to_string(o.pid),
                    sanitize_untrusted(o.comm, 16), std::to_string(o.count),
                    format_duration_ns(static_cast<int64_t>(o.total_ns)), format_duration_ns(static_cast<int64_t>(o.p50_ns)),
                    format_duration_ns(static_cast<int64_t>(o.p95_ns)), format_duration_ns(static_cast<int64_t>(o.p99_ns)),
                    format_duration_ns(static_cast<int64_t>(o.max_ns)), std::to_string(o.errors)});
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::ostringstream out;
  // Session 0 is no session: the fleet store's per-host tables (fleet/fleet_stats.cpp) span every shipped one.
  if (stats.session_id > 0) out << "session " << stats.session_id << ", ";
  out << "window " << format_utc(stats.from_ns) << " .. " << format_utc(stats.to_ns)
      << " (" << format_duration_ns(stats.to_ns - stats.from_ns) << ")\n\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t i = 0; i < rows[r].size(); ++i) {
      bool numeric = i >= 4 || i == 2;
      std::string cell = rows[r][i];
      std::string pad(width[i] - cell.size(), ' ');
      out << (numeric ? pad + cell : cell + pad) << (i + 1 < rows[r].size() ? "  " : "");
    }
    out << '\n';
  }
  if (stats.ops.empty()) out << "(no calls in this window)\n";
  if (stats.truncated) out << "(list cut to the top " << stats.ops.size() << " ops by total time)\n";
  if (!stats.host.empty()) {
    out << "\nhost:";
    for (const HostCount& h : stats.host) out << "  " << sanitize_untrusted(h.event, 64) << " " << h.count;
    out << '\n';
  }
  out << "dropped: ring " << stats.dropped_ring << ", writer " << stats.dropped_writer << '\n';
  return out.str();
}

}  // namespace causeway
