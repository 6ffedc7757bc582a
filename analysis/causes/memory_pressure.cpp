#include "analysis/causes/memory_pressure.h"

#include <cmath>

#include "analysis/chain_view.h"
#include "common/units.h"

namespace causeway {
namespace {

// The other process that allocated the most pages during the stalls.
const PartyAcc* top_allocator(const ChainAcc& a) {
  const PartyAcc* p = top_party(a.culprits, a.pid, false);
  for (auto& [k, q] : a.culprits)
    if (q.pid != a.pid && (!p || q.amount > p->amount)) p = &q;
  return p;
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
    f.culprit = {{"pid", p->pid}, {"comm", v.s.comm_of(p->pid)}, {"page_share", std::round(share * 1000) / 1000},
                 {"oom_killed", killed}};
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

}  // namespace causeway
