#include "diagnosis/request_cpu_waits.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/argmax.h"
#include "diagnosis/causes/request_cause_util.h"
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
                               "SELECT ts_ns, prev_pid, next_pid, prev_state FROM sched WHERE session_id = ?1 AND cpu = ?2 "
                               "AND ts_ns > ?3 AND ts_ns <= ?4 ORDER BY ts_ns");
  if (!st) return;
  st->bind(1, session_id);
  st->bind(2, int64_t{cpu});
  st->bind(3, from);
  st->bind(4, until);
  // While a traced thread waits for a CPU, every switch there is recorded (bpf/sched_watch.bpf.h),
  // so each record's prev_pid held the CPU since the record before. Where one is missing (a
  // wait began before the trace, a program run the kernel skipped), a record that gave the CPU to A is followed by one taken from B ≠ A: A ran first
  // and B last, for unknown parts (handing it all to B named whoever ran just before the
  // victim, not who held the CPU). B preempted off the CPU was CPU-bound: the time is split
  // between them. B that gave the CPU up to sleep had been woken and ran a burst: it is
  // credited at most kSleeperBurstNs, A the rest (a kernel thread such as rcu_preempt or a
  // kworker runs µs between a hog's slices, and half of each slice made it outrank the hog).
  constexpr double kSleeperBurstNs = 1e6;
  int64_t since = from;
  std::optional<uint32_t> took;  // next_pid of the record that began the interval
  while (st->step() == SQLITE_ROW && since < to) {
    const int64_t ts = std::min(st->col_int(0), to);
    const auto left = static_cast<uint32_t>(st->col_int(1));
    const auto span = static_cast<double>(ts - since);
    const double left_part = st->col_int(3) == 0 ? span / 2 : std::min(span / 2, kSleeperBurstNs);
    if (took && *took != left) by_pid[*took] += span - left_part, by_pid[left] += left_part;
    else by_pid[left] += span;
    took = static_cast<uint32_t>(st->col_int(2));
    since = ts;
  }
}

}  // namespace

// Runnable but not running: each switch-in ends a wait that began at the thread's last wake-up
// or preemption (within kRequestLookbackNs).
CpuWaits read_cpu_waits(sqlite3* db, int64_t session_id, const std::vector<uint32_t>& pids, uint32_t tid, int64_t from,
                        int64_t to) {
  CpuWaits out;
  const std::string in = sql_id_list(pids);
  auto st = Statement::prepare(
      db,
      "SELECT s.ts_ns, s.prev_pid, (SELECT max(ts_ns) FROM wakeups w WHERE w.session_id = ?1 AND w.ts_ns >= s.ts_ns - ?4 "
      "AND w.ts_ns < s.ts_ns AND w.tid = s.next_tid), o.ts_ns, o.prev_state, s.cpu FROM sched s LEFT JOIN sched o ON o.id = "
      "(SELECT x.id FROM sched x WHERE x.session_id = ?1 AND x.ts_ns >= s.ts_ns - ?4 AND x.ts_ns < s.ts_ns AND x.prev_tid = "
      "s.next_tid ORDER BY x.ts_ns DESC LIMIT 1) WHERE s.session_id = ?1 AND s.ts_ns > ?2 AND s.ts_ns <= ?3 + ?4 "
      "AND s.next_pid IN (" + in + ") AND s.prev_pid NOT IN (" + in + ")" + (tid ? " AND s.next_tid = ?5" : ""));
  if (!st) return out;
  st->bind(1, session_id);
  st->bind(2, from);
  st->bind(3, to);
  st->bind(4, kRequestLookbackNs);
  if (tid) st->bind(5, int64_t{tid});
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
      request_cpu_holders(db, session_id, static_cast<int32_t>(st->col_int(5)), lo, hi, t_in, out.held);
      out.waits.emplace_back(lo, hi);
    }
  }
  return out;
}

uint32_t CpuStolen::top() const {
  const auto* best = argmax_by(by_culprit, [](const auto& e) { return e.second; });
  return best ? best->first : 0;
}

CpuStolen stolen_by(const CpuWaits& w, const std::vector<uint32_t>& pids, const std::optional<uint32_t>& tracer_pid) {
  CpuStolen s;
  for (const auto& [pid, ns] : w.held) {
    s.held_ns += ns;
    if (pid == 0 || std::find(pids.begin(), pids.end(), pid) != pids.end()) continue;
    if (tracer_pid && pid == *tracer_pid) s.tracer_ns += ns;
    else s.by_culprit[pid] += ns, s.outsiders_ns += ns;
  }
  return s;
}

Culprit cpu_contention_culprit(const RequestEvidence& ev, const CpuStolen& stolen) {
  const uint32_t top = stolen.top();
  Culprit culprit{.pid = top,
                  .comm = ev.comm(top),
                  .share_kind = ShareKind::claimed,
                  .share = stolen.outsiders_ns > 0 ? stolen.by_culprit.at(top) / stolen.outsiders_ns : 0};
  if (stolen.tracer_ns >= kMinRequestClaimNs) culprit.tracer_overhead_ms = std::round(stolen.tracer_ns / 1e3) / 1e3;
  return culprit;
}

}  // namespace causeway::requests
