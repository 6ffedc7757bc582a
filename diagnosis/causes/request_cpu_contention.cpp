#include "diagnosis/causes/request_cpu_contention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "diagnosis/engine_series.h"
#include "diagnosis/request_cpu_waits.h"
#include "diagnosis/request_evidence.h"

namespace causeway::requests {

// Runnable but not running: each switch-in of an engine thread ends a wait that began at its
// last wake-up or preemption (diagnosis/request_cpu_waits.h). The time is stolen by whoever
// held that CPU meanwhile, ranked by time held (not by who ran last, nor by how often); the
// engine's own threads and an idle CPU steal nothing, and the tracer's threads are overhead,
// reported but never the culprit (docs/DIAGNOSIS.md "The tracer is never a culprit").
void CpuContentionRequestCause::find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) {
  const auto& pids = ev.engine_pids(part.server_pid);
  CpuWaits w = read_cpu_waits(ev.db(), ev.session_id(), pids, 0, part.from_ns, part.to_ns);
  const CpuStolen stolen = stolen_by(w, pids, ev.tracer_pid());
  const uint32_t top = stolen.top();
  if (!top) return;
  // Several engine threads wait at once (a thread per connection, the engine core): their
  // waits overlap, so the time the slow part lost is the wall-clock union of the waits, in
  // the proportion that outsiders held the CPUs — never the sum over threads.
  const double total =
      stolen.held_ns > 0 ? covered_ns(std::move(w.waits), part.from_ns, part.to_ns) * stolen.outsiders_ns / stolen.held_ns : 0;
  if (total < kMinRequestClaimNs) return;
  out.push_back({RequestCause::cpu_contention, total, cpu_contention_culprit(ev, stolen)});
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
