#include "diagnosis/causes/transfer_bound.h"

#include <algorithm>
#include <cmath>

#include "common/argmax.h"
#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "common/units.h"
#include "tracedb/op_args.h"

namespace causeway {

void TransferBound::observe(State& st, const Ev& e, const ObserveContext& cx) {
  if (!is_sync_copy_op(e.op)) return;
  TransferAcc& t = st.transfers[(uint64_t{e.tid} << 16) | e.op];
  t.pid = e.pid;
  t.tid = e.tid;
  t.op = e.op;
  ++t.copies;
  // The part of the copy spent off-CPU for a host reason is that cause's, not the transfer's.
  OffCpuSummary off = cx.chunk.tl.off_cpu_in(e.tid, e.ts, e.end());
  t.copy_ns += std::max<int64_t>(0, e.dur - off.runnable_ns - off.uninterruptible_ns);
  const CopyArgs copy = copy_args(e);
  t.bytes += copy.bytes;
  ++t.kinds[copy.kind];
  if (e.stack) ++t.stacks[e.stack];
}

void TransferBound::report(SessionReport& c, const State& st) {
  CorrelatorState& s = c.s;
  for (auto& [key, t] : st.transfers) {
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
    const int64_t kind = key_of_largest(t.kinds);
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
