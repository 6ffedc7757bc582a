#include "diagnosis/causes/allocator.h"

#include <algorithm>
#include <cmath>

#include "common/argmax.h"
#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "common/units.h"

namespace causeway {

void Allocator::observe(State& st, const Ev& e, const ObserveContext& cx) {
  if (!is_device_alloc_op(e.op) || e.dur < cx.chunk.s.opt.expensive_alloc_ns) return;
  // Those no per-call cause took: ordinary calls (after start-up, when the allocator fills its
  // cache), and slow ones no host cause or cold start explains.
  if (!(cx.verdict == CallVerdict::unclaimed || (cx.verdict == CallVerdict::normal && !cx.startup))) return;
  auto& v = st.allocs[e.pid];
  if (v.size() < 1'000'000) v.push_back({e.ts, e.dur, e.op, e.tid, e.stack});
}

void Allocator::report(SessionReport& c, State& st) {
  CorrelatorState& s = c.s;
  for (auto& [pid, calls] : st.allocs) {
    if (calls.size() < 8) continue;
    std::sort(calls.begin(), calls.end(), [](const AllocCall& a, const AllocCall& b) { return a.ts < b.ts; });
    struct Burst {
      int64_t from, to, ns;
      int n;
    };
    std::vector<Burst> bursts;
    constexpr int64_t kGap = 100'000'000;
    for (size_t i = 0; i < calls.size();) {
      size_t j = i + 1;
      int64_t end = calls[i].ts + calls[i].dur, ns = calls[i].dur;
      while (j < calls.size() && calls[j].ts - end <= kGap) {
        end = std::max(end, calls[j].ts + calls[j].dur);
        ns += calls[j].dur;
        ++j;
      }
      if (j - i >= 4 && ns >= 5'000'000) bursts.push_back({calls[i].ts, end, ns, static_cast<int>(j - i)});
      i = j;
    }
    if (bursts.size() < 2) continue;
    int64_t lost = 0, n = 0;
    std::map<uint16_t, int64_t> by_op;
    std::map<uint64_t, int64_t> stacks;
    for (const auto& b : bursts) {
      lost += b.ns;
      n += b.n;
    }
    std::map<uint16_t, int64_t> burst_calls;  // op -> calls inside storms
    const std::string id = "s" + std::to_string(s.session_id) + "-" + std::string(name) + "-" + std::to_string(pid);
    for (auto& a : calls) {
      by_op[a.op] += a.dur;
      for (const auto& b : bursts)
        if (a.ts >= b.from && a.ts < b.to) {
          ++burst_calls[a.op];
          if (a.stack) ++stacks[a.stack];
          if (!a.claimed) {  // a live trace reports every poll: each call is claimed once
            s.claims.push_back({a.op, pid, a.tid, a.ts, a.dur, a.dur, false, std::string(name), id});
            a.claimed = true;
          }
          break;
        }
    }
    std::vector<int64_t> gaps;
    for (size_t i = 1; i < bursts.size(); ++i) gaps.push_back(bursts[i].from - bursts[i - 1].from);
    std::vector<int64_t> g2 = gaps;
    std::sort(g2.begin(), g2.end());
    int64_t period = g2[g2.size() / 2];
    double mean = 0, var = 0;
    for (auto g : gaps) mean += static_cast<double>(g);
    mean /= static_cast<double>(gaps.size());
    for (auto g : gaps) var += (static_cast<double>(g) - mean) * (static_cast<double>(g) - mean);
    double cv = gaps.size() > 1 ? std::sqrt(var / static_cast<double>(gaps.size())) / mean : 1.0;
    bool periodic = bursts.size() >= 3 && cv < 0.3;
    Doc d;
    d.cause = Allocator::id;
    d.id = id;
    d.pid = pid;
    const uint16_t top = key_of_largest(by_op);
    d.op_id = top;
    d.op = op_name(top);
    d.calls = burst_calls[top];
    d.from_ns = bursts.front().from;
    d.to_ns = bursts.back().to;
    d.lost_ns = lost;
    d.impact = static_cast<double>(lost) / static_cast<double>(c.window_ns);
    d.severity = severity_for(d.impact);
    d.stack = top_stack(stacks);
    std::string ops;
    for (auto& [op, ns] : by_op) ops += (ops.empty() ? "" : ", ") + op_name(op) + " " + format_duration_ns(ns);
    d.summary = s.comm_of(pid) + " (pid " + std::to_string(pid) + "): " + std::to_string(bursts.size()) +
                " allocation storms" + (periodic ? " every " + format_duration_ns(period) : "") + " cost " +
                format_duration_ns(lost) + " in " + std::to_string(n) +
                " device alloc/free calls that went to the driver: the caching allocator released its cache and re-grew it";
    d.evidence.push_back(std::to_string(bursts.size()) + " bursts of >= 4 driver-level alloc/free calls (each >= " +
                         format_duration_ns(s.opt.expensive_alloc_ns) + "; cached allocations take µs)" +
                         (periodic ? ", one every " + format_duration_ns(period) + " (spread " + pct(cv) + ")" : ", irregular"));
    d.evidence.push_back("time by op: " + ops);
    for (size_t i = 0; i < bursts.size() && i < 4; ++i) {
      d.timeline.push_back({bursts[i].from, "cuda", "allocation storm: " + std::to_string(bursts[i].n) + " alloc/free calls, " +
                                                        format_duration_ns(bursts[i].ns)});
    }
    d.evidence.push_back(format_duration_ns(lost) + " lost, " + pct(d.impact) + " of the " + format_duration_ns(c.window_ns) + " analyzed");
    d.recommendation = "Do not call torch.cuda.empty_cache() (or free and re-allocate large buffers) inside the training loop; "
                       "if fragmentation is the reason, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.";
    op_stats(c, d);
    emit(c, std::move(d));
  }
}

}  // namespace causeway
