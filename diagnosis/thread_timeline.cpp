#include "diagnosis/thread_timeline.h"

#include <algorithm>

namespace causeway {

OffCpuState off_cpu_state(int64_t prev_state) {
  if (prev_state == 0) return OffCpuState::runnable;
  if (prev_state & 2) return OffCpuState::uninterruptible;
  if (prev_state & 1) return OffCpuState::sleeping;
  return OffCpuState::other;
}

const char* state_letter(OffCpuState s) {
  switch (s) {
    case OffCpuState::runnable: return "R";
    case OffCpuState::sleeping: return "S";
    case OffCpuState::uninterruptible: return "D";
    default: return "?";
  }
}

// SchedRow and WakeRow (thread_timeline.h) are not shadows of tracedb/records.h SwitchRecord and
// WakeupRecord, the rows the writer stores: they are the timeline's compact copies of a window's
// every switch and wake-up, without the priorities and target CPU it never reads (40 bytes a
// switch against 48, 24 a wake-up against 32).
namespace {
// `v` in time order (stable): itself when it is already, else a sorted copy in `copy`. The
// correlator's window buffers are read ORDER BY ts_ns and appended range after range, so
// they need neither; copying them for every chunk was a per-row cost of live diagnosis
// (docs/BENCHMARKS.md "Batched scheduler rows").
template <typename Row>
const std::vector<Row>& timeline_rows_in_time_order(const std::vector<Row>& v, std::vector<Row>& copy) {
  auto earlier = [](const Row& a, const Row& b) { return a.ts_ns < b.ts_ns; };
  if (std::is_sorted(v.begin(), v.end(), earlier)) return v;
  copy = v;
  std::stable_sort(copy.begin(), copy.end(), earlier);
  return copy;
}
}  // namespace

void ThreadTimelines::build(const std::vector<SchedRow>& rows_any, const std::vector<WakeRow>& wakeups_any,
                            int64_t data_end_ns) {
  by_tid_.clear();
  by_cpu_.clear();
  std::vector<SchedRow> rows_sorted;
  std::vector<WakeRow> wakeups_sorted;
  const std::vector<SchedRow>& rows = timeline_rows_in_time_order(rows_any, rows_sorted);
  const std::vector<WakeRow>& wakeups = timeline_rows_in_time_order(wakeups_any, wakeups_sorted);
  // Open interval per thread: index into its vector, or absent.
  std::unordered_map<uint32_t, size_t> open;
  for (const SchedRow& r : rows) {
    auto& cpu_rows = by_cpu_[r.cpu];
    const int64_t cpu_last_ns = cpu_rows.empty() ? INT64_MIN : cpu_rows.back().ts_ns;
    if (r.next_tid != 0) {
      auto it = open.find(r.next_tid);
      if (it != open.end()) {
        auto& iv = by_tid_[r.next_tid][it->second];
        iv.to_ns = r.ts_ns;
        iv.in_cpu = r.cpu;
        open.erase(it);
      } else if (r.prev_tid != r.next_tid && !cpu_rows.empty() && cpu_rows.back().next_tid == r.next_tid) {
        // Switched back in while never seen leaving, and this CPU's last record put it here:
        // its switch-out record was lost in between.
        OffCpuInterval iv;
        iv.from_ns = cpu_rows.back().ts_ns;
        iv.to_ns = r.ts_ns;
        iv.cpu = iv.in_cpu = r.cpu;
        iv.state = OffCpuState::runnable;
        iv.next_tid = r.prev_tid;
        iv.next_pid = r.prev_pid;
        iv.inferred = true;
        auto& v = by_tid_[r.next_tid];
        if (v.empty() || v.back().to_ns <= iv.from_ns) v.push_back(iv);
      }
    }
    cpu_rows.push_back({r.ts_ns, r.next_tid, r.next_pid, r.prev_tid, r.prev_pid});
    if (r.prev_tid != 0) {
      auto& v = by_tid_[r.prev_tid];
      // A switch-out while already out means its switch-in record was lost: the task that
      // handed the CPU back ran no BPF program (on the development VM the kernel runs none while
      // its init process, the VM's agent, is current; docs/DIAGNOSIS.md "Engine"). That switch-in
      // was on this CPU, after the CPU's last record: the stale interval ends there, never later.
      // Closing it at this switch-out would count the thread off-CPU while it ran its calls —
      // a launch row would lose that time, a counted run (no switch inside) would not.
      if (auto it = open.find(r.prev_tid); it != open.end()) {
        OffCpuInterval& stale = v[it->second];
        stale.to_ns = std::max(stale.from_ns, cpu_last_ns);
      }
      OffCpuInterval iv;
      iv.from_ns = r.ts_ns;
      iv.to_ns = data_end_ns;
      iv.cpu = r.cpu;
      iv.state = off_cpu_state(r.prev_state);
      iv.next_tid = r.next_tid;
      iv.next_pid = r.next_pid;
      v.push_back(iv);
      open[r.prev_tid] = v.size() - 1;
    }
  }
  for (auto& [tid, v] : by_tid_)
    for (auto& iv : v) iv.to_ns = std::max(iv.to_ns, iv.from_ns);
  // The waker of an interval: the last wakeup of the thread inside it.
  for (const WakeRow& w : wakeups) {
    auto it = by_tid_.find(w.tid);
    if (it == by_tid_.end()) continue;
    auto& v = it->second;
    auto pos = std::upper_bound(v.begin(), v.end(), w.ts_ns,
                                [](int64_t ts, const OffCpuInterval& iv) { return ts < iv.from_ns; });
    if (pos == v.begin()) continue;
    --pos;
    if (w.ts_ns > pos->to_ns) continue;
    pos->woken = true;
    if (pos->inferred) pos->state = OffCpuState::sleeping;  // woken: it had gone to sleep
    pos->waker_tid = w.waker_tid;
    pos->waker_pid = w.waker_pid;
    pos->wake_ns = w.ts_ns;
  }
}

void ThreadTimelines::add_opaque(std::vector<std::pair<uint32_t, std::pair<int64_t, int64_t>>> tid_from_to) {
  std::sort(tid_from_to.begin(), tid_from_to.end());
  std::unordered_map<uint32_t, bool> has_switches;
  for (const auto& [tid, iv] : tid_from_to) {
    auto [known, fresh] = has_switches.try_emplace(tid, false);
    if (fresh) known->second = by_tid_.count(tid) > 0;
    if (known->second) continue;
    auto& v = by_tid_[tid];
    if (!v.empty() && iv.first < v.back().to_ns) continue;  // overlapping records: keep the first
    OffCpuInterval o;
    o.from_ns = iv.first;
    o.to_ns = std::max(iv.first, iv.second);
    o.cpu = o.in_cpu = -1;
    o.state = OffCpuState::other;
    v.push_back(o);
  }
}

std::span<const OffCpuInterval> ThreadTimelines::intervals(uint32_t tid) const {
  auto it = by_tid_.find(tid);
  if (it == by_tid_.end()) return {};
  return it->second;
}

std::span<const OffCpuInterval> ThreadTimelines::overlapping(uint32_t tid, int64_t from, int64_t to) const {
  auto all = intervals(tid);
  if (all.empty()) return {};
  // Intervals of one thread never overlap each other, so to_ns is sorted like from_ns.
  auto lo = std::upper_bound(all.begin(), all.end(), from,
                             [](int64_t t, const OffCpuInterval& iv) { return t < iv.to_ns; });
  auto hi = std::lower_bound(lo, all.end(), to, [](const OffCpuInterval& iv, int64_t t) { return iv.from_ns < t; });
  return {lo, hi};
}

OffCpuSummary ThreadTimelines::off_cpu_in(uint32_t tid, int64_t from, int64_t to) const {
  OffCpuSummary s;
  for (const OffCpuInterval& iv : overlapping(tid, from, to)) {
    int64_t a = std::max(iv.from_ns, from), b = std::min(iv.to_ns, to);
    if (b <= a) continue;
    ++s.intervals;
    int64_t rq = std::clamp(iv.runnable_from(), a, b);  // [rq, b) waited for a CPU
    s.runnable_ns += b - rq;
    if (iv.state == OffCpuState::uninterruptible) s.runnable_after_d_ns += b - rq;
    int64_t ns = rq - a;
    switch (iv.state) {
      case OffCpuState::sleeping: s.sleeping_ns += ns; break;
      case OffCpuState::uninterruptible: s.uninterruptible_ns += ns; break;
      case OffCpuState::other: s.other_ns += ns; break;
      default: break;
    }
  }
  return s;
}

void ThreadTimelines::who_ran(int32_t cpu, int64_t from, int64_t to, std::vector<RunShare>& out) const {
  out.clear();
  auto it = by_cpu_.find(cpu);
  if (it == by_cpu_.end() || to <= from) return;
  const auto& v = it->second;
  // The task current at `from` is the next task of the last switch at or before it.
  auto pos = std::upper_bound(v.begin(), v.end(), from, [](int64_t t, const CpuSwitch& s) { return t < s.ts_ns; });
  if (pos == v.begin()) return;  // nothing known about this CPU before `from`
  --pos;
  int64_t seg_from = from;
  uint32_t cur_tid = pos->next_tid, cur_pid = pos->next_pid;
  auto add = [&](uint32_t tid, uint32_t pid, int64_t ns) {
    if (ns <= 0) return;
    for (auto& r : out)
      if (r.tid == tid && r.pid == pid) {
        r.ns += ns;
        return;
      }
    out.push_back({pid, tid, ns});
  };
  // Only switches touching a traced process are recorded (bpf/sched.bpf.h): between two of them
  // untraced tasks may have switched among themselves unseen. When the task a switch leaves is
  // not the one the previous switch put there, the segment goes to the one that held the CPU up
  // to the switch, not to the first: a kernel thread that preempts a traced thread for a few µs
  // and hands the CPU to a compiler for 20 ms must not be named for the 20 ms.
  for (++pos; pos != v.end() && pos->ts_ns < to; ++pos) {
    if (pos->prev_tid != cur_tid) {
      cur_tid = pos->prev_tid;
      cur_pid = pos->prev_pid;
    }
    add(cur_tid, cur_pid, pos->ts_ns - seg_from);
    seg_from = pos->ts_ns;
    cur_tid = pos->next_tid;
    cur_pid = pos->next_pid;
  }
  // The same for the last segment: the switch after `to` names who held the CPU until then.
  if (pos != v.end() && pos->prev_tid != cur_tid) {
    cur_tid = pos->prev_tid;
    cur_pid = pos->prev_pid;
  }
  add(cur_tid, cur_pid, to - seg_from);
}

}  // namespace causeway
