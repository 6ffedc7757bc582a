#include "fleet/fleet_straggler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <map>
#include <tuple>
#include <vector>

#include "common/argmax.h"
#include "diagnosis/chain_json.h"
#include "diagnosis/chain_view.h"
#include "common/sanitize.h"
#include "common/units.h"
#include "fleet/tsv.h"

namespace causeway::fleet {

namespace {

// The local rule (diagnosis/causes/nccl_straggler.cpp): last by >= 1 ms, at least 3 times, in
// at least max(40 %, 1.5 / ranks) of the collectives the rank entered.
constexpr int64_t kMinLateNs = 1'000'000;
constexpr int64_t kMinLate = 3;

// One row per (communicator, sequence, op) whose entries come from >= 2 hosts: who entered
// last, by how much after the second-last, and every entry. From the `collectives` table:
// only the collective entries, with the communicator and rank of ranks attached after their
// init already resolved by ship (fleet/tables.cpp).
// Hosts go through the query as cityHash64(host) (kHostId): numbers instead of strings in the
// groups' arrays and the keys after the ARRAY JOIN take ~1.3x less server time and half the
// memory (docs/BENCHMARKS.md "Fleet store"); host_names() turns them back into names.
constexpr const char* kHostId = "cityHash64(host)";

std::string groups_sql(ClickHouse& ch, const std::optional<FleetWindow>& w) {
  const std::string hid = kHostId;
  return "SELECT comm, seq, op_id, argMax(" + hid + ", ts_ns) AS late_host, argMax(pid, ts_ns) AS late_pid, "
         "argMax(rank, ts_ns) AS late_rank, arrayReverseSort(groupArray(ts_ns)) AS sorted, sorted[1] - sorted[2] AS lateness, "
         "max(ts_ns) AS last_ts, groupArray(" + hid + ") AS hs, groupArray(pid) AS ps, groupArray(ts_ns) AS tss, "
         "any(nranks) AS nranks FROM " + ch.table("collectives") + " WHERE comm != 0" +
         (w ? " AND ts_ns BETWEEN " + std::to_string(w->from_ns) + " AND " + std::to_string(w->to_ns) : std::string()) +
         " GROUP BY comm, seq, op_id HAVING count() >= 2 AND min(" + hid + ") != max(" + hid + ")";
}

// kHostId -> host, for every shipped session's host (ship sends `sessions` before any table).
Result<std::map<std::string, std::string>> host_names(ClickHouse& ch) {
  auto rows = ch.select("SELECT DISTINCT toString(" + std::string(kHostId) + "), host FROM " + ch.table("sessions"), {ColumnKind::Text, ColumnKind::Text});
  if (!rows) return rows.error();
  std::map<std::string, std::string> out;
  for (const auto& r : *rows)
    if (r.size() >= 2) out[r[0]] = r[1];
  return out;
}

struct Candidate {
  int64_t comm = 0, op_id = 0, pid = 0, rank = 0, late = 0, entered = 0, first_ns = 0, last_ns = 0, nranks = 0;
  std::string host;  // as stored (the key of lookups); sanitized when written out
  double p50_ns = 0, p99_ns = 0;
  std::vector<std::tuple<std::string, int64_t, int64_t>> victims;  // host, pid, wait ns
};

using HostPid = std::pair<std::string, int64_t>;

// One query for every name needed: (host, pid) → comm, op id → name.
Result<std::map<HostPid, std::string>> comms(ClickHouse& ch, const std::string& pairs) {
  std::map<HostPid, std::string> out;
  if (pairs.empty()) return out;
  auto r = ch.select("SELECT host, pid, any(comm) FROM " + ch.table("processes") + " FINAL WHERE (host, pid) IN (" + pairs +
                     ") GROUP BY host, pid", {ColumnKind::Text, ColumnKind::Int, ColumnKind::Text});
  if (!r) return r.error();
  for (const auto& row : *r)
    if (row.size() >= 3) out[{row[0], to_i64(row[1])}] = sanitize_untrusted(row[2], 64);
  return out;
}

}  // namespace

Result<StragglerRows> straggler_rows(ClickHouse& ch, const std::optional<FleetWindow>& filter) {
  // One pass: every group's entries, summed per (last rank, entrant). An entrant's rows added
  // up are the collectives it entered (late_share's denominator); the row where the entrant is
  // the last rank counts its late entries (>= 1 ms) and their lateness quantiles (kept for that
  // row only: exact quantiles hold every value); the others' rows are what each waiting rank
  // lost in those late groups.
  const std::string late = "lateness >= " + std::to_string(kMinLateNs);
  auto names = std::async(std::launch::async, [ep = ch.endpoint()] {  // at once, on its own connection
    ClickHouse c(ep);
    return host_names(c);
  });
  auto rows = ch.select("SELECT comm, op_id, late_host, late_pid, late_rank, h, p, countIf(" + late + "), sumIf(last_ts - t, " + late +
                   "), quantilesExactIf(0.5, 0.99)(lateness, " + late + " AND h = late_host AND p = late_pid), minIf(last_ts, " +
                   late + "), maxIf(last_ts, " + late + "), any(nranks), count() FROM (" + groups_sql(ch, filter) +
                   ") ARRAY JOIN hs AS h, ps AS p, tss AS t GROUP BY comm, op_id, late_host, late_pid, late_rank, h, p", {ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Array, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int});
  auto hosts = names.get();
  if (!rows) return rows.error();
  if (!hosts) return hosts.error();
  for (auto& r : *rows)  // the late rank's host and the entrant's, as names
    for (size_t i : {size_t{2}, size_t{5}})
      if (i < r.size()) r[i] = (*hosts)[r[i]];
  return rows;
}

// One chain of a late rank (its candidate kept): who was late, by how much, who waited.
nlohmann::json straggler_chain(const Candidate& c, size_t members, std::map<HostPid, std::string>& names,
                               const std::string& op, int64_t window_ns) {
  const double late_share = static_cast<double>(c.late) / static_cast<double>(c.entered);
  const std::string host = sanitize_untrusted(c.host, 128);
  auto by_host_pid = c.victims;  // the store's grouping has no order: hosts, then pids
  std::sort(by_host_pid.begin(), by_host_pid.end());
  nlohmann::json victims = nlohmann::json::array();
  int64_t wait_total = 0;
  std::string victim_hosts;
  for (const auto& [vh, pid, wns] : by_host_pid) {
    const std::string vhost = sanitize_untrusted(vh, 128);
    victims.push_back({{"pid", pid}, {"comm", names[{vh, pid}]}, {"host", vhost}, {"wait_us", wns / 1000}});
    wait_total += wns;
    if (victim_hosts.find(vhost) == std::string::npos) victim_hosts += (victim_hosts.empty() ? "" : ", ") + vhost;
  }
  const auto* top = argmax_by(by_host_pid, [](const auto& v) { return std::get<2>(v); });  // who waited longest
  const int64_t top_pid = top ? std::get<1>(*top) : 0;
  const int64_t lost_ns = wait_total / std::max<int64_t>(1, static_cast<int64_t>(victims.size()));
  const double impact = static_cast<double>(lost_ns) / static_cast<double>(window_ns);
  const std::string rank = "rank " + std::to_string(c.rank) + " (pid " + std::to_string(c.pid) + " on host " + host + ")";
  nlohmann::json d;
  d["id"] = "fleet-nccl_straggler-" + host + "-" + std::to_string(c.pid) + "-comm" + hex(c.comm);
  d["cause"] = "nccl_straggler";
  d["host"] = host;  // the late rank's
  d["severity"] = severity_name(severity_for(impact));
  d["op"] = op;
  d["pid"] = top_pid;
  d["calls"] = c.late;
  d["p50_us"] = std::round(c.p50_ns / 100.0) / 10.0;
  d["p99_us"] = std::round(c.p99_ns / 100.0) / 10.0;
  d["slow_share"] = std::round(late_share * 1000) / 1000;
  d["impact"] = std::round(impact * 1000) / 1000;
  d["lost_us"] = lost_ns / 1000;
  d["where"] = "in_call";
  d["window"] = {{"from_ns", c.first_ns}, {"to_ns", c.last_ns}};
  // The culprit is written by the one serializer of every chain's culprit (diagnosis/chain_json.h).
  Culprit culprit{.pid = static_cast<uint32_t>(c.pid),
                  .comm = names[{c.host, c.pid}],
                  .share_kind = ShareKind::late,
                  .share = std::round(late_share * 1000) / 1000,
                  .rank = c.rank};
  culprit.host = host;
  d["culprit"] = culprit_json(culprit);
  d["victims"] = victims;
  d["stack"] = nlohmann::json::array();
  d["timeline"] = nlohmann::json::array();
  d["summary"] = rank + " entered " + op + " last in " + pct(late_share) + " of " + with_commas(c.entered) +
                 " collectives, " + format_duration_ns(static_cast<int64_t>(c.p50_ns)) +
                 " after the others (median); ranks on " + victim_hosts + " waited " + format_duration_ns(wait_total) +
                 " in total";
  d["evidence"] = {"communicator " + hex(c.comm) + ", " + std::to_string(members) + " ranks on several hosts (nranks " +
                       std::to_string(c.nranks) + "); collectives matched by (comm, seq) across hosts in the fleet store",
                   rank + " was last by >= 1 ms in " + with_commas(c.late) + " of " + with_commas(c.entered) +
                       " collectives; lateness p50 " + format_duration_ns(static_cast<int64_t>(c.p50_ns)) + ", p99 " +
                       format_duration_ns(static_cast<int64_t>(c.p99_ns)),
                   format_duration_ns(lost_ns) + " lost per waiting rank, " + pct(impact) + " of the " +
                       format_duration_ns(window_ns) + " analyzed",
                   "host clocks are assumed in sync (skew 0): a lateness below the hosts' sync error is not evidence "
                   "(docs/FLEET.md \"Clocks\")"};
  d["recommendation"] = "All ranks run at the pace of the slowest: look at " + rank +
                        " on its own host (causeway explain there names what delayed it) so it enters collectives with "
                        "the others.";
  return d;
}

Result<nlohmann::json> straggler_chains(ClickHouse& ch, const StragglerRows& rows, const FleetWindow& w) {
  std::map<int64_t, std::map<HostPid, int64_t>> entries;
  for (const auto& r : rows)
    if (r.size() >= 14) entries[to_i64(r[0])][{r[5], to_i64(r[6])}] += to_i64(r[13]);

  std::map<std::tuple<int64_t, int64_t, std::string, int64_t>, Candidate> cands;
  for (const auto& r : rows) {
    if (r.size() < 14 || to_i64(r[7]) == 0) continue;  // no late group in it
    Candidate& c = cands[{to_i64(r[0]), to_i64(r[1]), r[2], to_i64(r[3])}];
    c.comm = to_i64(r[0]), c.op_id = to_i64(r[1]), c.host = r[2], c.pid = to_i64(r[3]), c.rank = to_i64(r[4]);
    if (r[5] == r[2] && to_i64(r[6]) == c.pid) {
      c.late = to_i64(r[7]);
      std::sscanf(r[9].c_str(), "[%lf,%lf]", &c.p50_ns, &c.p99_ns);  // quantilesExact's array
      c.first_ns = to_i64(r[10]), c.last_ns = to_i64(r[11]), c.nranks = to_i64(r[12]);
    } else {
      c.victims.emplace_back(r[5], to_i64(r[6]), to_i64(r[8]));
    }
  }
  std::string pairs, op_ids;
  std::vector<Candidate*> kept;
  for (auto& [k, c] : cands) {
    const auto& members = entries[c.comm];
    auto me = members.find({c.host, c.pid});
    c.entered = me == members.end() ? 0 : me->second;
    if (c.late < kMinLate || c.entered == 0 || members.size() < 2) continue;
    const double late_share = static_cast<double>(c.late) / static_cast<double>(c.entered);
    if (late_share < std::max(0.4, 1.5 / static_cast<double>(members.size()))) continue;
    kept.push_back(&c);
    pairs += (pairs.empty() ? "(" : ", (") + sql_quote(c.host) + ", " + std::to_string(c.pid) + ")";
    for (const auto& [h, p, wns] : c.victims) pairs += ", (" + sql_quote(h) + ", " + std::to_string(p) + ")";
    op_ids += (op_ids.empty() ? "" : ", ") + std::to_string(c.op_id);
  }
  auto names = comms(ch, pairs);
  if (!names) return names.error();
  std::map<int64_t, std::string> ops;
  if (!op_ids.empty()) {
    auto r = ch.select("SELECT id, any(name) FROM " + ch.table("ops") + " WHERE id IN (" + op_ids + ") GROUP BY id", {ColumnKind::Int, ColumnKind::Text});
    if (!r) return r.error();
    for (const auto& row : *r)
      if (row.size() >= 2) ops[to_i64(row[0])] = sanitize_untrusted(row[1], 80);
  }

  nlohmann::json chains = nlohmann::json::array();
  const int64_t window_ns = std::max<int64_t>(1, w.to_ns - w.from_ns);
  for (const Candidate* cp : kept) {
    const Candidate& c = *cp;
    const std::string op = ops.count(c.op_id) ? ops[c.op_id] : "op " + std::to_string(c.op_id);
    chains.push_back(straggler_chain(c, entries[c.comm].size(), *names, op, window_ns));
  }
  return chains;
}

}  // namespace causeway::fleet
