#include "diagnosis/causes/unknown.h"

#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"

namespace causeway {

Finding Unknown::explain(const ChainView& v, const Evidence& e) {
  Finding f;
  f.summary = v.victim + ": " + std::to_string(v.a.calls) + " slow calls lost " + v.lost +
              (e.d_state_calls > 0 ? " in D state with no block I/O, page-allocation burst or OOM in the trace"
                                   : " with no host cause in the trace (no preemption, I/O, lock, memory or network event)") +
              "; evidence is weak";
  f.evidence.push_back("outliers against the robust baseline (>= 2x p50 and > p50 + 6 robust sigmas)");
  if (e.no_context_calls > 0)
    f.evidence.push_back(std::to_string(e.no_context_calls) +
                         " of them ran past the host records stored when they were judged (a live poll): their "
                         "scheduler, I/O and network context was incomplete, so no cause is named");
  if (e.host_copy_calls > 0)
    f.evidence.push_back(std::to_string(e.host_copy_calls) +
                         " of them were synchronous copies that lost their time on-CPU: the host staging or faulting in "
                         "the source, or a spin on queued GPU work; the trace cannot tell which, so no GPU wait is claimed");
  f.max_severity = Severity::low;
  f.min_impact = 0.005;
  return f;
}

std::string Unknown::fix(const ChainView&, const Evidence&) {
  return "Evidence is weak: trace with user stacks enabled and look at the GPU side (Nsight Systems), or widen the trace "
         "(another process, another host) to find what these calls wait for.";
}

void Unknown::detect_d_state(ChunkContext& cx, const Slow& w) {
  const Ev& e = *w.e;
  auto [c, ev] = chain_for<Unknown>(cx.s, e.pid, e.op, w.gap);
  note_call(cx.s, c, w, w.excess, w.off.uninterruptible_ns);
  ++ev.d_state_calls;
  add_sample(c, w.excess, call_frame(cx.s, w));
}

void Unknown::detect(ChunkContext& cx, const Slow& w, bool context_complete, bool host_copy) {
  auto [c, ev] = chain_for<Unknown>(cx.s, w.e->pid, w.e->op, w.gap);
  note_call(cx.s, c, w, w.excess, 0);
  ev.off_cpu_ns += w.off.total();
  if (!context_complete) ++ev.no_context_calls;
  if (host_copy) ++ev.host_copy_calls;
  add_sample(c, w.excess, call_frame(cx.s, w));
}

}  // namespace causeway
