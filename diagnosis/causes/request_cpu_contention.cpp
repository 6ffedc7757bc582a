#include "diagnosis/causes/request_cpu_contention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "diagnosis/engine_series.h"
#include "diagnosis/request_evidence.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::requests {
namespace {

// Who held `cpu` over (from, to], by pid, from the switch records there up to `until` (the
// victim's switch-in, which may come after `to`): each record's prev_pid held the CPU since the
// record before it (or since `from`), clipped to `to`.
void request_cpu_holders(sqlite3* db, int64_t session_id, int32_t cpu, int64_t from, int64_t to, int64_t until,
                         std::map<uint32_t, double>& by_pid) {
  auto st = Statement::prepare(db,
                               "SELECT ts_ns, prev_pid, next_pid FROM sched WHERE session_id = ?1 AND cpu = ?2 AND ts_ns > ?3 "
                               "AND ts_ns <= ?4 ORDER BY ts_ns");
  if (!st) return;
  st->bind(1, session_id);
  st->bind(2, int64_t{cpu});
  st->bind(3, from);
  st->bind(4, until);
  // While a traced thread waits for a CPU, every switch there is recorded (bpf/sched.bpf.h
  // `sched_watch`), so each record's prev_pid held the CPU since the record before. Where one
  // is missing (the watch ends when any traced thread runs there, or a wait began before the
  // trace), a record that gave the CPU to A is followed by one taken from B ≠ A: A ran first
  // and B last, for unknown parts, and the time is split between them.
  int64_t since = from;
  std::optional<uint32_t> took;  // next_pid of the record that began the interval
  while (st->step() == SQLITE_ROW && since < to) {
    const int64_t ts = std::min(st->col_int(0), to);
    const auto left = static_cast<uint32_t>(st->col_int(1));
    const auto span = static_cast<double>(ts - since);
    if (took && *took != left) by_pid[*took] += span / 2, by_pid[left] += span / 2;
    else by_pid[left] += span;
    took = static_cast<uint32_t>(st->col_int(2));
    since = ts;
  }
}

}  // namespace

// Runnable but not running: each switch-in of an engine thread ends a wait that began at its
// last wake-up or preemption. The time is stolen by whoever held that CPU meanwhile, ranked
// by time held (not by who ran last, nor by how often); the engine's own threads and an idle
// CPU steal nothing, and the tracer's threads are overhead, reported but never the culprit
// (docs/DIAGNOSIS.md "The tracer is never a culprit").
void CpuContentionRequestCause::find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) {
  const int64_t from = part.from_ns, to = part.to_ns;
  const auto& pids = ev.engine_pids(part.server_pid);
  std::string in;
  for (uint32_t p : pids) in += (in.empty() ? "" : ",") + std::to_string(p);
  // Per switch-in: the thread's last wake-up, and its last switch-out with its state.
  auto st = Statement::prepare(
      ev.db(),
      "SELECT s.ts_ns, s.prev_pid, (SELECT max(ts_ns) FROM wakeups w WHERE w.session_id = ?1 AND w.ts_ns >= s.ts_ns - ?4 "
      "AND w.ts_ns < s.ts_ns AND w.tid = s.next_tid), o.ts_ns, o.prev_state, s.cpu FROM sched s LEFT JOIN sched o ON o.id = "
      "(SELECT x.id FROM sched x WHERE x.session_id = ?1 AND x.ts_ns >= s.ts_ns - ?4 AND x.ts_ns < s.ts_ns AND x.prev_tid = "
      "s.next_tid ORDER BY x.ts_ns DESC LIMIT 1) WHERE s.session_id = ?1 AND s.ts_ns > ?2 AND s.ts_ns <= ?3 + ?4 "
      "AND s.next_pid IN (" + in + ") AND s.prev_pid NOT IN (" + in + ")");
  if (!st) return;
  st->bind(1, ev.session_id());
  st->bind(2, from);
  st->bind(3, to);
  st->bind(4, kRequestLookbackNs);
  std::map<uint32_t, double> held;
  std::vector<std::pair<int64_t, int64_t>> waits;  // each thread's runnable wait, clipped to the slow part
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
    if (hi > lo) {
      request_cpu_holders(ev.db(), ev.session_id(), static_cast<int32_t>(st->col_int(5)), lo, hi, t_in, held);
      waits.emplace_back(lo, hi);
    }
  }
  std::map<uint32_t, double> by_culprit;
  double tracer_ns = 0, held_ns = 0;
  for (const auto& [pid, ns] : held) {
    held_ns += ns;
    if (pid == 0 || std::find(pids.begin(), pids.end(), pid) != pids.end()) continue;
    if (ev.tracer_pid() && pid == *ev.tracer_pid()) tracer_ns += ns;
    else by_culprit[pid] += ns;
  }
  if (by_culprit.empty()) return;
  auto top = std::max_element(by_culprit.begin(), by_culprit.end(), [](auto& a, auto& b) { return a.second < b.second; });
  double others = 0;
  for (const auto& [pid, ns] : by_culprit) others += ns;
  // Several engine threads wait at once (a thread per connection, the engine core): their
  // waits overlap, so the time the slow part lost is the wall-clock union of the waits, in
  // the proportion that outsiders held the CPUs — never the sum over threads.
  const double total = held_ns > 0 ? covered_ns(std::move(waits), from, to) * others / held_ns : 0;
  if (total < kMinRequestClaimNs) return;
  Culprit culprit{.pid = top->first,
                  .comm = ev.comm(top->first),
                  .share_kind = ShareKind::claimed,
                  .share = others > 0 ? top->second / others : 0};
  if (tracer_ns >= kMinRequestClaimNs) culprit.tracer_overhead_ms = std::round(tracer_ns / 1e3) / 1e3;
  out.push_back({RequestCause::cpu_contention, total, std::move(culprit)});
}

const char* CpuContentionRequestCause::recommendation([[maybe_unused]] const Culprit& culprit) {
  return "Keep other work off the engine's CPUs: pin the engine core and its workers (taskset / cpuset) or move "
         "the culprit to other cores or a lower priority.";
}

RequestChainWords CpuContentionRequestCause::chain_words(const Culprit& culprit) {
  RequestChainWords w;
  if (std::string line = cpu_contention_tracer_evidence(culprit); !line.empty()) w.evidence.push_back(std::move(line));
  return w;
}

std::string cpu_contention_tracer_evidence(const Culprit& culprit) {
  if (!culprit.tracer_overhead_ms) return "";
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f", *culprit.tracer_overhead_ms);
  return std::string("tracer overhead: ") + ms +
         " ms (causeway's own threads held the engine's CPUs for that long while its threads were runnable; "
         "counted apart, never the culprit)";
}

}  // namespace causeway::requests
