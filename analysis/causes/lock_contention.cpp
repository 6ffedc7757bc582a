#include "analysis/causes/lock_contention.h"

#include <cmath>

#include "analysis/chain_view.h"
#include "analysis/chunk_context.h"
#include "common/units.h"

namespace causeway {
namespace {

std::string holder(const ChainView& v, const PartyAcc* p) {
  return p ? v.s.thread_name(p->tid) + " (tid " + std::to_string(p->tid) + ")" : "a sibling thread";
}

}  // namespace

Finding LockContention::explain(const ChainView& v, const Evidence&) {
  const ChainAcc& a = v.a;
  Finding f;
  const PartyAcc* p = top_party(a.culprits, UINT32_MAX, false);
  const std::string by = holder(v, p);
  double share = p && a.off_ns ? static_cast<double>(p->ns) / static_cast<double>(a.off_ns) : 0;
  f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + " blocked (voluntary sleep) " + v.where +
              ", each time woken by sibling thread " + by + " of the same process — it holds a lock this call needs";
  if (p)
    f.culprit = {{"pid", p->pid}, {"tid", p->tid}, {"comm", v.s.thread_name(p->tid)}, {"wait_share", std::round(share * 1000) / 1000}};
  f.evidence.push_back("asleep (S) for " + format_duration_ns(a.off_ns) + " " + v.where + ", " + pct(v.cause_share) +
                       " of the time lost");
  if (p)
    f.evidence.push_back("woken by " + by + " in " + std::to_string(p->hits) + " of " + std::to_string(a.calls) +
                         " slow calls (" + pct(share) + " of the blocked time)");
  return f;
}

std::string LockContention::fix(const ChainView& v, const Evidence&) {
  return "Shorten what " + holder(v, top_party(v.a.culprits, UINT32_MAX, false)) + " does while holding the lock " + v.op +
         " needs, or move that work (e.g. the checkpoint copy) off the lock / to another process, so the "
         "training thread never waits for it.";
}

void LockContention::detect(ChunkContext& cx, const Slow& w, uint32_t sibling_tid, int64_t sibling_ns) {
  const Ev& e = *w.e;
  ChainAcc& c = chain_for<LockContention>(cx.s, e.pid, e.op, w.gap).first;
  note_call(cx.s, c, w, w.excess, sibling_ns);
  add_party(c.culprits, e.pid, sibling_tid, sibling_ns);
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
