#include <algorithm>

#include "diagnosis/causes/graph_recapture.h"
#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "bpf/events.h"
#include "common/units.h"
#include "tracedb/op_args.h"

namespace causeway {
namespace {

// Graphs rebuilt this often in the steady state, each replayed this few times on average, are
// not being reused: a healthy capture-once loop replays each exec thousands of times, and
// torch.compile's warm-up (one capture per shape bucket) is over once each bucket replays.
constexpr int64_t kMinRebuilds = 3;
constexpr double kMaxLaunchesPerExec = 4.0;

}  // namespace

// Captures and instantiations after graphs are in use, and how often each exec built then is
// replayed. Roles come from the op table's decode class.
void GraphRecapture::observe(State& st, const Ev& e, const ObserveContext&) {
  const OpInfo* o = find_op(e.op);
  if (!o || (o->family != OpFamily::graph && o->family != OpFamily::graph_build)) return;
  GraphAcc& g = st.graphs[e.pid];
  g.last_ns = std::max(g.last_ns, e.end());
  const GraphArgs args = graph_args(e);
  if (o->family == OpFamily::graph) {
    ++g.launches;
    g.first_launch_ns = std::min(g.first_launch_ns, e.ts);
    if (auto it = g.steady_exec_launches.find(args.exec); it != g.steady_exec_launches.end()) ++it->second;
    return;
  }
  const bool steady = e.ts > g.first_launch_ns;
  switch (o->probe.dclass) {
    case CW_DC_CAPTURE_BEGIN:
      g.open_captures[args.stream] = e.ts;
      g.streams.insert(args.stream);
      break;
    case CW_DC_CAPTURE_END:
      if (auto it = g.open_captures.find(args.stream); it != g.open_captures.end()) {
        if (it->second > g.first_launch_ns) {
          ++g.steady_captures;
          g.steady_capture_ns += e.end() - it->second;
        }
        g.open_captures.erase(it);
      }
      break;
    case CW_DC_GRAPH_INSTANTIATE:
      if (!steady) {
        ++g.warmup_instantiations;
        break;
      }
      ++g.steady_instantiations;
      g.steady_instantiate_ns += e.dur;
      g.instantiate_op = e.op;
      g.tid = e.tid;
      g.first_steady_ns = std::min(g.first_steady_ns, e.ts);
      if (e.stack) ++g.instantiate_stacks[e.stack];
      // A failed instantiation writes no exec (0).
      if (args.exec != 0) {
        if (g.steady_exec_launches.count(args.exec)) ++g.steady_execs_built;
        else if (g.steady_exec_launches.size() < GraphAcc::kMaxTracked) {
          g.steady_exec_launches.emplace(args.exec, 0);
          ++g.steady_execs_built;
        }
      }
      break;
    default: break;
  }
}

void GraphRecapture::report(SessionReport& c, const State& st) {
  const CorrelatorState& s = c.s;
  for (const auto& [pid, g] : st.graphs) {
    if (g.steady_instantiations < kMinRebuilds) continue;
    const int64_t execs = std::max<int64_t>(1, g.steady_execs_built);
    int64_t replays = 0;
    for (const auto& [exec, n] : g.steady_exec_launches) replays += n;
    const double per_exec = static_cast<double>(replays) / static_cast<double>(execs);
    if (per_exec > kMaxLaunchesPerExec) continue;
    Doc d;
    d.cause = id;
    d.id = "s" + std::to_string(s.session_id) + "-" + std::string(name) + "-" + std::to_string(pid);
    d.pid = pid;
    d.tid = g.tid;
    d.op_id = g.instantiate_op;
    d.op = op_name(g.instantiate_op);
    d.calls = g.steady_instantiations;
    d.from_ns = g.first_steady_ns;
    d.to_ns = g.last_ns;
    d.lost_ns = g.steady_capture_ns + g.steady_instantiate_ns;
    d.impact = static_cast<double>(d.lost_ns) / static_cast<double>(c.window_ns);
    d.severity = severity_for(d.impact);
    if (d.impact < 0.001) continue;
    d.stack = top_stack(g.instantiate_stacks);
    d.summary = s.comm_of(pid) + " (pid " + std::to_string(pid) + ") re-captured and re-instantiated its CUDA graph " +
                with_commas(g.steady_instantiations) + " times after graphs were already in use, replaying each only " +
                num(per_exec, 1) + " times on average: capture and instantiation took " + format_duration_ns(d.lost_ns) +
                " (" + pct(d.impact) + " of the window) that graph replay was meant to save";
    d.evidence.push_back(with_commas(g.steady_captures) + " stream captures (" + format_duration_ns(g.steady_capture_ns) +
                         " from begin to end capture, the kernels recorded included) and " +
                         with_commas(g.steady_instantiations) + " instantiations (" +
                         format_duration_ns(g.steady_instantiate_ns) + ") after the first graph launch");
    d.evidence.push_back(with_commas(replays) + " launches of the " + with_commas(execs) +
                         " graph execs built in the steady state (" + num(per_exec, 1) + " each); " +
                         with_commas(g.launches) + " graph launches in all");
    if (g.warmup_instantiations > 0)
      d.evidence.push_back(with_commas(g.warmup_instantiations) + (g.warmup_instantiations == 1 ? " instantiation" : " instantiations") +
                           " before the first graph launch (warm-up: expected, not counted)");
    if (g.streams.size() > 0)
      d.evidence.push_back("captured on " + std::to_string(g.streams.size()) + " stream" + (g.streams.size() == 1 ? "" : "s"));
    d.recommendation =
        "Keep the captured shapes static so each graph is captured once and replayed: pad or bucket inputs to a few fixed "
        "sizes (torch.compile: avoid recompiles with dynamic=False plus padding, or mark_dynamic; CUDA Graph Trees need the "
        "same input tensors); for vLLM, make the CUDA-graph capture sizes cover the batch sizes served; where the topology "
        "is fixed but parameters change, update the exec (cudaGraphExecUpdate) instead of re-instantiating it.";
    op_stats(c, d, false);
    d.slow_share = 1.0;
    emit(c, std::move(d));
  }
}

}  // namespace causeway
