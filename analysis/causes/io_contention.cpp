#include "analysis/causes/io_contention.h"

#include <cmath>

#include "analysis/chain_view.h"
#include "common/units.h"

namespace causeway {
namespace {

// The other process with I/O in flight during at least 30% of the waits, else null (own I/O).
const PartyAcc* other_io(const ChainAcc& a) {
  const PartyAcc* p = top_party(a.culprits, a.pid, true);
  return p && p->hits * 10 >= a.calls * 3 ? p : nullptr;
}

}  // namespace

Finding IoContention::explain(const ChainView& v, const Evidence& e) {
  const ChainAcc& a = v.a;
  Finding f;
  const PartyAcc* other = other_io(a);
  const PartyAcc* p = other ? other : top_party(a.culprits, UINT32_MAX, true);
  double share = p ? static_cast<double>(p->hits) / static_cast<double>(a.calls) : 0;
  if (other)
    f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + " waiting in D state (disk I/O) " +
                v.where + "; " + who(v.s, p->pid) + " had block I/O in flight on the same disk during " + pct(share) +
                " of the waits";
  else
    f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + " waiting in D state " + v.where +
                " for the process's own disk I/O (writes/fsync or page faults)";
  if (p)
    f.culprit = {{"pid", p->pid}, {"comm", v.s.comm_of(p->pid)}, {"overlap_share", std::round(share * 1000) / 1000},
                 {"own_io", other == nullptr}};
  f.evidence.push_back("uninterruptible (D) for " + format_duration_ns(a.off_ns) + " " + v.where + ", " + pct(v.cause_share) +
                       " of the time lost");
  f.evidence.push_back("block requests overlapping the waits: " + std::to_string(e.own_requests) +
                       " on the process's behalf (" + std::to_string(e.kworker_requests) + " of them issued by kernel workers, " +
                       format_bytes(e.own_bytes) + "), " + std::to_string(e.other_requests) + " from other processes");
  if (other)
    for (auto& [k, q] : a.culprits)
      if (q.pid != a.pid && q.pid != other->pid && q.hits * 10 >= a.calls)
        f.evidence.push_back(who(v.s, q.pid) + " also had I/O in flight during " + std::to_string(q.hits) + " waits");
  return f;
}

std::string IoContention::fix(const ChainView& v, const Evidence&) {
  if (const PartyAcc* p = other_io(v.a))
    return "Keep " + v.s.comm_of(p->pid) +
           " off the disk the job reads while it trains (ionice -c3, reschedule it, or exclude the dataset path), or stage "
           "the dataset on local NVMe / in RAM so page faults do not queue behind it.";
  return "Move the writes and fsync off the thread that drives the GPU (a background writer thread or async I/O), "
         "or batch them (fewer fsync calls), so the GPU queue keeps getting work.";
}

}  // namespace causeway
