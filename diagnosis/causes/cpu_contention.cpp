#include "diagnosis/causes/cpu_contention.h"

#include <algorithm>
#include <cmath>

#include "common/argmax.h"
#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "common/units.h"

namespace causeway {
namespace {

// Below this the tracer's share of a victim's CPU is scheduling noise, not worth a line.
constexpr int64_t kTracerOverheadReportNs = 1'000'000;

struct Cpus {
  std::string list;
  int32_t top = -1;
};

Cpus cpus_of(const ChainAcc& a) {
  Cpus c;
  for (auto& [cpu, ns] : a.cpus) c.list += (c.list.empty() ? "" : ", ") + std::to_string(cpu);
  c.top = key_of_largest(a.cpus, -1);
  return c;
}

}  // namespace

Finding CpuContention::explain(const ChainView& v, const Evidence& e) {
  const ChainAcc& a = v.a;
  Finding f;
  int64_t total = 0;
  for (auto& [k, p] : a.culprits) total += p.ns;
  const PartyAcc* p = top_party(a.culprits, a.pid, false);
  const Cpus cpus = cpus_of(a);
  std::string by = p ? who(v.s, p->pid) : "another task";
  double share = p && total > 0 ? static_cast<double>(p->ns) / static_cast<double>(total) : 0;
  f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost +
              "; the thread was runnable but off-CPU for " + format_duration_ns(a.off_ns) + " " + v.where + ", preempted by " +
              by + " on CPU " + std::to_string(cpus.top);
  if (p)
    f.culprit = Culprit{.pid = p->pid, .comm = v.s.comm_of(p->pid), .share_kind = ShareKind::off_cpu,
                        .share = std::round(share * 1000) / 1000, .cpu = cpus.top};
  f.evidence.push_back("runnable but not running for " + format_duration_ns(a.off_ns) + " " + v.where + " (" +
                       std::to_string(e.preemptions) + " preemptions / wakeup waits), on CPU " + cpus.list);
  if (e.inferred_calls > 0)
    f.evidence.push_back(format_duration_ns(e.inferred_ns) + " of it in " + std::to_string(e.inferred_calls) +
                         " calls read from the CPU's switch records: the thread's own were lost (ring full), other tasks "
                         "ran on its CPU while it seemed on-CPU");
  if (e.tracer_ns >= kTracerOverheadReportNs)
    f.evidence.push_back("tracer overhead: " + format_duration_ns(e.tracer_ns) +
                         " of it ran the tracer's own threads (not counted as a culprit)");
  std::vector<const PartyAcc*> ps;
  for (auto& [k, q] : a.culprits) ps.push_back(&q);
  std::sort(ps.begin(), ps.end(), [](auto x, auto y) { return x->ns > y->ns; });
  for (size_t i = 0; i < ps.size() && i < 3; ++i)
    f.evidence.push_back(who(v.s, ps[i]->pid) + " ran there for " + format_duration_ns(ps[i]->ns) + " (" +
                         pct(total ? static_cast<double>(ps[i]->ns) / static_cast<double>(total) : 0) +
                         " of the stolen time) during " + std::to_string(ps[i]->hits) + " of the slow calls");
  return f;
}

std::string CpuContention::fix(const ChainView& v, const Evidence&) {
  const PartyAcc* p = top_party(v.a.culprits, v.a.pid, false);
  const std::string cpus = cpus_of(v.a).list;
  return "Keep " + (p ? v.s.comm_of(p->pid) : std::string("other work")) + " off CPU " + cpus + " while the job runs: pin " +
         v.s.comm_of(v.a.pid) + " to dedicated cores (taskset -c / a cpuset cgroup) and move " +
         (p ? v.s.comm_of(p->pid) : std::string("the other task")) +
         " elsewhere, or run it at nice 19 / SCHED_IDLE so it cannot preempt the training thread.";
}

void CpuContention::detect(ChunkContext& cx, const Slow& w) {
  const Ev& e = *w.e;
  std::vector<RunShare> who;
  std::vector<std::pair<const OffCpuInterval*, int64_t>> ivs;
  auto [c, ev] = chain_for<CpuContention>(cx.s, e.pid, e.op, w.gap);
  runnable_culprits(cx.tl, e.tid, w.from, w.to, who, &c.cpus, &ivs);
  note_call(cx.s, c, w, w.excess, w.off.runnable_ns);
  // The tracer shares the CPUs it traces: its time is overhead to report, never a culprit.
  for (const RunShare& r : who)
    if (cx.s.tracer_pid && r.pid == *cx.s.tracer_pid) ev.tracer_ns += r.ns;
    else add_party(c.culprits, r.pid, 0, r.ns);
  ev.preemptions += static_cast<int64_t>(ivs.size());
  int64_t inferred = 0;
  for (auto& [iv, ns] : ivs)
    if (iv->inferred) inferred += ns;
  if (inferred > 0) {
    ev.inferred_ns += inferred;
    ++ev.inferred_calls;
  }
  auto items = call_frame(cx.s, w);
  for (auto& [iv, ns] : ivs) {
    bool pre = iv->state == OffCpuState::runnable;
    int32_t cpu = pre ? iv->cpu : (iv->in_cpu >= 0 ? iv->in_cpu : iv->cpu);
    std::vector<RunShare> on;
    if (iv->inferred) on.assign(1, RunShare{iv->next_pid, iv->next_tid, ns});
    else cx.tl.who_ran(cpu, pre ? iv->from_ns : iv->runnable_from(), iv->to_ns, on);
    std::string ran;
    for (const auto& r : on)
      if (r.tid != e.tid) ran += (ran.empty() ? "" : ", ") + cx.s.comm_of(r.pid) + " (pid " + std::to_string(r.pid) + ")";
    items.push_back({pre ? iv->from_ns : iv->runnable_from(), "host",
                     pre ? "thread " + std::to_string(e.tid) + " preempted while runnable on CPU " + std::to_string(cpu) +
                               (ran.empty() ? "" : "; " + ran + " runs")
                         : "thread " + std::to_string(e.tid) + " woken, waits for CPU " + std::to_string(cpu) +
                               (ran.empty() ? "" : " held by " + ran)});
    items.push_back({iv->to_ns, "host", "thread " + std::to_string(e.tid) + " back on CPU " + std::to_string(cpu) +
                                            " after " + format_duration_ns(ns) + " runnable"});
  }
  add_sample(c, w.excess, std::move(items));
}

}  // namespace causeway
