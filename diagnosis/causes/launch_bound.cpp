#include "diagnosis/causes/launch_bound.h"
#include "common/argmax.h"
#include "diagnosis/chain_view.h"
#include "common/units.h"

namespace causeway {
namespace {

constexpr int64_t kLaunchBoundMinSpanNs = 200'000'000;
// Enough launches that per-launch overhead can add up; a few big kernels are not this cause.
constexpr int64_t kLaunchBoundMinLaunches = 1000;
// Launch-bound: the launch API itself holds the thread for at least 40% of its time …
constexpr double kLaunchBoundMinShare = 0.4;
// … and the GPU keeps up: its waits took under half the launch time (a GPU-bound loop waits
// in its syncs for work the launches queued).
constexpr int64_t kLaunchBoundGpuWaitDivisor = 2;

}  // namespace

void LaunchBound::report(SessionReport& c) {
  const CorrelatorState& s = c.s;
  for (const auto& [tid, a] : s.activity) {
    const int64_t span = a.span();
    if (span < kLaunchBoundMinSpanNs || a.launches < kLaunchBoundMinLaunches) continue;
    const double share = static_cast<double>(a.launch_cpu_ns) / static_cast<double>(span);
    if (share < kLaunchBoundMinShare || a.gpu_wait_ns * kLaunchBoundGpuWaitDivisor > a.launch_cpu_ns) continue;
    const double seconds = static_cast<double>(span) / 1e9;
    const int64_t mean_launch = a.launch_cpu_ns / a.launches;
    const int64_t wait_per_launch = a.gpu_wait_ns / a.launches;
    Doc d;
    d.cause = id;
    d.id = "s" + std::to_string(s.session_id) + "-" + std::string(name) + "-" + std::to_string(a.pid) + "-t" + std::to_string(tid);
    d.pid = a.pid;
    d.tid = tid;
    // The chain is reported under the launch op the thread used most.
    const auto* most = argmax_by(
        s.ops, [](const auto& e) { return e.second.count; },
        [&](const auto& e) { return (e.first >> 16) == a.pid && is_launch_op(static_cast<uint16_t>(e.first & 0xffff)) && e.second.count > 0; });
    const uint16_t op = most ? static_cast<uint16_t>(most->first & 0xffff) : 0;
    d.op_id = op;
    d.op = op_name(op);
    d.calls = a.launches;
    d.from_ns = a.first_ns;
    d.to_ns = a.last_end_ns;
    d.lost_ns = a.launch_cpu_ns;
    d.impact = static_cast<double>(d.lost_ns) / static_cast<double>(c.window_ns);
    d.severity = severity_for(d.impact);
    d.summary = s.comm_of(a.pid) + " (pid " + std::to_string(a.pid) + ", thread " + std::to_string(tid) + ") spent " +
                pct(share) + " of its time inside the kernel-launch API: " + with_commas(a.launches) + " launches at " +
                with_commas(static_cast<int64_t>(static_cast<double>(a.launches) / seconds)) + "/s, " +
                format_duration_ns(mean_launch) + " each, while its GPU waits took " + format_duration_ns(wait_per_launch) +
                " per launch — the kernels are too small for their launch cost: launch-bound";
    d.evidence.push_back(with_commas(a.launches) + " kernel launches in " + format_duration_ns(span) + " (" +
                         with_commas(static_cast<int64_t>(static_cast<double>(a.launches) / seconds)) + "/s), " +
                         format_duration_ns(a.launch_cpu_ns) + " on-CPU inside the launch calls, mean " +
                         format_duration_ns(mean_launch));
    d.evidence.push_back(with_commas(a.gpu_waits) + " GPU waits took " + format_duration_ns(a.gpu_wait_ns) + " in all (" +
                         format_duration_ns(wait_per_launch) +
                         " per launch): the GPU drained each kernel before the next launch came, so a kernel's GPU time is "
                         "at most about its " + format_duration_ns(mean_launch) + " launch");
    d.evidence.push_back(format_duration_ns(a.gap_cpu_ns) + " on-CPU between calls, " +
                         pct(static_cast<double>(a.gap_cpu_ns) / static_cast<double>(span)) + " of the thread's time");
    d.recommendation = "Launch fewer, larger kernels: capture the step as a CUDA graph (torch.compile(mode=\"reduce-overhead\") or "
                       "torch.cuda.graphs) so one cudaGraphLaunch replaces the " +
                       with_commas(static_cast<int64_t>(static_cast<double>(a.launches) / seconds)) +
                       " launches per second, fuse elementwise ops (torch.compile, fused optimizers such as "
                       "foreach/fused AdamW), or raise the batch size so each kernel does more work.";
    op_stats(c, d, false);
    d.slow_share = 1.0;
    emit(c, std::move(d));
  }
}

}  // namespace causeway
