#include "diagnosis/thread_run.h"

#include <algorithm>

#include "tracedb/op_args.h"
#include "tracedb/op_catalog.h"

namespace causeway {

void add_counted_run(ThreadActivity& a, const Ev& e, int64_t prev_end, const ThreadTimelines* tl) {
  const CountedRunArgs run = counted_run_args(e);
  const int64_t n = std::max<int64_t>(0, run.calls), in_calls = std::max<int64_t>(0, run.calls_ns);
  const uint16_t op = run.last_op;
  a.pid = e.pid;
  a.first_ns = std::min(a.first_ns, e.ts);
  a.last_end_ns = std::max(a.last_end_ns, e.end());
  a.calls += n;
  if (is_submit_op(op)) {
    a.submits += n;
    a.submits_since_wait += n;
  }
  if (is_launch_op(op)) {
    a.launches += n;
    a.launch_cpu_ns += in_calls;
  }
  const int64_t from = prev_end == INT64_MIN || prev_end > e.ts ? e.ts : prev_end;
  const int64_t gap = std::max<int64_t>(0, e.end() - from - in_calls);
  const int64_t off = tl && gap > 0 ? tl->off_cpu_in(e.tid, from, e.end()).total() : 0;
  a.gap_ns += gap;
  a.gap_cpu_ns += std::max<int64_t>(0, gap - off);
}

void add_counted_run_to_baseline(const Ev& e, uint64_t& count, LatencyHistogram& hist, uint64_t& min, uint64_t& max) {
  const CountedRunArgs run = counted_run_args(e);
  const auto n = static_cast<uint64_t>(std::max<int64_t>(0, run.calls));
  if (n == 0) return;
  const auto mean = static_cast<uint64_t>(std::max<int64_t>(0, run.calls_ns)) / n;
  count += n;
  hist.add(mean, n);
  min = std::min(min, mean);
  max = std::max(max, mean);
}

}  // namespace causeway
