#include "diagnosis/thread_activity.h"

#include <algorithm>

#include "tracedb/op_catalog.h"

namespace causeway {

void ThreadActivity::add_call(const Ev& e, int64_t prev_end, const OffCpuSummary& in_call, const ThreadTimelines* tl) {
  // Gaps shorter than this (Python between two launches) count as on-CPU without a timeline
  // lookup: a switch inside one can misplace at most its length.
  constexpr int64_t kGapLookupNs = 20'000;
  constexpr int64_t kLongGapNs = 1'000'000;
  pid = e.pid;
  first_ns = std::min(first_ns, e.ts);
  last_end_ns = std::max(last_end_ns, e.end());
  ++calls;
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
  const int64_t gap = e.ts - prev_end;
  const int64_t off = tl && gap >= kGapLookupNs ? tl->off_cpu_in(e.tid, prev_end, e.ts).total() : 0;
  const int64_t cpu = std::max<int64_t>(0, gap - off);
  gap_ns += gap;
  gap_cpu_ns += cpu;
  longest_gap_cpu_ns = std::max(longest_gap_cpu_ns, cpu);
  if (cpu >= kLongGapNs && 2 * cpu >= gap) {
    ++long_gaps;
    gap_ops[e.op] += cpu;
    if (e.stack) gap_stacks[e.stack] += cpu;
  }
}

}  // namespace causeway
