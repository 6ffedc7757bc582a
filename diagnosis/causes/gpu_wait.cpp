#include "diagnosis/causes/gpu_wait.h"

#include <cmath>

#include "common/argmax.h"
#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "common/units.h"

namespace causeway {
namespace {

// Another process that submitted GPU work during at least half the slow syncs and at least
// twice (+5 points) as often as during normal ones: it time-slices the GPU with the victim.
struct Sharer {
  uint32_t pid = 0;
  double slow_share = 0, normal_share = 0;
};

Sharer gpu_sharer(const ChainView& v, const GpuWait::State& st) {
  auto it = st.gpu_share.find(v.a.pid);
  if (it == st.gpu_share.end()) return {};
  const GpuShareAcc& g = it->second;
  std::vector<Sharer> sharers;  // in the slow calls at least half the time, and twice as often as in normal ones
  for (auto& [pid, hits] : g.slow_hits) {
    double sh = g.slow ? static_cast<double>(hits) / static_cast<double>(g.slow) : 0;
    auto n = g.normal_hits.find(pid);
    double nh = g.normal && n != g.normal_hits.end() ? static_cast<double>(n->second) / static_cast<double>(g.normal) : 0;
    if (sh >= 0.5 && sh >= 2 * nh + 0.05) sharers.push_back({pid, sh, nh});
  }
  const Sharer* top = argmax_by(sharers, [](const Sharer& x) { return x.slow_share; });
  return top ? *top : Sharer{};
}

}  // namespace

Finding GpuWait::explain(const ChainView& v, const Evidence& e, const State& st) {
  const ChainAcc& a = v.a;
  Finding f;
  const Sharer best = gpu_sharer(v, st);
  f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost +
              " waiting on the GPU with no host cause (thread on-CPU or asleep, not preempted)" +
              (best.pid ? "; " + who(v.s, best.pid) + " submitted GPU work during " + pct(best.slow_share) + " of them vs " +
                              pct(best.normal_share) + " of normal ones — it shares the GPU"
                        : "; the GPU queue itself is the bottleneck");
  if (best.pid)
    f.culprit = Culprit{.pid = best.pid, .comm = v.s.comm_of(best.pid), .share_kind = ShareKind::overlap,
                        .share = std::round(best.slow_share * 1000) / 1000};
  f.evidence.push_back("on-CPU " + format_duration_ns(e.on_cpu_ns) + ", asleep " + format_duration_ns(e.sleep_ns) +
                       " inside the slow calls; no runnable, D-state or lock wait explains them");
  if (e.host_ns > 0)
    f.evidence.push_back(format_duration_ns(e.host_ns) +
                         " of those calls was spent runnable or in D state: that part is a host cause's and is not counted "
                         "as GPU wait");
  if (best.pid) {
    const GpuShareAcc& g = st.gpu_share.at(a.pid);
    auto l = g.slow_launches.find(best.pid);
    f.evidence.push_back(who(v.s, best.pid) + " submitted " + with_commas(l != g.slow_launches.end() ? l->second : 0) +
                         " GPU operations during " + std::to_string(g.slow_hits.at(best.pid)) +
                         " slow syncs; during normal syncs it was active " + pct(best.normal_share) + " of the time");
  }
  if (a.calls)
    f.evidence.push_back("the calling thread submitted " +
                         num(static_cast<double>(e.own_submits_before) / static_cast<double>(a.calls), 1) +
                         " GPU operations on average between its previous GPU wait and each slow call");
  // No host cause seen is not a GPU cause seen: HIGH or MEDIUM needs GPU work queued ahead of
  // (or beside) the calls that lost most of the time.
  if (2 * e.queued_lost_ns < a.lost_ns) {
    f.max_severity = Severity::low;
    f.summary += "; evidence is weak";
    f.evidence.push_back("only " + std::to_string(e.queued_calls) + " of the " + std::to_string(a.calls) +
                         " slow calls had GPU work queued ahead of them (since the previous sync) or submitted beside "
                         "them: nothing in the trace shows what the GPU was busy with");
  }
  return f;
}

std::string GpuWait::fix(const ChainView& v, const Evidence&, const State& st) {
  if (const Sharer best = gpu_sharer(v, st); best.pid)
    return "Give " + v.s.comm_of(v.a.pid) + " and " + v.s.comm_of(best.pid) +
           " separate GPUs, or partition the GPU (MIG, or MPS with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) so the other job cannot "
           "time-slice this one's kernels.";
  return "The host is waiting for the GPU: profile the kernels before this sync (Nsight Systems) — the host side is not the "
         "bottleneck here.";
}

void GpuWait::detect(ChunkContext& cx, const Slow& w, int64_t queued_ahead, State& st) {
  const Ev& e = *w.e;
  auto [c, ev] = chain_for<GpuWait>(cx.s, e.pid, e.op, w.gap);
  // Time runnable or in D inside the call was a host cause's, never the GPU's: it does not
  // count as lost to the GPU (it was too little to win the call, see host_claim).
  const int64_t host = std::min(w.excess, w.off.runnable_ns + w.off.uninterruptible_ns);
  note_call(cx.s, c, w, w.excess - host, w.excess - host);
  ev.host_ns += host;
  ev.on_cpu_ns += (w.to - w.from) - w.off.total();
  ev.sleep_ns += w.off.sleeping_ns;
  GpuShareAcc& g = st.gpu_share[e.pid];
  ++g.slow;
  std::vector<std::pair<uint32_t, int64_t>> o;
  other_submitters(cx.hx, e.pid, e.ts, e.end(), o);
  if (queued_ahead > 0 || !o.empty()) {
    ++ev.queued_calls;
    ev.queued_lost_ns += w.excess - host;
  }
  auto items = call_frame(cx.s, w);
  for (auto& [pid, n] : o) {
    ++g.slow_hits[pid];
    g.slow_launches[pid] += n;
    items.push_back({e.ts, op_layer(e.op), cx.s.comm_of(pid) + " (pid " + std::to_string(pid) + ") submits " +
                                                std::to_string(n) + " GPU operations during the wait"});
  }
  // The work it waits for: this thread's own submissions since its previous GPU wait (counted
  // in call order, runs of counted launches included: the same in both stores, where a fixed
  // window's edge would cut a run whose calls have no timestamps of their own).
  if (auto it = cx.s.activity.find(e.tid); it != cx.s.activity.end()) {
    const int64_t n = it->second.submits_before_wait;
    ev.own_submits_before += n;
    items.push_back({e.ts, op_layer(e.op), std::to_string(n) + " GPU operations submitted by this thread since its previous GPU wait"});
  }
  add_sample(c, w.excess, std::move(items));
}

void GpuWait::observe(State& st, const Ev& e, const ObserveContext& ox) {
  // Only syncs no cause claimed: ordinary ones, and those examined for a host stall none explained.
  if (!is_gpu_wait_op(e.op) || (ox.verdict != CallVerdict::normal && ox.verdict != CallVerdict::unclaimed)) return;
  const ChunkContext& cx = ox.chunk;
  if (cx.hx.submits.size() < 2 && (cx.hx.submits.empty() || cx.hx.submits.count(e.pid))) return;
  GpuShareAcc& g = st.gpu_share[e.pid];
  ++g.normal;
  std::vector<std::pair<uint32_t, int64_t>> o;
  other_submitters(cx.hx, e.pid, e.ts, e.end(), o);
  for (auto& [pid, n] : o) ++g.normal_hits[pid];
}

}  // namespace causeway
