#include "diagnosis/causes/memory_pressure.h"

#include <cmath>

#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "common/argmax.h"
#include "common/units.h"
#include "tracedb/op_args.h"

namespace causeway {
namespace {

// The other process that allocated the most pages during the stalls.
// (The most off-CPU time picks first; one that allocated strictly more pages takes its place.)
const PartyAcc* top_allocator(const ChainAcc& a) {
  const PartyAcc* p = top_party(a.culprits, a.pid, false);
  const auto* most = argmax_by(a.culprits, [](const auto& kv) { return kv.second.amount; },
                               [&](const auto& kv) { return kv.second.pid != a.pid; });
  return most && (!p || most->second.amount > p->amount) ? &most->second : p;
}

}  // namespace

Finding MemoryPressure::explain(const ChainView& v, const Evidence& e) {
  const ChainAcc& a = v.a;
  Finding f;
  const PartyAcc* p = top_allocator(a);
  double share = p && e.pages_total > 0 ? static_cast<double>(p->amount) / static_cast<double>(e.pages_total) : 0;
  std::string by = p ? who(v.s, p->pid) : "";
  auto kill = p ? e.oom_kill_ns.find(p->pid) : e.oom_kill_ns.end();
  const bool killed = kill != e.oom_kill_ns.end();
  f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + " stalled in D state (memory reclaim) " +
              v.where + (p ? "; " + by + " allocated " + pct(share) + " of the pages during those calls" : "") +
              (killed ? " until the OOM killer ended it" : "");
  if (p)
    f.culprit = Culprit{.pid = p->pid, .comm = v.s.comm_of(p->pid), .share_kind = ShareKind::page,
                        .share = std::round(share * 1000) / 1000, .oom_killed = killed};
  f.evidence.push_back("uninterruptible (D) for " + format_duration_ns(a.off_ns) + " " + v.where + ", " + pct(v.cause_share) +
                       " of the time lost; no block I/O overlapped the stalls");
  if (p)
    f.evidence.push_back(by + " allocated " + with_commas(p->amount) + " pages (" + format_bytes(p->amount * 4096) +
                         " at 4 KiB) in the 100 ms samples overlapping the slow calls");
  if (killed) f.evidence.push_back("OOM killer ended " + by + " at " + format_utc(kill->second));
  return f;
}

std::string MemoryPressure::fix(const ChainView& v, const Evidence&) {
  const PartyAcc* p = top_allocator(v.a);
  return "Bound " + (p ? v.s.comm_of(p->pid) : std::string("the memory hog")) +
         "'s memory (cgroup memory.max / container limit) or move it off this host; allocate pinned buffers once at "
         "start-up instead of re-pinning while memory is tight.";
}

bool MemoryPressure::detect(ChunkContext& cx, const Slow& w) {
  const Ev& e = *w.e;
  // Memory: page-allocation bursts overlapping the call, or an OOM kill near it.
  std::map<uint32_t, int64_t> pages;
  int64_t burst_pages = 0;
  for_overlapping(cx.hx.page_allocs, cx.hx.max_alloc_dur, w.from, w.to, [&](const Ev& p) {
    const int64_t n = page_alloc_args(p).pages;
    double per100ms = static_cast<double>(n) * 1e8 / static_cast<double>(std::max<int64_t>(p.dur, 1));
    pages[p.pid] += n;
    if (per100ms >= kBurstPagesPer100ms) burst_pages += n;
  });
  std::vector<const Ev*> ooms;
  for (const Ev* o : cx.hx.ooms)
    if (o->ts >= w.from - 10'000'000'000 && o->ts <= w.to + 10'000'000'000) ooms.push_back(o);
  if (burst_pages > 0 || !ooms.empty()) {
    auto [c, ev] = chain_for<MemoryPressure>(cx.s, e.pid, e.op, w.gap);
    note_call(cx.s, c, w, w.excess, w.off.uninterruptible_ns);
    bool other = false;
    for (auto& [pid, n] : pages)
      if (pid != e.pid) {
        add_party(c.culprits, pid, 0, 0, n);
        other = true;
      }
    if (!other) add_party(c.culprits, e.pid, 0, 0, pages[e.pid]);
    for (auto& [pid, n] : pages) ev.pages_total += n;
    auto items = call_frame(cx.s, w);
    for (const OffCpuInterval& iv : cx.tl.overlapping(e.tid, w.from, w.to))
      if (iv.state == OffCpuState::uninterruptible)
        items.push_back({iv.from_ns, "host", "thread " + std::to_string(e.tid) + " stalls in D state (reclaim) for " +
                                                 format_duration_ns(iv.runnable_from() - iv.from_ns)});
    const auto* top = argmax_by(pages, [](const auto& kv) { return kv.second; }, [&](const auto& kv) { return kv.first != e.pid; });
    if (top && top->second > 0)
      items.push_back({w.from, "mem", cx.s.comm_of(top->first) + " (pid " + std::to_string(top->first) + ") allocates " +
                                          std::to_string(top->second) + " pages during the call"});
    for (const Ev* o : ooms) {
      const int64_t victim = oom_kill_args(*o).victim_pid;
      ev.oom_kill_ns[static_cast<uint32_t>(victim)] = o->ts;
      items.push_back({o->ts, "mem", "OOM killer ends " + cx.s.comm_of(static_cast<uint32_t>(victim)) + " (pid " +
                                         std::to_string(victim) + ")"});
    }
    add_sample(c, w.excess, std::move(items));
    return true;
  }
  return false;
}

}  // namespace causeway
