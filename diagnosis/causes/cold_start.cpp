#include "diagnosis/causes/cold_start.h"

#include <algorithm>

#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "common/units.h"

namespace causeway {

Finding ColdStart::explain(const ChainView& v, const Evidence& e) {
  const ChainAcc& a = v.a;
  Finding f;
  std::vector<std::pair<int64_t, uint16_t>> by;  // excess, op: most costly first
  for (auto& [op, x] : e.by_op) by.push_back({x.excess_ns, op});
  std::sort(by.rbegin(), by.rend());
  if (!by.empty()) f.op = by.front().second;  // its calls span several ops: reported under the costliest
  f.summary = who(v.s, a.pid) + ": start-up cost " + v.lost + " in " + std::to_string(a.calls) +
              " slow first calls (context creation, module loading) within " + format_duration_ns(v.s.opt.startup_ns) +
              " of its first CUDA call; the calls after are at their steady pace";
  for (auto& [ns, op] : by)
    f.evidence.push_back(std::to_string(e.by_op.at(op).calls) + " slow " + op_name(op) + " at start-up, " +
                         format_duration_ns(ns) + " above the steady-state p50");
  // A one-time cost: never HIGH, and LOW under 2% of the window.
  f.max_severity = static_cast<double>(a.lost_ns) / static_cast<double>(v.window_ns) < 0.02 ? Severity::low : Severity::medium;
  f.report_below_min_impact = true;
  f.calls_line = false;  // its calls span several ops; the lines above list them by op
  return f;
}

std::string ColdStart::fix(const ChainView&, const Evidence&) {
  return "One-time start-up cost: warm up (a few untimed steps) before measuring, ship cubins for this GPU so nothing is "
         "JIT-compiled, and set CUDA_MODULE_LOADING=LAZY to load kernels on first use.";
}

void ColdStart::detect(ChunkContext& cx, const Slow& w) {
  const Ev& e = *w.e;
  auto [c, ev] = chain_for<ColdStart>(cx.s, e.pid, 0, false);
  note_call(cx.s, c, w, w.excess, w.excess);
  ColdStart::Evidence::PerOp& per = ev.by_op[e.op];
  ++per.calls;
  per.excess_ns += w.excess;
  auto items = std::vector<TimelineItem>{{e.ts, op_layer(e.op), op_name(e.op) + " took " + format_duration_ns(e.dur) +
                                                                     (w.median > 0 ? " (p50 later " + format_duration_ns(w.median) + ")"
                                                                                   : " (first call)")}};
  add_sample(c, w.excess, std::move(items));
}

}  // namespace causeway
