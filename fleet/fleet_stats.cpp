#include "fleet/fleet_stats.h"

#include <algorithm>

#include "common/sanitize.h"
#include "fleet/fleet_explain.h"
#include "fleet/fleet_query.h"
#include "fleet/fleet_schema.h"
#include "fleet/tsv.h"

namespace causeway::fleet {

namespace {

std::string filters(ClickHouse& ch, const StatsQuery& q, const FleetWindow& w, const char* kind) {
  std::string f = "ts_ns BETWEEN " + std::to_string(w.from_ns) + " AND " + std::to_string(w.to_ns) +
                  " AND op_id IN (SELECT id FROM " + ch.table("ops") + " WHERE kind = '" + kind + "'";
  if (q.source) f += " AND source = " + sql_quote(*q.source);
  if (q.op) f += " AND name = " + sql_quote(*q.op);
  f += ")";
  if (q.pid) f += " AND pid = " + std::to_string(*q.pid);
  return f;
}

struct OpName {
  std::string source, name;
};

Result<std::map<int64_t, OpName>> op_names(ClickHouse& ch) {
  auto rows = ch.select("SELECT id, any(source), any(name) FROM " + ch.table("ops") + " GROUP BY id", {ColumnKind::Int, ColumnKind::Text, ColumnKind::Text});
  if (!rows) return rows.error();
  std::map<int64_t, OpName> out;
  for (const auto& r : *rows)
    if (r.size() >= 3) out[to_i64(r[0])] = {r[1], r[2]};
  return out;
}

Result<std::map<std::pair<std::string, int64_t>, std::string>> comms(ClickHouse& ch) {
  auto rows = ch.select("SELECT host, pid, any(comm) FROM " + ch.table("processes") + " FINAL GROUP BY host, pid", {ColumnKind::Text, ColumnKind::Int, ColumnKind::Text});
  if (!rows) return rows.error();
  std::map<std::pair<std::string, int64_t>, std::string> out;
  for (const auto& r : *rows)
    if (r.size() >= 3) out[{r[0], to_i64(r[1])}] = r[2];
  return out;
}

}  // namespace

Result<FleetStats> fleet_stats(ClickHouse& ch, const StatsQuery& q) {
  if (auto r = check_fleet_schema(ch); !r) return r.error();
  auto w = fleet_window(ch, q.since_ns);
  if (!w) return w.error();
  auto names = op_names(ch);
  if (!names) return names.error();
  auto comm = comms(ch);
  if (!comm) return comm.error();
  // Exact quantiles: the fleet store has every call, so no histogram is needed here.
  auto rows = ch.select("SELECT host, pid, op_id, count(), countIf(ret != 0), sum(dur_ns), max(dur_ns), min(dur_ns), "
                        "quantilesExact(0.5, 0.95, 0.99)(dur_ns) AS q, q[1], q[2], q[3] FROM " + ch.table("events") +
                        " WHERE " + filters(ch, q, *w, "call") + " GROUP BY host, pid, op_id ORDER BY sum(dur_ns) DESC, host, pid, op_id", {ColumnKind::Text, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Array, ColumnKind::Float, ColumnKind::Float, ColumnKind::Float});
  if (!rows) return rows.error();
  FleetStats s;
  s.all.from_ns = w->from_ns;
  s.all.to_ns = w->to_ns;
  for (const auto& r : *rows) {
    if (r.size() < 12) continue;
    if (q.top_n && s.all.ops.size() == q.top_n) {
      s.all.truncated = true;
      break;
    }
    OpStats o;
    const int64_t op_id = to_i64(r[2]);
    auto n = names->find(op_id);
    o.source = n == names->end() ? "" : n->second.source;
    o.op = n == names->end() ? "op " + std::to_string(op_id) : n->second.name;
    o.pid = static_cast<uint32_t>(to_i64(r[1]));
    auto c = comm->find({r[0], to_i64(r[1])});
    o.comm = c == comm->end() ? "" : c->second;
    o.count = static_cast<uint64_t>(to_i64(r[3]));
    o.errors = static_cast<uint64_t>(to_i64(r[4]));
    o.total_ns = static_cast<uint64_t>(to_i64(r[5]));
    o.max_ns = static_cast<uint64_t>(to_i64(r[6]));
    o.min_ns = static_cast<uint64_t>(to_i64(r[7]));
    o.p50_ns = static_cast<uint64_t>(to_f64(r[9]));
    o.p95_ns = static_cast<uint64_t>(to_f64(r[10]));
    o.p99_ns = static_cast<uint64_t>(to_f64(r[11]));
    s.all.ops.push_back(std::move(o));
    s.op_hosts.push_back(r[0]);
  }
  // Point events per host, and the context switches (sched) as the local command counts them.
  auto ev = ch.select("SELECT host, op_id, count() FROM " + ch.table("events") + " WHERE " + filters(ch, q, *w, "event") +
                      " GROUP BY host, op_id ORDER BY host, count() DESC", {ColumnKind::Text, ColumnKind::Int, ColumnKind::Int});
  if (!ev) return ev.error();
  auto sched = ch.select("SELECT host, count() FROM " + ch.table("sched") + " WHERE ts_ns BETWEEN " + std::to_string(w->from_ns) +
                         " AND " + std::to_string(w->to_ns) + " GROUP BY host ORDER BY host", {ColumnKind::Text, ColumnKind::Int});
  if (!sched) return sched.error();
  for (const auto& r : *sched)
    if (r.size() >= 2 && !q.source && !q.op && !q.pid) {
      s.all.host.push_back({"sched_switch", static_cast<uint64_t>(to_i64(r[1]))});
      s.event_hosts.push_back(r[0]);
    }
  for (const auto& r : *ev) {
    if (r.size() < 3) continue;
    auto n = names->find(to_i64(r[1]));
    s.all.host.push_back({n == names->end() ? "op " + r[1] : n->second.name, static_cast<uint64_t>(to_i64(r[2]))});
    s.event_hosts.push_back(r[0]);
  }
  auto dropped = ch.select("SELECT sumIf(value, name = 'dropped_ring'), sumIf(value, name = 'dropped_writer') FROM " +
                           ch.table("collector_stats") + " FINAL", {ColumnKind::Int, ColumnKind::Int});
  if (!dropped) return dropped.error();
  if (!dropped->empty() && dropped->front().size() >= 2) {
    s.all.dropped_ring = static_cast<uint64_t>(to_i64(dropped->front()[0]));
    s.all.dropped_writer = static_cast<uint64_t>(to_i64(dropped->front()[1]));
  }
  auto hosts = fleet_hosts(ch);
  if (!hosts) return hosts.error();
  s.hosts = std::move(*hosts);
  return s;
}

nlohmann::json fleet_stats_json(const FleetStats& s) {
  nlohmann::json doc = stats_to_json(s.all);
  doc.erase("session_id");
  doc.erase("system");
  for (size_t i = 0; i < doc["ops"].size() && i < s.op_hosts.size(); ++i) doc["ops"][i]["host"] = sanitize_untrusted(s.op_hosts[i], 128);
  for (size_t i = 0; i < doc["host"].size() && i < s.event_hosts.size(); ++i)
    doc["host"][i]["host"] = sanitize_untrusted(s.event_hosts[i], 128);
  doc["hosts"] = s.hosts;
  return doc;
}

std::string fleet_stats_text(const FleetStats& s) {
  std::vector<std::string> order = s.op_hosts;
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  std::string out;
  for (const std::string& h : order) {
    StatsResult one = s.all;
    one.ops.clear();
    one.host.clear();
    for (size_t i = 0; i < s.all.ops.size(); ++i)
      if (s.op_hosts[i] == h) one.ops.push_back(s.all.ops[i]);
    for (size_t i = 0; i < s.all.host.size(); ++i)
      if (s.event_hosts[i] == h) one.host.push_back(s.all.host[i]);
    out += "Host " + sanitize_untrusted(h, 128) + ":\n" + stats_to_table(one) + "\n";
  }
  return out;
}

}  // namespace causeway::fleet
