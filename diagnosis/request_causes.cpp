#include "diagnosis/request_causes.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "diagnosis/causes/request_registry.h"
#include "diagnosis/causes/request_api_server_busy.h"
#include "diagnosis/causes/request_d_state.h"
#include "diagnosis/causes/request_kv_cache.h"
#include "diagnosis/causes/request_nccl.h"
#include "diagnosis/causes/request_network.h"
#include "diagnosis/causes/request_queueing.h"
#include "diagnosis/tracer_pid.h"
#include "tracedb/sqlite_handle.h"
#include "diagnosis/causes/request_cause_util.h"

namespace causeway::requests {
namespace {

// A claim below this is noise on a busy host (scheduler ticks, a page fault).
constexpr double kMinLostNs = 1e6;
// How far back a runnable wait may start (a wake-up or a preemption before the window).
constexpr int64_t kLookbackNs = 500'000'000;
// A forward pass "much longer than the median pass" (docs/INFERENCE.md "Causes keyed to
// requests"): at least twice as long, and 5 ms more (a fast engine's jitter is not a prefill).
constexpr double kLongPassFactor = 2.0;
constexpr int64_t kLongPassMinExcessNs = 5'000'000;

}  // namespace

CauseFinder::CauseFinder(sqlite3* db, int64_t session_id, std::vector<RequestSpan> spans)
    : db_(db), session_id_(session_id), spans_(std::move(spans)), nccl_(std::make_unique<NcclStragglers>(db, session_id)) {
  // Long prompts: 4× the median, and at least 1 KiB (a uniform load has no long prefills).
  std::vector<uint64_t> bytes;
  for (const auto& s : spans_) bytes.push_back(s.prompt_bytes);
  if (!bytes.empty()) {
    std::nth_element(bytes.begin(), bytes.begin() + bytes.size() / 2, bytes.end());
    long_prompt_bytes_ = std::max<uint64_t>(1024, 4 * bytes[bytes.size() / 2]);
  }
  // Names of processes, and of threads seen in context switches (a culprit need not be traced).
  if (auto st = Statement::prepare(db_, "SELECT tid, comm FROM threads WHERE session_id = ?1 AND tid = pid")) {
    st->bind(1, session_id_);
    while (st->step() == SQLITE_ROW) comms_[static_cast<uint32_t>(st->col_int(0))] = st->col_text(1);
  }
  tracer_pid_ = read_tracer_pid(db_, session_id_);
  if (auto st = Statement::prepare(db_, "SELECT pid, comm FROM processes WHERE session_id = ?1 AND comm != ''")) {
    st->bind(1, session_id_);
    while (st->step() == SQLITE_ROW) comms_[static_cast<uint32_t>(st->col_int(0))] = st->col_text(1);
  }
}

CauseFinder::~CauseFinder() = default;

// The server and all its recorded descendants, at any depth (vLLM: API server → engine core
// → workers; a launcher or a wrapper shell adds levels), by the parent pids of the
// session's processes rows. A link needs the middle process's own row: the collector records
// every descendant of a traced server, not only those that made traced calls.
const std::vector<uint32_t>& CauseFinder::engine_pids(uint32_t server_pid) {
  auto it = engines_.find(server_pid);
  if (it != engines_.end()) return it->second;
  std::vector<uint32_t> pids{server_pid};
  auto st = Statement::prepare(db_,
                               "WITH RECURSIVE tree(pid) AS (SELECT ?2 UNION SELECT p.pid FROM processes p JOIN tree t "
                               "ON p.ppid = t.pid WHERE p.session_id = ?1 AND p.pid != ?2) SELECT pid FROM tree WHERE pid != ?2 "
                               "ORDER BY pid");
  if (st) {
    st->bind(1, session_id_);
    st->bind(2, int64_t{server_pid});
    while (st->step() == SQLITE_ROW) pids.push_back(static_cast<uint32_t>(st->col_int(0)));
  }
  return engines_[server_pid] = pids;
}

// Who held `cpu` over (from, to], by pid, from the switch records there up to `until` (the
// victim's switch-in, which may come after `to`): each record's prev_pid held the CPU since the
// record before it (or since `from`), clipped to `to`.
void CauseFinder::cpu_holders(int32_t cpu, int64_t from, int64_t to, int64_t until, std::map<uint32_t, double>& by_pid) {
  auto st = Statement::prepare(db_,
                               "SELECT ts_ns, prev_pid FROM sched WHERE session_id = ?1 AND cpu = ?2 AND ts_ns > ?3 AND "
                               "ts_ns <= ?4 ORDER BY ts_ns");
  if (!st) return;
  st->bind(1, session_id_);
  st->bind(2, int64_t{cpu});
  st->bind(3, from);
  st->bind(4, until);
  int64_t since = from;
  while (st->step() == SQLITE_ROW && since < to) {
    const int64_t ts = std::min(st->col_int(0), to);
    by_pid[static_cast<uint32_t>(st->col_int(1))] += static_cast<double>(ts - since);
    since = ts;
  }
}

// Runnable but not running: each switch-in of an engine thread ends a wait that began at its
// last wake-up or preemption. The time is stolen by whoever held that CPU meanwhile, ranked
// by time held (not by who ran last, nor by how often); the engine's own threads and an idle
// CPU steal nothing, and the tracer's threads are overhead, reported but never the culprit
// (docs/DIAGNOSIS.md "The tracer is never a culprit").
void CauseFinder::cpu_contention(uint32_t server_pid, int64_t from, int64_t to, std::vector<CauseClaim>& out) {
  const auto& pids = engine_pids(server_pid);
  std::string in;
  for (uint32_t p : pids) in += (in.empty() ? "" : ",") + std::to_string(p);
  // Per switch-in: the thread's last wake-up, and its last switch-out with its state.
  auto st = Statement::prepare(
      db_,
      "SELECT s.ts_ns, s.prev_pid, (SELECT max(ts_ns) FROM wakeups w WHERE w.session_id = ?1 AND w.ts_ns >= s.ts_ns - ?4 "
      "AND w.ts_ns < s.ts_ns AND w.tid = s.next_tid), o.ts_ns, o.prev_state, s.cpu FROM sched s LEFT JOIN sched o ON o.id = "
      "(SELECT x.id FROM sched x WHERE x.session_id = ?1 AND x.ts_ns >= s.ts_ns - ?4 AND x.ts_ns < s.ts_ns AND x.prev_tid = "
      "s.next_tid ORDER BY x.ts_ns DESC LIMIT 1) WHERE s.session_id = ?1 AND s.ts_ns > ?2 AND s.ts_ns <= ?3 + ?4 "
      "AND s.next_pid IN (" + in + ") AND s.prev_pid NOT IN (" + in + ")");
  if (!st) return;
  st->bind(1, session_id_);
  st->bind(2, from);
  st->bind(3, to);
  st->bind(4, kLookbackNs);
  std::map<uint32_t, double> held;
  while (st->step() == SQLITE_ROW) {
    const int64_t t_in = st->col_int(0);
    const auto last = static_cast<uint32_t>(st->col_int(1));
    const int64_t woken = st->col_null(2) ? 0 : st->col_int(2);
    const int64_t out_ts = st->col_null(3) ? 0 : st->col_int(3);
    // Runnable since its wake-up, or since it was preempted; a thread whose last switch-out
    // put it to sleep with no wake-up seen since is not known to have waited.
    int64_t ready = 0;
    if (woken && woken > out_ts) ready = woken;
    else if (out_ts && st->col_int(4) == 0) ready = out_ts;
    if (!ready || last == 0) continue;  // idle before: a wake-up latency, not contention
    const int64_t lo = std::max(ready, from), hi = std::min(t_in, to);
    if (hi > lo) cpu_holders(static_cast<int32_t>(st->col_int(5)), lo, hi, t_in, held);
  }
  std::map<uint32_t, double> by_culprit;
  double tracer_ns = 0;
  for (const auto& [pid, ns] : held) {
    if (pid == 0 || std::find(pids.begin(), pids.end(), pid) != pids.end()) continue;
    if (tracer_pid_ && pid == *tracer_pid_) tracer_ns += ns;
    else by_culprit[pid] += ns;
  }
  if (by_culprit.empty()) return;
  auto top = std::max_element(by_culprit.begin(), by_culprit.end(), [](auto& a, auto& b) { return a.second < b.second; });
  double total = 0;
  for (const auto& [pid, ns] : by_culprit) total += ns;
  if (total < kMinLostNs) return;
  auto c = comms_.find(top->first);
  nlohmann::json culprit = {{"pid", top->first}, {"comm", c == comms_.end() ? "" : c->second},
                            {"share", total > 0 ? top->second / total : 0}};
  if (tracer_ns >= kMinLostNs) culprit["tracer_overhead_ms"] = std::round(tracer_ns / 1e3) / 1e3;
  out.push_back({RequestCause::cpu_contention, total, std::move(culprit)});
}

// The engine's forward passes over its server's serving time (the slow parts lie in it).
const CauseFinder::EnginePasses& CauseFinder::passes(uint32_t server_pid) {
  auto it = passes_.find(server_pid);
  if (it != passes_.end()) return it->second;
  int64_t from = INT64_MAX, to = INT64_MIN;
  for (const auto& s : spans_)
    if (s.server_pid == server_pid) from = std::min(from, s.start_ns), to = std::max({to, s.last_ns, s.end_ns});
  EnginePasses p;
  if (from <= to)
    if (auto scan = load_forward_passes(db_, session_id_, engine_pids(server_pid), from - kLookbackNs, to); scan)
      p.scan = std::move(*scan);
  p.median_ns = median_pass_ns(p.scan.passes);
  for (const ForwardPass& f : p.scan.passes) p.longest_ns = std::max(p.longest_ns, f.dur_ns());
  return passes_[server_pid] = std::move(p);
}

// Other requests' long prefills during the slow part: the engine ran their forward pass
// instead of this request's next step. With the engine's passes delimited, the evidence is a
// pass much longer than the median (kLongPassFactor ×, kLongPassMinExcessNs more) during a
// long request's prefill, and the time lost is that pass's excess over the median pass; else
// (no sync closes the engine's launches) the long requests' prefill time itself.
void CauseFinder::prefill(const std::string& id, uint32_t server_pid, int64_t from, int64_t to,
                          std::vector<CauseClaim>& out) {
  std::vector<const RequestSpan*> longs;
  for (const auto& s : spans_)
    if (s.id != id && s.server_pid == server_pid && s.prompt_bytes >= long_prompt_bytes_ && s.first_out_ns &&
        overlap_ns(s.end_ns, s.first_out_ns, from - kLookbackNs, to) > 0)
      longs.push_back(&s);
  if (longs.empty()) return;
  const auto& pids = engine_pids(server_pid);
  const EnginePasses& ep = passes(server_pid);
  std::vector<std::pair<int64_t, int64_t>> spans;
  // The culprit is the long requests themselves: ids, and for each its prompt and tenant
  // (another tenant's, often: evidence is never filtered by the question's tenant).
  nlohmann::json ids = nlohmann::json::array(), long_requests = nlohmann::json::array();
  auto name = [&](const RequestSpan& s) {
    if (ids.size() < 10 && std::find(ids.begin(), ids.end(), s.id) == ids.end()) {
      ids.push_back(s.id);
      long_requests.push_back({{"id", s.id}, {"prompt_bytes", s.prompt_bytes}, {"tenant", s.tenant}});
    }
  };
  if (ep.scan.passes.empty()) {
    for (const RequestSpan* s : longs) {
      if (overlap_ns(s->end_ns, s->first_out_ns, from, to) <= 0) continue;
      spans.emplace_back(s->end_ns, s->first_out_ns);
      name(*s);
    }
    const double lost = covered_ns(std::move(spans), from, to);
    if (lost < kMinLostNs) return;
    out.push_back({RequestCause::prefill_interference, lost,
                   {{"requests", ids},
                    {"long_requests", long_requests},
                    {"pid", pids.size() > 1 ? pids[1] : pids[0]},
                    {"basis", "prompt_bytes"}}});
    return;
  }
  const int64_t median = ep.median_ns;
  const auto& all = ep.scan.passes;
  // Passes by start: the first that can still reach `from` starts at most the longest pass before it.
  auto it = std::lower_bound(all.begin(), all.end(), from - ep.longest_ns,
                             [](const ForwardPass& p, int64_t t) { return p.start_ns < t; });
  int64_t longest = 0;
  uint32_t pass_pid = 0;
  for (; it != all.end() && it->start_ns < to; ++it) {
    const ForwardPass& p = *it;
    const int64_t excess = p.dur_ns() - median;
    if (p.end_ns <= from || static_cast<double>(p.dur_ns()) < kLongPassFactor * static_cast<double>(median) ||
        excess < kLongPassMinExcessNs)
      continue;
    bool during_prefill = false;
    for (const RequestSpan* s : longs)
      if (overlap_ns(s->end_ns, s->first_out_ns, p.start_ns, p.end_ns) > 0) during_prefill = true, name(*s);
    if (!during_prefill) continue;
    // What a median pass would not have taken: the pass's last `excess` ns.
    spans.emplace_back(p.end_ns - excess, p.end_ns);
    if (p.dur_ns() > longest) longest = p.dur_ns(), pass_pid = p.pid;
  }
  const double lost = covered_ns(std::move(spans), from, to);
  if (lost < kMinLostNs) return;
  out.push_back({RequestCause::prefill_interference, lost,
                 {{"requests", ids},
                  {"long_requests", long_requests},
                  {"pid", pass_pid},
                  {"basis", "forward_pass"},
                  {"pass_ms", static_cast<double>(longest) / 1e6},
                  {"median_pass_ms", static_cast<double>(median) / 1e6}}});
}

void CauseFinder::engine_state(const std::string& id, uint32_t server_pid, int64_t from, int64_t to,
                               std::vector<CauseClaim>& out) {
  if (!series_) series_ = load_engine_series(db_, session_id_);
  auto it = series_->find(server_pid);
  if (it == series_->end()) return;
  // Queued only before its first token: once it streams, the request is running.
  int64_t first_out = to;
  for (const auto& s : spans_)
    if (s.id == id && s.server_pid == server_pid && s.first_out_ns) first_out = std::min(to, s.first_out_ns);
  for (auto claim : {queueing_claim(it->second, server_pid, from, first_out), kv_cache_claim(it->second, server_pid, from, to)})
    if (claim && claim->lost_ns >= kMinLostNs) out.push_back(std::move(*claim));
}

std::optional<CauseClaim> CauseFinder::network(const std::string& id, uint32_t server_pid, int64_t from, int64_t to) {
  for (const auto& s : spans_) {
    if (s.id != id || s.server_pid != server_pid) continue;
    auto c = comms_.find(server_pid);
    auto claim = network_claim(db_, session_id_, {server_pid, s.fd, s.peer, c == comms_.end() ? "" : c->second}, from, to);
    if (claim && claim->lost_ns >= kMinLostNs) return claim;
  }
  return std::nullopt;
}

// One arbitration per gap (docs/INFERENCE.md "Claims on one gap"): the causes that claim the
// same slow part share its excess, never more. The more specific evidence takes its time
// first: the request's own connection (network), then work the engine did instead of this
// request (another request's long prefill pass, a late rank's collective), then the engine's
// own state (queue, KV cache), then the host states of its threads (runnable, D), which within
// a tier go by time, as diagnosis/'s per-call arbitration gives a call to the state with the
// most time. A host stall inside a pass the engine spent on other work does not lengthen the
// gap: the pass does. A claim left under kMinLostNs is dropped.
void arbitrate_claims(std::vector<CauseClaim>& claims, double excess_ns) {
  std::stable_sort(claims.begin(), claims.end(), [](const CauseClaim& a, const CauseClaim& b) {
    const auto ta = RequestCauses::tier(a.cause), tb = RequestCauses::tier(b.cause);
    return ta != tb ? ta < tb : a.lost_ns > b.lost_ns;
  });
  double left = std::max(0.0, excess_ns);
  for (CauseClaim& c : claims) {
    c.lost_ns = std::min(c.lost_ns, left);
    left -= c.lost_ns;
  }
  std::erase_if(claims, [](const CauseClaim& c) { return c.lost_ns < kMinLostNs; });
  std::stable_sort(claims.begin(), claims.end(), [](const CauseClaim& a, const CauseClaim& b) { return a.lost_ns > b.lost_ns; });
}

std::vector<CauseClaim> CauseFinder::explain(const std::string& id, uint32_t server_pid, int64_t from, int64_t to,
                                             double excess_ns) {
  std::vector<CauseClaim> out;
  if (to <= from || excess_ns <= 0) return out;
  auto net = network(id, server_pid, from, to);
  cpu_contention(server_pid, from, to, out);
  for (auto& c : d_state_claims(db_, session_id_, engine_pids(server_pid), comms_, from, to))
    if (c.lost_ns >= kMinLostNs) out.push_back(std::move(c));
  if (auto c = nccl_->claim(engine_pids(server_pid), comms_, from, to); c && c->lost_ns >= kMinLostNs)
    out.push_back(std::move(*c));
  prefill(id, server_pid, from, to, out);
  engine_state(id, server_pid, from, to, out);
  if (net) out.push_back(std::move(*net));
  for (const auto& s : spans_)  // diagnosis/causes/request_api_server_busy.h
    if (s.id == id && s.server_pid == server_pid) {
      auto c = api_server_busy_claim(db_, session_id_, {server_pid, s.end_ns, s.read_end_ns}, from, to);
      if (c && c->lost_ns >= kMinLostNs) out.push_back(std::move(*c));
      break;
    }
  arbitrate_claims(out, excess_ns);
  return out;
}

}  // namespace causeway::requests
