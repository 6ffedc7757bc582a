#include "analysis/causes/session_causes.h"

#include <algorithm>
#include <cmath>

#include "analysis/chain_view.h"
#include "common/units.h"

namespace causeway {

void TransferBound::report(SessionReport& c) {
  CorrelatorState& s = c.s;
  for (auto& [key, t] : s.transfers) {
    auto sp = s.activity.find(t.tid);
    if (sp == s.activity.end() || t.copies < 5) continue;
    int64_t wall = std::max<int64_t>(1, sp->second.last_end_ns - sp->second.first_ns);
    double share = static_cast<double>(t.copy_ns) / static_cast<double>(wall);
    if (share < 0.25) continue;
    Doc d;
    d.cause = id;
    d.id = "s" + std::to_string(s.session_id) + "-" + std::string(name) + "-" + std::to_string(t.pid) + "-" + op_name(t.op) + "-t" +
           std::to_string(t.tid);
    d.pid = t.pid;
    d.tid = t.tid;
    d.op_id = t.op;
    d.op = op_name(t.op);
    d.calls = t.copies;
    d.from_ns = sp->second.first_ns;
    d.to_ns = sp->second.last_end_ns;
    d.lost_ns = t.copy_ns;
    d.impact = share;
    d.severity = share >= 0.75 ? Severity::high : Severity::medium;
    d.stack = top_stack(t.stacks);
    double gbps = t.copy_ns ? static_cast<double>(t.bytes) / static_cast<double>(t.copy_ns) : 0;
    int64_t kind = 0, kn = -1;
    for (auto& [k, n] : t.kinds)
      if (n > kn) {
        kn = n;
        kind = k;
      }
    const char* kinds[] = {"HtoH", "HtoD", "DtoH", "DtoD", "default"};
    std::string kname = kind >= 0 && kind <= 4 ? kinds[kind] : "kind " + std::to_string(kind);
    d.summary = victim_text(s, d) + ": synchronous " + kname + " copies take " + pct(share) + " of the thread's time (" +
                std::to_string(t.copies) + " copies, " + format_bytes(t.bytes / t.copies) + " each at " + num(gbps, 1) +
                " GB/s); the thread and the GPU queue behind it wait for every copy";
    d.evidence.push_back(std::to_string(t.copies) + " " + d.op + " (" + kname + "), " + format_bytes(t.bytes) + " in " +
                         format_duration_ns(t.copy_ns) + " = " + num(gbps, 1) + " GB/s" +
                         (gbps < 12 ? ": below what pinned host memory reaches over PCIe (typically 20+ GB/s), which suggests "
                                      "pageable memory"
                                    : ""));
    d.evidence.push_back("thread " + std::to_string(t.tid) + " active " + format_duration_ns(wall) + "; " +
                         format_duration_ns(t.copy_ns) + " of it inside synchronous copies (time off-CPU for host causes excluded)");
    d.recommendation = "Copy from pinned memory with cudaMemcpyAsync on a side stream so transfers overlap compute "
                       "(PyTorch: DataLoader(pin_memory=True) and .to(device, non_blocking=True)); copy less per step if possible.";
    op_stats(c, d);
    d.slow_share = 1.0;
    emit(c, std::move(d));
  }
}

}  // namespace causeway
