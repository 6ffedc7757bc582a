#include "diagnosis/causes/nccl_straggler.h"

#include <algorithm>
#include <cmath>

#include "common/argmax.h"
#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "common/units.h"

namespace causeway {
namespace {

// What the straggler's own thread did before its late entries (culprit.own_cause).
enum class StragglerOwnCause : uint8_t { cpu_contention, io_wait, sleeping, on_cpu };

const char* own_cause_name(StragglerOwnCause c) {
  switch (c) {
    case StragglerOwnCause::cpu_contention: return "cpu_contention";
    case StragglerOwnCause::io_wait: return "io_wait";
    case StragglerOwnCause::sleeping: return "sleeping";
    case StragglerOwnCause::on_cpu: return "on_cpu";
  }
  return "on_cpu";
}

}  // namespace

std::string nccl_straggler_chain_id(int64_t session_id, uint32_t straggler_pid, int64_t comm) {
  return "s" + std::to_string(session_id) + "-" + std::string(NcclStraggler::name) + "-" + std::to_string(straggler_pid) + "-comm" +
         hex(comm);
}

std::string late_rank_cpu_chain_id(int64_t session_id, uint32_t late_pid, int64_t comm) {
  return "s" + std::to_string(session_id) + "-cpu_contention-late_rank-" + std::to_string(late_pid) + "-comm" + hex(comm);
}

bool straggler_late_for_cpu(const CorrelatorState& s, const ThreadTimelines& tl, const CollectiveEntry& late,
                            int64_t lateness_ns) {
  std::vector<RunShare> who;
  runnable_culprits(tl, late.tid, late_for_cpu_window_from(late, lateness_ns), late.ts_ns, who, nullptr, nullptr);
  int64_t outsiders = 0;
  for (const RunShare& r : who)
    if (r.pid != 0 && r.pid != late.pid && !(s.tracer_pid && r.pid == *s.tracer_pid)) outsiders += r.ns;
  return outsiders * 2 >= lateness_ns;
}

void NcclStraggler::observe_chunk(State& st, const ChunkContext& cx, int64_t cf, int64_t ct) {
  for (const CollectiveGroup& g : cx.groups) {
    // Count each collective once: in the chunk where its first rank entered.
    if (g.first_entry_ns < cf || g.first_entry_ns >= ct) continue;
    if (!st.seen_groups.emplace(std::make_pair(g.comm, g.seq), g.first_entry_ns).second) continue;
    CommAcc& ca = st.comms[g.comm];
    ++ca.collectives;
    for (size_t m : g.members) ++ca.entries_by_pid[cx.entries[m].pid];
    if (!g.has_straggler) continue;
    const CollectiveEntry& late = cx.entries[g.straggler];
    const bool for_cpu = straggler_late_for_cpu(cx.s, cx.tl, late, g.lateness_ns);
    StragglerAcc& a = for_cpu ? st.cpu_late[{g.comm, late.pid}] : st.stragglers[{g.comm, late.pid}];
    a.comm = g.comm;
    a.pid = late.pid;
    a.tid = late.tid;
    a.rank = late.rank;
    a.nranks = late.nranks;
    a.op = late.op;
    ++a.late;
    a.wait_ns += g.wait_ns;
    a.first_ns = std::min(a.first_ns, g.first_entry_ns);
    a.last_ns = std::max(a.last_ns, g.last_entry_ns);
    if (a.lateness.size() < 200000) a.lateness.push_back(g.lateness_ns);
    for (size_t k = 0; k + 1 < g.members.size(); ++k)
      a.victims_wait[cx.entries[g.members[k]].pid] += g.last_entry_ns - cx.entries[g.members[k]].ts_ns;
    // Its own cause: what its thread did between the first rank's entry and its own.
    OffCpuSummary off = cx.tl.off_cpu_in(late.tid, g.first_entry_ns, late.ts_ns);
    int64_t span = late.ts_ns - g.first_entry_ns;
    a.own_runnable_ns += off.runnable_ns;
    a.own_sleep_ns += off.sleeping_ns;
    a.own_d_ns += off.uninterruptible_ns;
    a.own_on_cpu_ns += std::max<int64_t>(0, span - off.total());
    if (for_cpu || off.runnable_ns * 2 >= g.lateness_ns) {
      ++a.preempted;
      std::vector<RunShare> who;
      const int64_t since = for_cpu ? late_for_cpu_window_from(late, g.lateness_ns) : g.first_entry_ns;  // the window the rule read
      runnable_culprits(cx.tl, late.tid, since, late.ts_ns, who, &a.cpus, nullptr);
      for (const RunShare& r : who)
        if (!(cx.s.tracer_pid && r.pid == *cx.s.tracer_pid)) add_party(a.preempters, r.pid, 0, r.ns);
    }
    if (g.lateness_ns > a.example_lateness) {
      a.example_lateness = g.lateness_ns;
      a.example.clear();
      std::string opn = op_name(g.op);
      for (size_t m : g.members) {
        const CollectiveEntry& e = cx.entries[m];
        a.example.push_back({e.ts_ns, "nccl",
                             cx.s.ranks.label(e.pid, e.rank) + " (pid " + std::to_string(e.pid) + ") enters " + opn +
                                 " seq " + std::to_string(g.seq) +
                                 (m == g.straggler ? ", last: " + format_duration_ns(g.lateness_ns) + " after the others" : "")});
      }
      for (const OffCpuInterval& iv : cx.tl.overlapping(late.tid, g.first_entry_ns, late.ts_ns)) {
        if (iv.state != OffCpuState::runnable) continue;
        a.example.push_back({iv.from_ns, "host",
                             cx.s.ranks.label(late.pid, late.rank) + " thread " + std::to_string(late.tid) +
                                 " preempted on CPU " + std::to_string(iv.cpu) + " by " + cx.s.comm_of(iv.next_pid) +
                                 " (pid " + std::to_string(iv.next_pid) + ") for " + format_duration_ns(iv.to_ns - iv.from_ns)});
      }
    }
  }
  // A collective is seen again only while its entries are in the buffer (context_ns around a chunk).
  std::erase_if(st.seen_groups, [&](const auto& kv) { return kv.second < ct - 4 * cx.s.opt.context_ns; });
}

namespace {

// The fields a chain of one rank's late entries has, whatever its cause: `pid` is its victim.
Doc late_entries_doc(const SessionReport& c, const StragglerAcc& a, Cause cause, std::string id, uint32_t pid) {
  Doc d;
  d.cause = cause;
  d.id = std::move(id);
  d.pid = pid;
  d.op_id = a.op;
  d.op = op_name(a.op);
  d.calls = a.late;
  d.from_ns = a.first_ns;
  d.to_ns = a.last_ns;
  d.lost_ns = a.wait_ns / std::max<int64_t>(1, static_cast<int64_t>(a.victims_wait.size()));
  d.impact = static_cast<double>(d.lost_ns) / static_cast<double>(c.window_ns);
  d.severity = severity_for(d.impact);
  d.p50_us = percentile_us(a.lateness, 0.5);
  d.p99_us = percentile_us(a.lateness, 0.99);
  d.timeline = a.example;
  return d;
}

// A rank late for want of a CPU, as a cpu_contention chain: victim the late rank, culprit who
// held its CPU the longest while it was runnable before its late entries.
// entered: the late rank's collectives in the communicator (the share's denominator).
void report_late_for_cpu(SessionReport& c, const StragglerAcc& a, size_t members, int64_t entered) {
  CorrelatorState& s = c.s;
  const PartyAcc* pre = top_party(a.preempters, a.pid, false);
  if (a.late < 3 || !pre) return;
  int64_t pre_total = 0;
  for (auto& [k, p] : a.preempters) pre_total += p.ns;
  const int32_t cpu = key_of_largest(a.cpus, -1);
  Doc d = late_entries_doc(c, a, Cause::cpu_contention, late_rank_cpu_chain_id(s.session_id, a.pid, a.comm), a.pid);
  d.tid = a.tid;
  d.slow_share = entered > 0 ? static_cast<double>(a.late) / static_cast<double>(entered) : 0;
  const double share = pre_total > 0 ? static_cast<double>(pre->ns) / static_cast<double>(pre_total) : 0;
  const std::string rank = s.ranks.label(a.pid, a.rank) + " (pid " + std::to_string(a.pid) + ")";
  const std::string hog = s.comm_of(pre->pid) + " (pid " + std::to_string(pre->pid) + ")";
  d.summary = rank + " entered " + d.op + " last in " + with_commas(a.late) + " collectives, " +
              format_duration_ns(static_cast<int64_t>(d.p50_us * 1000)) +
              " after the others (median), because its thread could not get its CPU: " + hog + " held CPU " +
              std::to_string(cpu) + " while it was runnable; the other ranks waited " + format_duration_ns(a.wait_ns) +
              " in total";
  d.culprit = Culprit{.pid = pre->pid, .comm = s.comm_of(pre->pid), .share_kind = ShareKind::off_cpu,
                      .share = std::round(share * 1000) / 1000, .cpu = cpu};
  d.evidence.push_back("communicator " + hex(a.comm) + ", " + std::to_string(members) + " local ranks; " + rank +
                       " was last by >= 1 ms in " + with_commas(a.late) + " collectives while runnable off-CPU for at "
                       "least half its lateness: the lateness is its CPU's, not its own work's");
  d.evidence.push_back("before those entries its thread was runnable-off-CPU " + format_duration_ns(a.own_runnable_ns) +
                       ", asleep " + format_duration_ns(a.own_sleep_ns) + ", on-CPU " + format_duration_ns(a.own_on_cpu_ns));
  d.evidence.push_back(hog + " ran on its CPU for " + format_duration_ns(pre->ns) + " while it was runnable (" + pct(share) +
                       " of its stolen time)");
  d.victims.emplace();
  for (auto& [pid, w] : a.victims_wait) {
    d.victims->push_back({pid, s.comm_of(pid), w / 1000});
    d.evidence.push_back("pid " + std::to_string(pid) + " (" + s.comm_of(pid) + ") waited " + format_duration_ns(w) +
                         " for it in the collective");
  }
  d.recommendation = "Keep " + s.comm_of(pre->pid) + " off CPU " + std::to_string(cpu) + ": pin " + rank +
                     " to dedicated cores (taskset -c / a cpuset cgroup), or run " + s.comm_of(pre->pid) +
                     " elsewhere or at nice 19, so every rank enters its collectives on time.";
  emit(c, std::move(d));
}

}  // namespace

void NcclStraggler::report(SessionReport& c, const State& st) {
  CorrelatorState& s = c.s;
  for (auto& [key, a] : st.cpu_late) {
    auto cm = st.comms.find(a.comm);
    if (cm == st.comms.end() || cm->second.entries_by_pid.size() < 2) continue;
    const auto entered = cm->second.entries_by_pid.find(a.pid);
    report_late_for_cpu(c, a, cm->second.entries_by_pid.size(), entered == cm->second.entries_by_pid.end() ? 0 : entered->second);
  }
  for (auto& [key, a] : st.stragglers) {
    auto cm = st.comms.find(a.comm);
    if (cm == st.comms.end()) continue;
    int64_t entered = cm->second.entries_by_pid.count(a.pid) ? cm->second.entries_by_pid.at(a.pid) : 0;
    size_t members = cm->second.entries_by_pid.size();
    if (a.late < 3 || entered == 0 || members < 2) continue;
    double late_share = static_cast<double>(a.late) / static_cast<double>(entered);
    // Consistently last: counted over every collective it entered last, those where it was late
    // for want of a CPU included (a rank that sleeps 8 ms before each all-reduce on a host
    // whose compilers then hold its CPU another 5 ms is late every time, yet its own lateness
    // alone was 60 % of them: no chain, though it is the straggler). Its own lateness must
    // still be 40 % of them, so a rank late mostly for its CPU stays cpu_contention's alone.
    const auto cpu_late = st.cpu_late.find(key);
    const double last_share =
        static_cast<double>(a.late + (cpu_late == st.cpu_late.end() ? 0 : cpu_late->second.late)) / static_cast<double>(entered);
    if (late_share < 0.4 || last_share < std::max(0.4, 1.5 / static_cast<double>(members))) continue;
    const uint32_t victim = key_of_largest(a.victims_wait);
    Doc d = late_entries_doc(c, a, id, nccl_straggler_chain_id(s.session_id, a.pid, a.comm), victim);
    d.slow_share = late_share;
    double pre_share = a.late ? static_cast<double>(a.preempted) / static_cast<double>(a.late) : 0;
    const PartyAcc* pre = top_party(a.preempters, a.pid, false);
    int64_t pre_total = 0;
    for (auto& [k, p] : a.preempters) pre_total += p.ns;
    std::string rank = s.ranks.label(a.pid, a.rank) + " (pid " + std::to_string(a.pid) + ")";
    std::string own;
    StragglerOwnCause own_cause;
    if (pre && pre_share >= 0.25) {
      own_cause = StragglerOwnCause::cpu_contention;
      own = "; its thread was preempted by " + s.comm_of(pre->pid) + " (pid " + std::to_string(pre->pid) + ") in " +
            pct(pre_share) + " of its late entries";
    } else if (a.own_d_ns > a.own_runnable_ns && a.own_d_ns > a.own_on_cpu_ns / 2) {
      own_cause = StragglerOwnCause::io_wait;
      own = "; its thread was in D state (I/O) before entering";
    } else if (a.own_sleep_ns > a.own_on_cpu_ns) {
      own_cause = StragglerOwnCause::sleeping;
      own = "; its thread slept (S) before entering — it waited on something of its own";
    } else {
      own_cause = StragglerOwnCause::on_cpu;
      own = "; its thread was on-CPU before entering: its own host work (input pipeline, Python) is slower";
    }
    std::string victims;
    for (auto& [pid, w] : a.victims_wait) victims += (victims.empty() ? "" : ", ") + std::to_string(pid);
    d.summary = rank + " entered " + d.op + " last in " + pct(late_share) + " of " + with_commas(entered) + " collectives, " +
                format_duration_ns(static_cast<int64_t>(d.p50_us * 1000)) + " after the others (median); the other ranks waited " +
                format_duration_ns(a.wait_ns) + " in total" + own;
    d.culprit = Culprit{.pid = a.pid, .comm = s.comm_of(a.pid), .share_kind = ShareKind::late,
                        .share = std::round(late_share * 1000) / 1000, .rank = a.rank, .own_cause = own_cause_name(own_cause)};
    if (pre && own_cause == StragglerOwnCause::cpu_contention)
      d.culprit->preempted_by = Preempter{pre->pid, s.comm_of(pre->pid), std::round(pre_share * 1000) / 1000};
    d.evidence.push_back("communicator " + hex(a.comm) + ", " + std::to_string(members) + " local ranks (nranks " + std::to_string(a.nranks) + "); collectives matched by (comm, seq)");
    d.evidence.push_back(rank + " was last by >= 1 ms in " + with_commas(a.late) + " of " + with_commas(entered) +
                         " collectives; lateness p50 " + format_duration_ns(static_cast<int64_t>(d.p50_us * 1000)) + ", p99 " +
                         format_duration_ns(static_cast<int64_t>(d.p99_us * 1000)));
    d.victims.emplace();
    for (auto& [pid, w] : a.victims_wait) d.victims->push_back({pid, s.comm_of(pid), w / 1000});
    for (auto& [pid, w] : a.victims_wait)
      d.evidence.push_back("pid " + std::to_string(pid) + " (" + s.comm_of(pid) + ") waited " + format_duration_ns(w) +
                           " for it (shows in its stream sync after the enqueue)");
    d.evidence.push_back("before its late entries the straggler's thread was runnable-off-CPU " +
                         format_duration_ns(a.own_runnable_ns) + ", asleep " + format_duration_ns(a.own_sleep_ns) + ", in D " +
                         format_duration_ns(a.own_d_ns) + ", on-CPU " + format_duration_ns(a.own_on_cpu_ns));
    if (pre && pre_total > 0)
      d.evidence.push_back(s.comm_of(pre->pid) + " (pid " + std::to_string(pre->pid) + ") ran on its CPU for " +
                           format_duration_ns(pre->ns) + " while it was runnable (" +
                           pct(static_cast<double>(pre->ns) / static_cast<double>(pre_total)) + " of its stolen time)");
    d.evidence.push_back(format_duration_ns(d.lost_ns) + " lost per waiting rank, " + pct(d.impact) + " of the " +
                         format_duration_ns(c.window_ns) + " analyzed");
    std::string cpus;
    for (auto& [cpu, ns] : a.cpus) cpus += (cpus.empty() ? "" : ", ") + std::to_string(cpu);
    d.recommendation = "All ranks run at the pace of the slowest: fix " + rank + "'s host" +
                       (own_cause == StragglerOwnCause::cpu_contention ? " — keep " + s.comm_of(pre->pid) + " off CPU " + cpus +
                                                            " (pin the rank to dedicated cores, run it at nice 19) "
                                                      : own_cause == StragglerOwnCause::on_cpu ? " — speed up its input pipeline (more DataLoader workers) "
                                                                              : " — remove what it waits on before the collective ") +
                       "so it enters collectives with the others.";
    emit(c, std::move(d));
  }
}

}  // namespace causeway
