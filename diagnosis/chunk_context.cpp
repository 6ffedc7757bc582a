#include "diagnosis/chunk_context.h"

#include "common/units.h"

namespace causeway {

int64_t count_in(const std::vector<int64_t>& ts, int64_t a, int64_t b) {
  return std::lower_bound(ts.begin(), ts.end(), b) - std::lower_bound(ts.begin(), ts.end(), a);
}

void add_party(std::map<uint64_t, PartyAcc>& m, uint32_t pid, uint32_t tid, int64_t ns, int64_t amount) {
  PartyAcc& p = m[(uint64_t{pid} << 32) | tid];
  p.pid = pid;
  p.tid = tid;
  p.ns += ns;
  p.amount += amount;
  ++p.hits;
}

void add_sample(ChainAcc& c, int64_t excess, std::vector<TimelineItem> items) {
  constexpr size_t kKeep = 3;
  if (c.worst.size() >= kKeep && excess <= c.worst.back().excess) return;
  c.worst.push_back({excess, std::move(items)});
  std::sort(c.worst.begin(), c.worst.end(), [](const auto& a, const auto& b) { return a.excess > b.excess; });
  if (c.worst.size() > kKeep) c.worst.pop_back();
}

void note_call(CorrelatorState& s, ChainAcc& c, const Slow& w, int64_t lost, int64_t cause_ns) {
  ++s.counters.slow_calls;
  ++c.calls;
  c.lost_ns += lost;
  c.off_ns += cause_ns;
  c.first_ns = std::min(c.first_ns, w.from);
  c.last_ns = std::max(c.last_ns, w.to);
  if (c.slow_durs.size() < 200000) c.slow_durs.push_back(w.to - w.from);
  if (w.e->stack) ++c.stacks[w.e->stack];
  ++c.tids[w.e->tid];
  claim_call(s, *w.e, w.gap, lost, c.cause_name, c.id);
}

void claim_call(CorrelatorState& s, const Ev& e, bool gap, int64_t lost, std::string_view cause, const std::string& chain_id) {
  s.claims.push_back({e.op, e.pid, e.tid, e.ts, e.dur, lost, gap, std::string(cause), chain_id});
}

std::vector<TimelineItem> call_frame(const CorrelatorState& s, const Slow& w) {
  std::vector<TimelineItem> items;
  const Ev& e = *w.e;
  std::string name = op_name(e.op);
  if (w.gap) {
    items.push_back({w.from, "host", "thread " + std::to_string(e.tid) + " returns from its previous call"});
    items.push_back({w.to, op_layer(e.op),
                     name + " entered " + format_duration_ns(w.to - w.from) + " later (the GPU queue got no new work meanwhile)"});
  } else {
    items.push_back({e.ts, op_layer(e.op),
                     name + " entered on thread " + std::to_string(e.tid) + (e.cpu >= 0 ? " (CPU " + std::to_string(e.cpu) + ")" : "")});
    items.push_back({e.end(), op_layer(e.op),
                     name + " returned after " + format_duration_ns(e.dur) +
                         (w.median > 0 ? " (p50 " + format_duration_ns(w.median) + ")" : "")});
  }
  return items;
}

void runnable_culprits(const ThreadTimelines& tl, uint32_t tid, int64_t a, int64_t b, std::vector<RunShare>& out,
                       std::map<int32_t, int64_t>* cpus, std::vector<std::pair<const OffCpuInterval*, int64_t>>* ivs) {
  std::vector<RunShare> tmp;
  for (const OffCpuInterval& iv : tl.overlapping(tid, a, b)) {
    int64_t lo = std::max(iv.from_ns, a), hi = std::min(iv.to_ns, b);
    int64_t rq = std::clamp(iv.runnable_from(), lo, hi);
    if (hi <= rq) continue;
    int32_t cpu = iv.state == OffCpuState::runnable ? iv.cpu : (iv.in_cpu >= 0 ? iv.in_cpu : iv.cpu);
    if (cpus) (*cpus)[cpu] += hi - rq;
    if (ivs) ivs->push_back({&iv, hi - rq});
    // A lost switch-out: the CPU's records say only who handed the CPU back.
    if (iv.inferred) tmp.assign(1, RunShare{iv.next_pid, iv.next_tid, hi - rq});
    else tl.who_ran(cpu, rq, hi, tmp);
    for (const RunShare& r : tmp) {
      if (r.tid == tid) continue;
      bool merged = false;
      for (auto& o : out)
        if (o.pid == r.pid) {
          o.ns += r.ns;
          merged = true;
        }
      if (!merged) out.push_back({r.pid, 0, r.ns});
    }
  }
  std::sort(out.begin(), out.end(), [](const RunShare& x, const RunShare& y) { return x.ns > y.ns; });
}

void other_submitters(const HostIndex& hx, uint32_t self, int64_t a, int64_t b, std::vector<std::pair<uint32_t, int64_t>>& out) {
  out.clear();
  for (const auto& [pid, ts] : hx.submits) {
    if (pid == self) continue;
    int64_t n = count_in(ts, a, b);
    if (n > 0) out.push_back({pid, n});
  }
}

}  // namespace causeway
