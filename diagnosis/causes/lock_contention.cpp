#include "diagnosis/causes/lock_contention.h"

#include <cmath>

#include "common/argmax.h"
#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "common/units.h"

namespace causeway {
namespace {

// The sibling that woke the reported victim thread for the longest (tid 0: none did).
struct TopWaker {
  uint32_t tid = 0;
  LockContention::Evidence::Waker w;
};

TopWaker top_waker(const ChainView& v, const LockContention::Evidence& e) {
  auto it = e.wakers.find(v.tid);
  if (it == e.wakers.end()) return {};
  const auto* top = argmax_by(it->second, [](const auto& x) { return x.second.ns; }, [](const auto& x) { return x.second.ns > 0; });
  return top ? TopWaker{top->first, top->second} : TopWaker{};
}

std::string holder(const ChainView& v, uint32_t tid) {
  return tid ? v.s.thread_name(tid) + " (tid " + std::to_string(tid) + ")" : "a sibling thread";
}

}  // namespace

Finding LockContention::explain(const ChainView& v, const Evidence& e) {
  const ChainAcc& a = v.a;
  Finding f;
  const TopWaker p = top_waker(v, e);
  const std::string by = holder(v, p.tid);
  // Shares of the reported thread's own blocked time and slow calls.
  int64_t blocked = 0, calls = 0;
  if (auto it = e.wakers.find(v.tid); it != e.wakers.end())
    for (const auto& [tid, w] : it->second) {
      blocked += w.ns;
      calls += w.hits;
    }
  double share = p.tid && blocked ? static_cast<double>(p.w.ns) / static_cast<double>(blocked) : 0;
  f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + " blocked (voluntary sleep) " + v.where +
              ", each time woken by sibling thread " + by + " of the same process — it holds a lock this call needs";
  if (p.tid)
    f.culprit = Culprit{.pid = a.pid, .tid = p.tid, .comm = v.s.thread_name(p.tid), .share_kind = ShareKind::wait,
                        .share = std::round(share * 1000) / 1000};
  f.evidence.push_back("asleep (S) for " + format_duration_ns(a.off_ns) + " " + v.where + ", " + pct(v.cause_share) +
                       " of the time lost");
  if (p.tid)
    f.evidence.push_back("woken by " + by + " in " + std::to_string(p.w.hits) + " of thread " + std::to_string(v.tid) + "'s " +
                         std::to_string(calls) + " slow calls (" + pct(share) + " of its blocked time)");
  return f;
}

std::string LockContention::fix(const ChainView& v, const Evidence& e) {
  return "Shorten what " + holder(v, top_waker(v, e).tid) + " does while holding the lock " + v.op +
         " needs, or move that work (e.g. the checkpoint copy) off the lock / to another process, so the "
         "training thread never waits for it.";
}

void LockContention::detect(ChunkContext& cx, const Slow& w, uint32_t sibling_tid, int64_t sibling_ns) {
  const Ev& e = *w.e;
  auto [c, ev] = chain_for<LockContention>(cx.s, e.pid, e.op, w.gap);
  note_call(cx.s, c, w, w.excess, sibling_ns);
  auto& waker = ev.wakers[e.tid][sibling_tid];
  waker.ns += sibling_ns;
  ++waker.hits;
  auto items = call_frame(cx.s, w);
  for (const OffCpuInterval& iv : cx.tl.overlapping(e.tid, w.from, w.to)) {
    if (iv.state != OffCpuState::sleeping) continue;
    items.push_back({iv.from_ns, "host", "thread " + std::to_string(e.tid) + " blocks (S, voluntary sleep)"});
    if (iv.woken)
      items.push_back({iv.wake_ns, "host", "woken by " + cx.s.thread_name(iv.waker_tid) + " (tid " +
                                               std::to_string(iv.waker_tid) + ", pid " + std::to_string(iv.waker_pid) +
                                               ") after " + format_duration_ns(iv.wake_ns - iv.from_ns)});
  }
  add_sample(c, w.excess, std::move(items));
}

}  // namespace causeway
