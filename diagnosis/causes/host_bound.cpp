#include <algorithm>

#include "diagnosis/causes/host_bound.h"
#include "common/argmax.h"
#include "diagnosis/chain_view.h"
#include "common/units.h"

namespace causeway {
namespace {

// A thread must have driven the GPU for a while to say what bounds it: one that made a few
// CUDA calls around long CPU work (a checker, a logger) is not a training loop.
constexpr int64_t kHostBoundMinSpanNs = 200'000'000;
constexpr int64_t kHostBoundMinSubmits = 20;
// Host-bound: on-CPU between calls for at least half the thread's time …
constexpr double kHostBoundMinShare = 0.5;
// … while its GPU waits took under a quarter of that host time. In a GPU-bound loop the syncs
// absorb the host time (the GPU was still busy); here they return at once.
constexpr int64_t kHostBoundGpuWaitDivisor = 4;

}  // namespace

void HostBound::report(SessionReport& c) {
  const CorrelatorState& s = c.s;
  if (!s.sched_seen) return;  // without switch records the time between calls cannot be split on/off CPU
  for (const auto& [tid, a] : s.activity) {
    const int64_t span = a.span();
    if (span < kHostBoundMinSpanNs || a.submits < kHostBoundMinSubmits) continue;
    const double host_share = static_cast<double>(a.gap_cpu_ns) / static_cast<double>(span);
    if (host_share < kHostBoundMinShare || a.gpu_wait_ns * kHostBoundGpuWaitDivisor > a.gap_cpu_ns) continue;
    Doc d;
    d.cause = id;
    d.id = "s" + std::to_string(s.session_id) + "-" + std::string(name) + "-" + std::to_string(a.pid) + "-t" + std::to_string(tid);
    d.pid = a.pid;
    d.tid = tid;
    d.op_id = key_of_largest(a.gap_ops);
    d.op = d.op_id ? op_name(d.op_id) : "";
    d.calls = a.long_gaps;
    d.between = true;
    d.from_ns = a.first_ns;
    d.to_ns = a.last_end_ns;
    d.lost_ns = a.gap_cpu_ns - a.gpu_wait_ns;
    d.impact = static_cast<double>(d.lost_ns) / static_cast<double>(c.window_ns);
    d.severity = severity_for(d.impact);
    d.stack = key_of_largest(a.gap_stacks);
    const int64_t in_calls = std::max<int64_t>(0, span - a.gap_ns);
    d.summary = s.comm_of(a.pid) + " (pid " + std::to_string(a.pid) + ", thread " + std::to_string(tid) + ") was on-CPU between its CUDA calls for " +
                format_duration_ns(a.gap_cpu_ns) + " of " + format_duration_ns(span) + " (" + pct(host_share) +
                "), while its GPU waits took " + format_duration_ns(a.gpu_wait_ns) +
                ": the GPU waits for the host — Python overhead or CPU preprocessing in the loop itself, no other process to blame";
    d.evidence.push_back(format_duration_ns(a.gap_cpu_ns) + " on-CPU between " + with_commas(a.calls) + " CUDA calls (" +
                         with_commas(a.long_gaps) + " stretches of 1 ms or more, longest " +
                         format_duration_ns(a.longest_gap_cpu_ns) + "); " + format_duration_ns(a.gap_ns - a.gap_cpu_ns) +
                         " off-CPU between them");
    d.evidence.push_back(format_duration_ns(in_calls) + " inside CUDA calls: " + with_commas(a.launches) + " kernel launches (" +
                         format_duration_ns(a.launch_cpu_ns) + " on-CPU), " + with_commas(a.gpu_waits) +
                         " GPU waits (syncs, synchronous copies) totalling only " + format_duration_ns(a.gpu_wait_ns) +
                         " — the GPU had finished its queue before each wait");
    if (d.op_id)
      d.evidence.push_back("the host work mostly ends in " + d.op + " (" + pct(static_cast<double>(a.gap_ops.at(d.op_id)) /
                                                                                 static_cast<double>(std::max<int64_t>(1, a.gap_cpu_ns))) +
                           " of the on-CPU time precedes it)" + (d.stack ? "; its call site is the stack below" : ""));
    d.evidence.push_back(format_duration_ns(d.lost_ns) + " of host time not overlapped by GPU waits, " + pct(d.impact) + " of the " +
                         format_duration_ns(c.window_ns) + " analyzed");
    d.recommendation =
        "Cut the host work between CUDA calls in " + s.comm_of(a.pid) +
        ": profile it (py-spy top --pid " + std::to_string(a.pid) +
        ", or the call site below), move CPU preprocessing into DataLoader workers (num_workers > 0, pin_memory=True), batch "
        "or vectorize Python-side loops, and capture the step with torch.compile / CUDA graphs to remove per-op Python overhead.";
    op_stats(c, d, false);
    d.slow_share = 0;
    emit(c, std::move(d));
  }
}

}  // namespace causeway
