#include "fleet/fleet_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/sanitize.h"
#include "diagnosis/chains.h"
#include "fleet/clickhouse.h"
#include "fleet/fleet_explain.h"
#include "fleet/fleet_query.h"
#include "fleet/fleet_requests.h"
#include "fleet/fleet_stats.h"
#include "fleet/tsv.h"

namespace causeway::fleet {
namespace {

using json = nlohmann::json;
using Rows = std::vector<std::vector<std::string>>;

// Fewer calls have no meaningful tail (diagnosis/tail_breakdown.h's min_calls); only the
// sources the correlator claims calls of get one.
constexpr uint64_t kMinTailCalls = 20;
bool has_tail(const std::string& source) { return source == "cuda" || source == "driver" || source == "nccl"; }

uint32_t u32(const std::string& s) { return static_cast<uint32_t>(to_i64(s)); }

// The rows of one host (every session it shipped), as the swimlanes ask for them.
class HostLanes final : public LaneSource {
 public:
  HostLanes(ClickHouse& ch, std::string host) : ch_(ch), host_(std::move(host)), where_host_("host = " + sql_quote(host_)) {}

  std::string host() const override { return host_; }

  Result<std::optional<ClaimedCall>> worst_claim(const std::string& chain_id) override {
    return one_call("SELECT pid, tid, ts_ns, dur_ns, lost_ns, gap, op_id FROM " + ch_.table("call_causes") + " FINAL WHERE " +
                    where_host_ + " AND chain_id = " + sql_quote(chain_id) + " ORDER BY lost_ns DESC, dur_ns DESC LIMIT 1");
  }

  Result<std::optional<ClaimedCall>> longest_call(uint32_t pid, const std::string& op, int64_t from, int64_t to) override {
    return one_call("SELECT pid, tid, ts_ns, dur_ns, 0, 0, op_id FROM " + ch_.table("events") + " WHERE " + where_host_ +
                    " AND pid = " + std::to_string(pid) + " AND op_id IN (SELECT id FROM " + ch_.table("ops") + " WHERE " +
                    where_host_ + " AND name = " + sql_quote(op) + ")" + between(from, to) + " ORDER BY dur_ns DESC LIMIT 1");
  }

  Result<std::vector<SchedRow>> sched(int64_t from, int64_t to, size_t limit) override {
    auto rows = ch_.select(sched_select() + between(from, to) + " ORDER BY ts_ns LIMIT " + std::to_string(limit), {ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int});
    if (!rows) return rows.error();
    return sched_rows(*rows);
  }

  Result<std::optional<SchedRow>> prior_switch(uint32_t tid, int64_t before, int64_t since) override {
    auto rows = ch_.select(sched_select() + " AND ts_ns < " + std::to_string(before) + " AND ts_ns >= " + std::to_string(since) +
                           " AND (prev_tid = " + std::to_string(tid) + " OR next_tid = " + std::to_string(tid) +
                           ") ORDER BY ts_ns DESC LIMIT 1", {ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int});
    if (!rows) return rows.error();
    auto v = sched_rows(*rows);
    return v.empty() ? std::optional<SchedRow>{} : std::optional<SchedRow>{v.front()};
  }

  Result<std::vector<int64_t>> wakeups(uint32_t tid, int64_t from, int64_t to, size_t limit) override {
    auto rows = ch_.select("SELECT ts_ns FROM " + ch_.table("wakeups") + " WHERE " + where_host_ + " AND tid = " +
                           std::to_string(tid) + between(from, to) + " ORDER BY ts_ns LIMIT " + std::to_string(limit), {ColumnKind::Int});
    if (!rows) return rows.error();
    std::vector<int64_t> out;
    for (const auto& r : *rows)
      if (!r.empty()) out.push_back(to_i64(r[0]));
    return out;
  }

  Result<std::vector<CallRow>> calls(int64_t from, int64_t to, uint32_t pid_a, uint32_t pid_b, size_t limit) override {
    if (auto r = load_ops(); !r) return r.error();
    auto rows = ch_.select("SELECT ts_ns, dur_ns, pid, tid, op_id FROM " + ch_.table("events") + " WHERE " + where_host_ +
                           " AND pid IN (" + std::to_string(pid_a) + ", " + std::to_string(pid_b) + ")" + between(from, to) +
                           " ORDER BY ts_ns LIMIT " + std::to_string(limit), {ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int});
    if (!rows) return rows.error();
    std::vector<CallRow> out;
    for (const auto& r : *rows) {
      if (r.size() < 5) continue;
      auto op = ops_.find(to_i64(r[4]));
      if (op == ops_.end()) continue;
      out.push_back({to_i64(r[0]), to_i64(r[1]), u32(r[2]), u32(r[3]), op->second.first, op->second.second});
    }
    return out;
  }

  Result<std::vector<RequestSpan>> requests(const std::vector<std::string>& ids) override {
    std::vector<RequestSpan> out;
    if (ids.empty()) return out;
    std::string in;
    for (const auto& id : ids) in += (in.empty() ? "" : ", ") + sql_quote(id);
    auto rows = ch_.select("SELECT request_id, server_pid, start_ns, " + std::string(kRequestSpanColumns) + " FROM " + ch_.table("requests") +
                           " WHERE " + where_host_ + " AND request_id IN (" + in + ") ORDER BY start_ns LIMIT " +
                           std::to_string(ids.size()), {ColumnKind::Text, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int});
    if (!rows) return rows.error();
    for (const auto& r : *rows) {
      if (r.size() < 5) continue;
      RequestSpan s{r[0], u32(r[1]), to_i64(r[2]), to_i64(r[3]), std::nullopt};
      if (!is_null(r[4])) s.first_token = to_i64(r[4]);
      out.push_back(std::move(s));
    }
    return out;
  }

  std::string comm(uint32_t pid, uint32_t tid) override {
    if (!names_loaded_) load_names();
    if (tid && tid != pid)
      if (auto it = threads_.find(tid); it != threads_.end() && !it->second.empty()) return it->second;
    if (auto it = processes_.find(pid); it != processes_.end() && !it->second.empty()) return it->second;
    if (auto it = threads_.find(tid ? tid : pid); it != threads_.end()) return it->second;
    return "";
  }

 private:
  ClickHouse& ch_;
  std::string host_, where_host_;
  std::map<int64_t, std::pair<std::string, std::string>> ops_;  // id → (name, source), this host's
  std::map<uint32_t, std::string> threads_, processes_;
  bool names_loaded_ = false;

  static std::string between(int64_t from, int64_t to) {
    return " AND ts_ns >= " + std::to_string(from) + " AND ts_ns <= " + std::to_string(to);
  }
  std::string sched_select() const {
    return "SELECT ts_ns, cpu, prev_tid, prev_pid, prev_state, next_tid, next_pid FROM " + ch_.table("sched") + " WHERE " + where_host_;
  }
  static std::vector<SchedRow> sched_rows(const Rows& rows) {
    std::vector<SchedRow> out;
    for (const auto& r : rows)
      if (r.size() >= 7)
        out.push_back({to_i64(r[0]), static_cast<int32_t>(to_i64(r[1])), u32(r[2]), u32(r[3]), to_i64(r[4]), u32(r[5]), u32(r[6])});
    return out;
  }

  Result<void> load_ops() {
    if (!ops_.empty()) return {};
    auto rows = ch_.select("SELECT id, any(name), any(source) FROM " + ch_.table("ops") + " WHERE " + where_host_ + " GROUP BY id", {ColumnKind::Int, ColumnKind::Text, ColumnKind::Text});
    if (!rows) return rows.error();
    for (const auto& r : *rows)
      if (r.size() >= 3) ops_[to_i64(r[0])] = {r[1], r[2]};
    return {};
  }

  void load_names() {
    names_loaded_ = true;
    // A name missing is drawn as "pid N": a failed read here costs labels, not the report.
    if (auto rows = ch_.select("SELECT tid, any(comm) FROM " + ch_.table("threads") + " FINAL WHERE " + where_host_ + " GROUP BY tid", {ColumnKind::Int, ColumnKind::Text}))
      for (const auto& r : *rows)
        if (r.size() >= 2) threads_[u32(r[0])] = r[1];
    if (auto rows = ch_.select("SELECT pid, any(comm) FROM " + ch_.table("processes") + " FINAL WHERE " + where_host_ + " GROUP BY pid", {ColumnKind::Int, ColumnKind::Text}))
      for (const auto& r : *rows)
        if (r.size() >= 2) processes_[u32(r[0])] = r[1];
  }

  Result<std::optional<ClaimedCall>> one_call(const std::string& sql) {
    if (auto r = load_ops(); !r) return r.error();
    auto rows = ch_.select(sql, {ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int});
    if (!rows) return rows.error();
    if (rows->empty() || rows->front().size() < 7) return std::optional<ClaimedCall>{};
    const auto& r = rows->front();
    auto op = ops_.find(to_i64(r[6]));
    return std::optional<ClaimedCall>{ClaimedCall{u32(r[0]), u32(r[1]), to_i64(r[2]), to_i64(r[3]), to_i64(r[4]), to_i64(r[5]) != 0,
                                                  op == ops_.end() ? "op " + r[6] : op->second.first}};
  }
};

// The host a chain is drawn on: the waiting rank's host for a cross-host straggler (its `pid`
// is the rank that waited the most), else the host that shipped the chain.
std::string drawn_host(const json& c) {
  if (c.contains("victims") && c["victims"].is_array() && c.contains("pid"))
    for (const auto& v : c["victims"])
      if (v.is_object() && v.value("pid", json()) == c["pid"] && v.contains("host") && v["host"].is_string())
        return v["host"].get<std::string>();
  return c.value("host", "");
}

class FleetSource final : public ReportSource {
 public:
  FleetSource(const Endpoint& e, const ReportScope& scope) : ch_(e), scope_(scope) {}

  Result<StatsResult> stats() override {
    auto s = fleet_stats(ch_, scoped<StatsQuery>());
    if (!s) return s.error();
    fs_ = std::move(*s);
    return fs_.all;
  }

  Result<SessionHeader> header(const StatsResult& stats) override {
    SessionHeader h;
    h.store = store_name() + ", database " + ch_.endpoint().database;
    h.source_kind = "fleet";
    h.from_ns = stats.from_ns;
    h.to_ns = stats.to_ns;
    h.pid = scope_.pid;
    h.systems = json::array();
    std::set<std::string> names;
    for (const auto& host : fs_.hosts) {
      ++h.host_sessions;
      if (host.contains("system")) h.systems.push_back(host["system"]);
      names.insert(host.value("host", ""));
    }
    for (const auto& n : names) h.system_line += (h.system_line.empty() ? "" : ", ") + sanitize_untrusted(n, 80);
    h.system_line = std::to_string(names.size()) + " host" + (names.size() == 1 ? "" : "s") + ": " + h.system_line;
    return h;
  }

  Result<json> chains() override {
    auto doc = fleet_chains(ch_, scoped<FleetChainQuery>());
    if (!doc) return doc.error();
    json chains = std::move((*doc)["chains"]);
    rank_chains(chains);
    chains_ = chains;
    return chains;
  }

  Result<std::vector<HostRow>> hosts(const StatsResult& stats, const json& chains) override {
    return fleet_host_rows(fs_.hosts, stats, fs_.op_hosts, chains);
  }

  Result<std::optional<json>> requests() override {
    auto doc = fleet_requests(ch_, scoped<requests::RequestQuery>());
    if (!doc) return doc.error();
    if ((*doc)["requests"].value("count", 0) == 0) return std::optional<json>{};
    if (auto r = tail_causes(*doc); !r) return r.error();
    return std::optional<json>(std::move(*doc));
  }

  Result<LaneSource*> lanes_for(const json& chain) override {
    const std::string host = drawn_host(chain);
    if (host.empty()) return static_cast<LaneSource*>(nullptr);
    auto& l = lanes_[host];
    if (!l) l = std::make_unique<HostLanes>(ch_, host);
    return static_cast<LaneSource*>(l.get());
  }

  Result<std::vector<OpHistogram>> histograms(const StatsResult& stats) override;

  std::string origin() const override { return "the fleet store at " + store_name(); }

 private:
  ClickHouse ch_;
  ReportScope scope_;
  FleetStats fs_;
  json chains_ = json::array();
  std::map<std::string, std::unique_ptr<HostLanes>> lanes_;

  // The store as the page names it: host and port without the scheme, so the page holds no
  // URL at all (docs/REPORT.md: nothing a browser could take for a link).
  std::string store_name() const {
    const std::string& url = ch_.endpoint().url;
    const size_t at = url.find("://");
    std::string name = at == std::string::npos ? url : url.substr(at + 3);
    while (!name.empty() && name.back() == '/') name.pop_back();
    return name + (url.rfind("https", 0) == 0 ? " (TLS)" : "");
  }

  // A reader's query with the report's --since and --pid (pid: on any host).
  template <class Query>
  Query scoped() const {
    Query q;
    q.since_ns = scope_.since_ns;
    q.pid = scope_.pid;
    return q;
  }

  // The TTFT tail's causes over the fleet (fleet_requests leaves them to each host): each
  // host's request-level TTFT chains, a chain's share being the time it took above its host's
  // median (`impact`) over the fleet tail's time above the fleet median — an approximation
  // when hosts' medians differ (docs/FLEET.md "The report over the fleet").
  Result<void> tail_causes(json& doc) {
    json& r = doc["requests"];
    json& tail = r["tail"];
    if (tail.value("metric", "") != "ttft" || !tail["threshold_ms"].is_number() || !r["ttft_ms"]["p50"].is_number()) return {};
    const auto ns = [](const json& ms) { return static_cast<int64_t>(std::llround(ms.get<double>() * 1e6)); };
    std::string f = "start_ns BETWEEN " + std::to_string(r["window"].value("from_ns", int64_t{0})) + " AND " +
                    std::to_string(r["window"].value("to_ns", int64_t{0}));
    if (scope_.pid) f += " AND server_pid = " + std::to_string(*scope_.pid);
    auto ex = ch_.select("SELECT sum(ttft_ns) - count() * " + std::to_string(ns(r["ttft_ms"]["p50"])) + " FROM " +
                         ch_.table("requests") + " WHERE " + f + " AND ttft_ns >= " + std::to_string(ns(tail["threshold_ms"])), {ColumnKind::Int});
    if (!ex) return ex.error();
    const double excess_s = ex->empty() || ex->front().empty() ? 0 : to_f64(ex->front()[0]) / 1e9;
    if (!(excess_s > 0)) return {};
    json causes = json::array();
    double claimed = 0;
    for (const auto& c : chains_) {
      if (c.value("level", "") != "request" || c.value("metric", "") != "ttft" || !c.contains("impact") || !c["impact"].is_number())
        continue;
      const double share = std::min(c["impact"].get<double>() / excess_s, std::max(0.0, 1.0 - claimed));
      claimed += share;
      json k = c.value("culprit", json::object());
      causes.push_back({{"cause", c.value("cause", "")}, {"host", c.value("host", "")}, {"share_time", share},
                        {"requests", c.value("requests", json::array()).size()}, {"culprit", k}, {"chain_id", c.value("id", "")}});
    }
    if (causes.empty()) return {};
    tail["causes"] = causes;
    tail["unexplained_share"] = std::max(0.0, 1.0 - claimed);
    tail["note"] = "causes: each host's request chains, their time above the host's median over the fleet tail's time above the fleet median";
    return {};
  }
};

// One histogram per (host, process, op), from the store's calls grouped in the trace DB's
// histogram buckets (7 bits of mantissa), with the tail of claimed calls (call_causes).
Result<std::vector<OpHistogram>> FleetSource::histograms(const StatsResult& stats) {
  struct Drawn {
    OpStats op;
    std::string host;
    TailOp tail;
    std::vector<TailClaim> claims;
  };
  std::vector<Drawn> drawn;
  for (size_t i = 0; i < stats.ops.size() && i < fs_.op_hosts.size() && drawn.size() < scope_.max_ops; ++i)
    if (stats.ops[i].count) drawn.push_back({stats.ops[i], fs_.op_hosts[i], {}, {}});
  if (drawn.empty()) return std::vector<OpHistogram>{};
  std::string pairs;
  for (const auto& d : drawn) pairs += (pairs.empty() ? "(" : ", (") + sql_quote(d.host) + ", " + std::to_string(d.op.pid) + ")";
  const std::string window = " AND ts_ns BETWEEN " + std::to_string(stats.from_ns) + " AND " + std::to_string(stats.to_ns);
  auto ops = ch_.select("SELECT host, id, any(name), any(source) FROM " + ch_.table("ops") + " GROUP BY host, id", {ColumnKind::Text, ColumnKind::Int, ColumnKind::Text, ColumnKind::Text});
  if (!ops) return ops.error();
  std::map<std::pair<std::string, int64_t>, std::pair<std::string, std::string>> op_of;
  for (const auto& r : *ops)
    if (r.size() >= 4) op_of[{r[0], to_i64(r[1])}] = {r[2], r[3]};
  auto at = [&](const std::string& host, int64_t pid, int64_t op_id) -> Drawn* {
    auto o = op_of.find({host, op_id});
    if (o == op_of.end()) return nullptr;
    for (auto& d : drawn)
      if (d.host == host && d.op.pid == pid && d.op.op == o->second.first && d.op.source == o->second.second) return &d;
    return nullptr;
  };
  auto buckets = ch_.select("SELECT host, pid, op_id, toInt32(floor(log2(greatest(dur_ns, 1)))) AS oct, "
                            "bitShiftRight(greatest(dur_ns, 0), greatest(oct - 7, 0)) AS sub, min(dur_ns), count() FROM " +
                            ch_.table("events") + " WHERE (host, pid) IN (" + pairs + ")" + window +
                            " AND op_id IN (SELECT id FROM " + ch_.table("ops") + " WHERE kind = 'call') "
                            "GROUP BY host, pid, op_id, oct, sub", {ColumnKind::Text, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int});
  if (!buckets) return buckets.error();
  for (const auto& r : *buckets)
    if (r.size() >= 7)
      if (Drawn* d = at(r[0], to_i64(r[1]), to_i64(r[2])))
        d->op.hist.add(static_cast<uint64_t>(std::max<int64_t>(0, to_i64(r[5]))), static_cast<uint64_t>(to_i64(r[6])));
  // The tail of each op that has one: the store's claimed calls at or above its threshold.
  std::string claim_where;
  for (auto& d : drawn) {
    if (!has_tail(d.op.source) || d.op.hist.total() < kMinTailCalls) continue;
    TailOp& t = d.tail;
    t.source = d.op.source;
    t.op = d.op.op;
    t.pid = d.op.pid;
    t.calls = d.op.count;
    t.quantile_ns = d.op.hist.percentile(0.99, d.op.min_ns, d.op.max_ns);
    t.threshold_ns = d.op.hist.tail_floor(0.99);
    const auto above = d.op.hist.at_or_above(t.threshold_ns, d.op.max_ns);
    t.tail_calls = above.count;
    t.tail_ns = above.sum;
    std::string ids;
    for (const auto& [key, name] : op_of)
      if (key.first == d.host && name.first == d.op.op && name.second == d.op.source)
        ids += (ids.empty() ? "" : ", ") + std::to_string(key.second);
    if (ids.empty()) continue;
    claim_where += std::string(claim_where.empty() ? "" : " OR ") + "(host = " + sql_quote(d.host) + " AND pid = " +
                   std::to_string(d.op.pid) + " AND op_id IN (" + ids + ") AND dur_ns >= " + std::to_string(t.threshold_ns) + ")";
  }
  if (!claim_where.empty()) {
    auto claims = ch_.select("SELECT host, pid, op_id, cause, dur_ns, lost_ns, chain_id FROM " + ch_.table("call_causes") +
                             " FINAL WHERE gap = 0" + window + " AND (" + claim_where + ") LIMIT " + std::to_string(kMaxClaims), {ColumnKind::Text, ColumnKind::Int, ColumnKind::Int, ColumnKind::Text, ColumnKind::Int, ColumnKind::Int, ColumnKind::Text});
    if (!claims) return claims.error();
    std::map<Drawn*, std::map<std::string, TailCause>> by;
    for (const auto& r : *claims) {
      if (r.size() < 7) continue;
      Drawn* d = at(r[0], to_i64(r[1]), to_i64(r[2]));
      if (!d || !d->tail.tail_calls) continue;
      d->claims.push_back({r[3], static_cast<uint64_t>(to_i64(r[4]))});
      TailCause& c = by[d][r[3]];
      c.cause = r[3];
      ++c.calls;
      c.time_ns += static_cast<double>(to_i64(r[4]));
      c.lost_ns += static_cast<double>(to_i64(r[5]));
      if (std::find(c.chain_ids.begin(), c.chain_ids.end(), r[6]) == c.chain_ids.end()) c.chain_ids.push_back(r[6]);
    }
    for (auto& [d, causes] : by) {
      double claimed = 0;
      uint64_t calls = 0;
      for (auto& [name, c] : causes) {
        d->tail.causes.push_back(c);
        claimed += c.time_ns;
        calls += c.calls;
      }
      std::sort(d->tail.causes.begin(), d->tail.causes.end(), [](const TailCause& a, const TailCause& b) { return a.time_ns > b.time_ns; });
      d->tail.unexplained_ns = std::max(0.0, d->tail.tail_ns - claimed);
      d->tail.unexplained_calls = d->tail.tail_calls > calls ? d->tail.tail_calls - calls : 0;
    }
  }
  std::vector<OpHistogram> out;
  for (const auto& d : drawn) {
    if (d.tail.tail_calls == 0) {
      out.push_back(build_op_histogram(d.op, nullptr, {}, d.host));
      continue;
    }
    TailOp t = d.tail;
    if (t.causes.empty()) t.unexplained_ns = t.tail_ns, t.unexplained_calls = t.tail_calls;
    out.push_back(build_op_histogram(d.op, &t, d.claims, d.host));
  }
  return out;
}

}  // namespace

std::unique_ptr<ReportSource> fleet_report_source(const Endpoint& e, const ReportScope& scope) {
  return std::make_unique<FleetSource>(e, scope);
}

}  // namespace causeway::fleet
