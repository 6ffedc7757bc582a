#include "fleet/fleet_straggler.h"

#include <cmath>
#include <map>

#include "analysis/chain_view.h"
#include "common/sanitize.h"
#include "common/units.h"
#include "fleet/tsv.h"

namespace causeway::fleet {

namespace {

// The local rule (analysis/causes/nccl_straggler.cpp): last by >= 1 ms, at least 3 times, in
// at least max(40 %, 1.5 / ranks) of the collectives the rank entered.
constexpr int64_t kMinLateNs = 1'000'000;
constexpr int64_t kMinLate = 3;

// One row per (communicator, sequence, op) whose entries come from >= 2 hosts: who entered
// last and by how much after the second-last. `a1` is the communicator hash, `a4` the
// per-communicator sequence and `a2` the rank (docs/TRACEDB.md "Op argument layouts").
std::string groups_sql(ClickHouse& ch, const FleetWindow& w) {
  return "SELECT a1 AS comm, a4 AS seq, op_id, argMax(host, ts_ns) AS late_host, argMax(pid, ts_ns) AS late_pid, "
         "argMax(a2, ts_ns) AS late_rank, arrayReverseSort(groupArray(ts_ns)) AS sorted, sorted[1] - sorted[2] AS lateness, "
         "max(ts_ns) AS last_ts, groupArray(host) AS hs, groupArray(pid) AS ps, groupArray(ts_ns) AS tss, any(a3) AS nranks "
         "FROM " + ch.table("events") + " WHERE op_id IN (SELECT id FROM " + ch.table("ops") +
         " WHERE family = 'collective') AND a1 != 0 AND ts_ns BETWEEN " + std::to_string(w.from_ns) + " AND " +
         std::to_string(w.to_ns) + " GROUP BY comm, seq, op_id HAVING count() >= 2 AND uniqExact(host) >= 2";
}

struct Candidate {
  int64_t comm, op_id, pid, rank, late, entered = 0, first_ns, last_ns, members = 0, nranks;
  std::string host, op;
  double p50_ns, p99_ns;
};

Result<std::string> comm_of(ClickHouse& ch, const std::string& host, int64_t pid) {
  auto r = ch.select("SELECT any(comm) FROM " + ch.table("processes") + " FINAL WHERE host = " + sql_quote(host) +
                     " AND pid = " + std::to_string(pid));
  if (!r) return r.error();
  return r->empty() || r->front().empty() ? std::string() : sanitize_untrusted(r->front()[0], 64);
}

}  // namespace

Result<nlohmann::json> cross_host_stragglers(ClickHouse& ch, const FleetWindow& w) {
  const std::string groups = groups_sql(ch, w);
  // Candidates: per communicator and rank, how often it was last by >= 1 ms and by how much.
  auto cand = ch.select(
      "SELECT comm, op_id, late_host, late_pid, late_rank, count() AS late, quantileExact(0.5)(lateness), "
      "quantileExact(0.99)(lateness), min(last_ts), max(last_ts), any(nranks) FROM (" + groups + ") WHERE lateness >= " +
      std::to_string(kMinLateNs) + " GROUP BY comm, op_id, late_host, late_pid, late_rank HAVING late >= " +
      std::to_string(kMinLate));
  if (!cand) return cand.error();
  // Entries per (communicator, host, pid) over the same groups: the denominator of late_share.
  auto entered = ch.select("SELECT comm, h, p, count() FROM (" + groups + ") ARRAY JOIN hs AS h, ps AS p GROUP BY comm, h, p");
  if (!entered) return entered.error();
  std::map<int64_t, std::map<std::pair<std::string, int64_t>, int64_t>> entries;
  for (const auto& r : *entered)
    if (r.size() >= 4) entries[to_i64(r[0])][{r[1], to_i64(r[2])}] = to_i64(r[3]);

  nlohmann::json chains = nlohmann::json::array();
  const int64_t window_ns = std::max<int64_t>(1, w.to_ns - w.from_ns);
  for (const auto& r : *cand) {
    if (r.size() < 11) continue;
    Candidate c{to_i64(r[0]), to_i64(r[1]), to_i64(r[3]), to_i64(r[4]), to_i64(r[5]), 0, to_i64(r[8]), to_i64(r[9]), 0,
                to_i64(r[10]), sanitize_untrusted(r[2], 128), "", to_f64(r[6]), to_f64(r[7])};
    const auto& members = entries[c.comm];
    c.members = static_cast<int64_t>(members.size());
    auto me = members.find({r[2], c.pid});
    c.entered = me == members.end() ? 0 : me->second;
    if (c.entered == 0 || c.members < 2) continue;
    const double late_share = static_cast<double>(c.late) / static_cast<double>(c.entered);
    if (late_share < std::max(0.4, 1.5 / static_cast<double>(c.members))) continue;

    // What the others waited: the late entry minus theirs, in the groups this rank was late.
    auto waits = ch.select("SELECT h, p, sum(last_ts - t) FROM (" + groups + ") ARRAY JOIN hs AS h, ps AS p, tss AS t WHERE comm = " +
                           std::to_string(c.comm) + " AND op_id = " + std::to_string(c.op_id) + " AND late_host = " +
                           sql_quote(r[2]) + " AND late_pid = " + std::to_string(c.pid) + " AND lateness >= " +
                           std::to_string(kMinLateNs) + " AND NOT (h = late_host AND p = late_pid) GROUP BY h, p ORDER BY h, p");
    if (!waits) return waits.error();
    auto comm = comm_of(ch, r[2], c.pid);
    if (!comm) return comm.error();
    auto op = ch.select("SELECT any(name) FROM " + ch.table("ops") + " WHERE id = " + std::to_string(c.op_id));
    if (!op) return op.error();
    c.op = op->empty() || op->front().empty() ? "op " + std::to_string(c.op_id) : sanitize_untrusted(op->front()[0], 80);
    nlohmann::json victims = nlohmann::json::array();
    int64_t wait_total = 0, top_wait = -1, top_pid = 0;
    std::string victim_hosts;
    for (const auto& v : *waits) {
      if (v.size() < 3) continue;
      int64_t wns = to_i64(v[2]), pid = to_i64(v[1]);
      auto vc = comm_of(ch, v[0], pid);
      if (!vc) return vc.error();
      const std::string vhost = sanitize_untrusted(v[0], 128);
      victims.push_back({{"pid", pid}, {"comm", *vc}, {"host", vhost}, {"wait_us", wns / 1000}});
      wait_total += wns;
      if (wns > top_wait) top_wait = wns, top_pid = pid;
      if (victim_hosts.find(vhost) == std::string::npos) victim_hosts += (victim_hosts.empty() ? "" : ", ") + vhost;
    }
    const int64_t lost_ns = wait_total / std::max<int64_t>(1, static_cast<int64_t>(victims.size()));
    const double impact = static_cast<double>(lost_ns) / static_cast<double>(window_ns);
    const std::string rank = "rank " + std::to_string(c.rank) + " (pid " + std::to_string(c.pid) + " on host " + c.host + ")";
    nlohmann::json d;
    d["id"] = "fleet-nccl_straggler-" + c.host + "-" + std::to_string(c.pid) + "-comm" + hex(c.comm);
    d["cause"] = "nccl_straggler";
    d["host"] = c.host;  // the late rank's
    d["severity"] = severity_for(impact);
    d["op"] = c.op;
    d["pid"] = top_pid;
    d["calls"] = c.late;
    d["p50_us"] = std::round(c.p50_ns / 100.0) / 10.0;
    d["p99_us"] = std::round(c.p99_ns / 100.0) / 10.0;
    d["slow_share"] = std::round(late_share * 1000) / 1000;
    d["impact"] = std::round(impact * 1000) / 1000;
    d["lost_us"] = lost_ns / 1000;
    d["where"] = "in_call";
    d["window"] = {{"from_ns", c.first_ns}, {"to_ns", c.last_ns}};
    d["culprit"] = {{"host", c.host}, {"pid", c.pid}, {"comm", *comm}, {"rank", c.rank},
                    {"late_share", std::round(late_share * 1000) / 1000}};
    d["victims"] = victims;
    d["stack"] = nlohmann::json::array();
    d["timeline"] = nlohmann::json::array();
    d["summary"] = rank + " entered " + c.op + " last in " + pct(late_share) + " of " + with_commas(c.entered) +
                   " cross-host collectives, " + format_duration_ns(static_cast<int64_t>(c.p50_ns)) +
                   " after the others (median); ranks on " + victim_hosts + " waited " + format_duration_ns(wait_total) +
                   " in total";
    d["evidence"] = {"communicator " + hex(c.comm) + ", " + std::to_string(c.members) + " ranks on several hosts (nranks " +
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
    chains.push_back(std::move(d));
  }
  return chains;
}

}  // namespace causeway::fleet
