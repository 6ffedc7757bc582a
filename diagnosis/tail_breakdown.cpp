#include "diagnosis/tail_breakdown.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "diagnosis/session_scope.h"
#include "diagnosis/stats.h"
#include "common/sanitize.h"
#include "common/units.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

bool traced_call_source(const std::string& source) { return source == "cuda" || source == "driver" || source == "nccl"; }

Result<int64_t> op_id_of(sqlite3* db, const std::string& source, const std::string& name) {
  auto st = Statement::prepare(db, "SELECT id FROM ops WHERE source = ?1 AND name = ?2");
  if (!st) return st.error();
  st->bind(1, source);
  st->bind(2, name);
  if (st->step() != SQLITE_ROW) return make_error("no_data", "op " + name + " is not in the trace DB");
  return st->col_int(0);
}

// The claimed calls of one (op, process) at or above the threshold, by cause.
Result<void> add_causes(sqlite3* db, const SessionScope& s, int64_t op_id, TailOp& t) {
  auto st = Statement::prepare(db,
                               "SELECT cause, chain_id, count(*), sum(dur_ns), sum(lost_ns) FROM call_causes "
                               "WHERE session_id = ?1 AND op_id = ?2 AND pid = ?3 AND gap = 0 AND dur_ns >= ?4 "
                               "AND ts_ns >= ?5 AND ts_ns <= ?6 GROUP BY cause, chain_id");
  if (!st) return st.error();
  st->bind(1, s.session_id);
  st->bind(2, op_id);
  st->bind(3, int64_t{t.pid});
  st->bind(4, static_cast<int64_t>(t.threshold_ns));
  st->bind(5, s.from_ns);
  st->bind(6, s.to_ns);
  std::map<std::string, TailCause> by;
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    TailCause& c = by[st->col_text(0)];
    c.cause = st->col_text(0);
    c.chain_ids.push_back(st->col_text(1));
    c.calls += static_cast<uint64_t>(st->col_int(2));
    c.time_ns += st->col_double(3);
    c.lost_ns += st->col_double(4);
  }
  if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db));
  uint64_t explained = 0;
  double explained_ns = 0;
  for (auto& [name, c] : by) {
    explained += c.calls;
    explained_ns += c.time_ns;
    t.causes.push_back(std::move(c));
  }
  std::sort(t.causes.begin(), t.causes.end(), [](const TailCause& a, const TailCause& b) { return a.time_ns > b.time_ns; });
  // The tail's count and time come from the histograms (midpoints), the claims' from exact
  // durations: the difference can dip a hair below zero.
  t.tail_calls = std::max(t.tail_calls, explained);
  t.tail_ns = std::max(t.tail_ns, explained_ns);
  t.unexplained_calls = t.tail_calls - explained;
  t.unexplained_ns = t.unexplained_calls == 0 ? 0.0 : std::max(0.0, t.tail_ns - explained_ns);
  return {};
}

double share(double part, double whole) { return whole > 0 ? std::round(part / whole * 1000) / 1000 : 0; }

std::string quantile_name(double q) {
  char b[32];
  std::snprintf(b, sizeof b, "p%g", q * 100.0);
  return b;
}

}  // namespace

Result<TailResult> tail_breakdown(sqlite3* db, const TailQuery& q) {
  if (!(q.quantile > 0 && q.quantile < 1))
    return make_error("invalid_argument", "quantile must be between 0 and 1 (0.99 = p99, 0.999 = p99.9)");
  auto scope = resolve_scope(db, q.session_id, q.since_ns);
  if (!scope) return scope.error();
  StatsQuery sq;
  sq.session_id = scope->session_id;
  sq.since_ns = q.since_ns;
  sq.pid = q.pid;
  sq.op = q.op;
  auto stats = compute_stats(db, sq);
  if (!stats) return stats.error();
  TailResult out;
  out.session_id = scope->session_id;
  out.from_ns = stats->from_ns;
  out.to_ns = stats->to_ns;
  out.quantile = q.quantile;
  SessionScope window = *scope;
  window.from_ns = stats->from_ns;
  window.to_ns = stats->to_ns;
  for (const OpStats& o : stats->ops) {
    if (!traced_call_source(o.source) || o.count < q.min_calls) continue;
    TailOp t;
    t.source = o.source;
    t.op = o.op;
    t.pid = o.pid;
    t.comm = o.comm;
    t.calls = o.count;
    t.quantile_ns = o.hist.percentile(q.quantile, o.min_ns, o.max_ns);
    t.threshold_ns = std::max(o.hist.tail_floor(q.quantile), o.min_ns);
    const LatencyHistogram::Tail tail = o.hist.at_or_above(t.threshold_ns, o.max_ns);
    t.tail_calls = tail.count;
    t.tail_ns = tail.sum;
    out.ops.push_back(std::move(t));
  }
  std::sort(out.ops.begin(), out.ops.end(), [](const TailOp& a, const TailOp& b) {
    if (a.tail_ns != b.tail_ns) return a.tail_ns > b.tail_ns;
    return a.op != b.op ? a.op < b.op : a.pid < b.pid;
  });
  if (q.limit && out.ops.size() > q.limit) {
    out.ops.resize(q.limit);
    out.truncated = true;
  }
  std::map<std::pair<std::string, std::string>, int64_t> ids;
  for (TailOp& t : out.ops) {
    auto key = std::make_pair(t.source, t.op);
    if (!ids.count(key)) {
      auto id = op_id_of(db, t.source, t.op);
      if (!id) return id.error();
      ids[key] = *id;
    }
    if (auto r = add_causes(db, window, ids[key], t); !r) return r.error();
  }
  return out;
}

namespace {
// Op names, causes and chain ids come from the DB (ops, call_causes), which may be hostile.
std::vector<std::string> sanitized_ids(const std::vector<std::string>& ids) {
  std::vector<std::string> out;
  for (const std::string& id : ids) out.push_back(sanitize_untrusted(id, 64));
  return out;
}
}  // namespace

nlohmann::json tail_to_json(const TailResult& r) {
  nlohmann::json ops = nlohmann::json::array();
  for (const TailOp& t : r.ops) {
    nlohmann::json causes = nlohmann::json::array();
    for (const TailCause& c : t.causes)
      causes.push_back({{"cause", sanitize_untrusted(c.cause, 64)},
                        {"calls", c.calls},
                        {"call_share", share(static_cast<double>(c.calls), static_cast<double>(t.tail_calls))},
                        {"time_us", std::round(c.time_ns / 1000.0)},
                        {"time_share", share(c.time_ns, t.tail_ns)},
                        {"lost_us", std::round(c.lost_ns / 1000.0)},
                        {"chain_ids", sanitized_ids(c.chain_ids)}});
    ops.push_back({{"source", sanitize_untrusted(t.source, 64)},
                   {"op", sanitize_untrusted(t.op, 128)},
                   {"pid", t.pid},
                   {"comm", sanitize_untrusted(t.comm, 64)},
                   {"calls", t.calls},
                   {"quantile_us", static_cast<double>(t.quantile_ns) / 1000.0},
                   {"threshold_us", static_cast<double>(t.threshold_ns) / 1000.0},
                   {"tail_calls", t.tail_calls},
                   {"tail_time_us", std::round(t.tail_ns / 1000.0)},
                   {"causes", causes},
                   {"unexplained",
                    {{"calls", t.unexplained_calls},
                     {"call_share", share(static_cast<double>(t.unexplained_calls), static_cast<double>(t.tail_calls))},
                     {"time_us", std::round(t.unexplained_ns / 1000.0)},
                     {"time_share", share(t.unexplained_ns, t.tail_ns)}}}});
  }
  return {{"session_id", r.session_id},
          {"window", {{"from_ns", r.from_ns}, {"to_ns", r.to_ns}}},
          {"quantile", r.quantile},
          {"ops", ops},
          {"truncated", r.truncated}};
}

std::string tail_to_text(const TailResult& r) {
  std::string out;
  const std::string qn = quantile_name(r.quantile);
  if (r.ops.empty()) return "no CUDA/NCCL op with enough calls for a " + qn + " tail in this window\n";
  auto pct = [](double part, double whole) {
    char b[16];
    std::snprintf(b, sizeof b, "%.0f%%", whole > 0 ? part / whole * 100.0 : 0.0);
    return std::string(b);
  };
  for (const TailOp& t : r.ops) {
    out += sanitize_untrusted(t.op, 128) + " in " + sanitize_untrusted(t.comm, 64) + " (pid " + std::to_string(t.pid) + "): " + qn + " " +
           format_duration_ns(static_cast<int64_t>(t.quantile_ns)) + " over " + std::to_string(t.calls) + " calls; the " +
           std::to_string(t.tail_calls) + " calls >= " + format_duration_ns(static_cast<int64_t>(t.threshold_ns)) + " took " +
           format_duration_ns(static_cast<int64_t>(t.tail_ns)) + ":\n";
    for (const TailCause& c : t.causes) {
      out += "  " + sanitize_untrusted(c.cause, 64) + ": " + std::to_string(c.calls) + " calls (" + pct(static_cast<double>(c.calls), static_cast<double>(t.tail_calls)) +
             "), " + format_duration_ns(static_cast<int64_t>(c.time_ns)) + " (" + pct(c.time_ns, t.tail_ns) + " of the tail time), " +
             format_duration_ns(static_cast<int64_t>(c.lost_ns)) + " lost to it; chain " +
             sanitize_untrusted(c.chain_ids.front(), 64) +
             (c.chain_ids.size() > 1 ? " and " + std::to_string(c.chain_ids.size() - 1) + " more" : "") + "\n";
    }
    out += "  unexplained: " + std::to_string(t.unexplained_calls) + " calls (" +
           pct(static_cast<double>(t.unexplained_calls), static_cast<double>(t.tail_calls)) + "), " +
           format_duration_ns(static_cast<int64_t>(t.unexplained_ns)) + " (" + pct(t.unexplained_ns, t.tail_ns) + ")" +
           (t.unexplained_calls == t.tail_calls ? " — no cause claimed any of these calls" : "") + "\n";
  }
  if (r.truncated) out += "(more ops left out: narrow with --op / --pid)\n";
  return out;
}

}  // namespace causeway
