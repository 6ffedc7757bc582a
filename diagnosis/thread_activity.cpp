#include "diagnosis/thread_activity.h"

#include <algorithm>

#include "tracedb/op_catalog.h"

namespace causeway {

void ThreadActivity::add_call(const Ev& e, int64_t prev_end, const OffCpuSummary& in_call, const ThreadTimelines* tl) {
  constexpr int64_t kLongGapNs = 1'000'000;  // a "stretch" (host_bound) when mostly on-CPU
  pid = e.pid;
  first_ns = std::min(first_ns, e.ts);
  last_end_ns = std::max(last_end_ns, e.end());
  ++calls;
  if (is_gpu_wait_op(e.op)) {
    submits_before_wait = submits_since_wait;
    submits_since_wait = 0;
  } else if (is_submit_op(e.op)) {
    ++submits_since_wait;
  }
  if (is_submit_op(e.op)) ++submits;
  if (is_launch_op(e.op)) {
    ++launches;
    launch_cpu_ns += std::max<int64_t>(0, e.dur - in_call.total());
  }
  if (is_gpu_wait_op(e.op)) {
    ++gpu_waits;
    gpu_wait_ns += std::max<int64_t>(0, e.dur - in_call.runnable_ns - in_call.uninterruptible_ns);
  }
  if (prev_end == INT64_MIN || e.ts <= prev_end) return;
  // Every gap's off-CPU time is looked up, short ones too: a run of counted calls
  // (thread_run.cpp) subtracts all the off-CPU time between its calls, so a row must too for
  // both stores of the same calls to split the thread's time alike.
  const int64_t gap = e.ts - prev_end;
  const int64_t off = tl ? tl->off_cpu_in(e.tid, prev_end, e.ts).total() : 0;
  const int64_t cpu = std::max<int64_t>(0, gap - off);
  gap_ns += gap;
  gap_cpu_ns += cpu;
  if (gap < kLongGapNs) return;
  // Only gaps of 1 ms or more: a call after one is always recorded (the kernel's stack gap,
  // 0.5 ms, docs/COLLECTOR.md "Aggregated calls"), so both stores see the same ones.
  longest_gap_cpu_ns = std::max(longest_gap_cpu_ns, cpu);
  if (cpu >= kLongGapNs && 2 * cpu >= gap) {
    ++long_gaps;
    gap_ops[e.op] += cpu;
    if (e.stack) gap_stacks[e.stack] += cpu;
  }
}

}  // namespace causeway
