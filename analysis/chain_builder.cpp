// Turns the correlator's accumulated evidence into chain documents (INTERFACES.md shape).
// Every sentence here states a number the trace holds; where the data names no culprit the
// chain has none, and where the evidence is weak the chain is LOW or `unknown`.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/correlator_internal.h"
#include "analysis/frames.h"
#include "common/sanitize.h"
#include "common/units.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

using State = Correlator::State;
using json = nlohmann::json;

constexpr double kHigh = 0.05;    // wall time lost >= 5% of the window
constexpr double kMedium = 0.01;  // >= 1%
constexpr double kMinImpact = 0.001;

int severity_rank(const std::string& s) { return s == "HIGH" ? 3 : s == "MEDIUM" ? 2 : 1; }

std::string severity_for(double impact) { return impact >= kHigh ? "HIGH" : impact >= kMedium ? "MEDIUM" : "LOW"; }

std::string pct(double share) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f%%", share * 100.0);
  return b;
}

std::string num(double v, int prec = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v), out;
  int n = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (n && n % 3 == 0 && *it != '-') out.push_back(',');
    out.push_back(*it);
    ++n;
  }
  return {out.rbegin(), out.rend()};
}

double percentile_us(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - (q > 0 ? 1 : 0));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]) / 1000.0;
}

std::vector<std::string> load_stack(sqlite3* db, uint64_t id) {
  std::vector<std::string> frames;
  if (!id) return frames;
  auto st = Statement::prepare(db, "SELECT frames FROM stacks WHERE id = ?1");
  if (!st) return frames;
  st->bind(1, static_cast<int64_t>(id));
  if (st->step() != SQLITE_ROW) return frames;
  auto j = json::parse(st->col_text(0), nullptr, false);
  if (!j.is_array()) return frames;
  std::vector<std::string> raw;
  for (const auto& f : j)
    if (f.is_string()) raw.push_back(f.get<std::string>());
  // User frame first (the Python line, else the program's own native frame): the call site.
  for (const auto& f : user_first_texts(raw)) frames.push_back(sanitize_untrusted(f, 200));
  return frames;
}

uint64_t top_stack(const std::map<uint64_t, int64_t>& m) {
  uint64_t best = 0;
  int64_t n = -1;
  for (auto& [id, c] : m)
    if (c > n) {
      n = c;
      best = id;
    }
  return best;
}

struct Ctx {
  State& s;
  sqlite3* db;
  int64_t window_ns;
  std::vector<std::pair<ChainRecord, double>> out;  // record, impact
};

struct Doc {
  std::string id, cause, severity, summary, recommendation;
  uint32_t pid = 0, tid = 0;
  std::string op;
  uint16_t op_id = 0;
  int64_t calls = 0, lost_ns = 0, from_ns = 0, to_ns = 0;
  double p50_us = 0, p99_us = 0, slow_share = 0, impact = 0;
  bool between = false;
  json culprit;  // null when none
  json victims;  // nccl_straggler: the ranks that waited [{pid, rank?, wait_us}]
  std::vector<std::string> evidence;
  std::vector<TimelineItem> timeline;
  uint64_t stack = 0;
};

void op_stats(Ctx& c, Doc& d) {
  auto it = c.s.ops.find(op_key(d.pid, d.op_id));
  if (it == c.s.ops.end() || it->second.count == 0) return;
  const OpAcc& o = it->second;
  d.p50_us = static_cast<double>(o.hist.percentile(0.50, o.min, o.max)) / 1000.0;
  d.p99_us = static_cast<double>(o.hist.percentile(0.99, o.min, o.max)) / 1000.0;
  d.slow_share = std::min(1.0, static_cast<double>(d.calls) / static_cast<double>(o.count));
  if (d.cause == "cold_start") return;  // its calls span several ops; the evidence lists them by op
  d.evidence.insert(d.evidence.begin(),
                    with_commas(d.calls) + " of " + with_commas(static_cast<int64_t>(o.count)) + " " + d.op + " calls " +
                        (d.between ? "preceded by a host stall" : "slow") + " (" + pct(d.slow_share) + "); all calls: p50 " +
                        format_duration_ns(static_cast<int64_t>(d.p50_us * 1000)) + ", p99 " +
                        format_duration_ns(static_cast<int64_t>(d.p99_us * 1000)) + ", max " +
                        format_duration_ns(static_cast<int64_t>(o.max)));
}

void emit(Ctx& c, Doc d) {
  json doc;
  doc["id"] = d.id;
  doc["severity"] = d.severity;
  doc["cause"] = d.cause;
  doc["summary"] = d.summary;
  doc["pid"] = d.pid;
  doc["comm"] = c.s.comm_of(d.pid);
  if (d.tid) doc["tid"] = d.tid;
  doc["op"] = d.op;
  doc["where"] = d.between ? "between_calls" : "in_call";
  doc["calls"] = d.calls;
  doc["p50_us"] = std::round(d.p50_us * 10) / 10;
  doc["p99_us"] = std::round(d.p99_us * 10) / 10;
  doc["slow_share"] = std::round(d.slow_share * 1000) / 1000;
  doc["lost_us"] = d.lost_ns / 1000;
  doc["impact"] = std::round(d.impact * 10000) / 10000;
  doc["window"] = {{"from_ns", d.from_ns}, {"to_ns", d.to_ns}};
  if (!d.culprit.is_null()) doc["culprit"] = d.culprit;
  if (!d.victims.is_null()) doc["victims"] = d.victims;
  doc["evidence"] = d.evidence;
  std::sort(d.timeline.begin(), d.timeline.end(), [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });
  if (d.timeline.size() > 24) d.timeline.resize(24);
  json tl = json::array();
  for (const auto& t : d.timeline) tl.push_back({{"ts_ns", t.ts_ns}, {"layer", t.layer}, {"what", t.what}});
  doc["timeline"] = tl;
  doc["stack"] = load_stack(c.db, d.stack);
  doc["recommendation"] = d.recommendation;

  ChainRecord r;
  r.id = d.id;
  r.from_ns = d.from_ns;
  r.to_ns = d.to_ns;
  r.severity = d.severity;
  r.cause = d.cause;
  r.pid = d.pid;
  r.comm = c.s.comm_of(d.pid);
  r.op = d.op;
  r.calls = d.calls;
  r.p50_us = doc["p50_us"];
  r.p99_us = doc["p99_us"];
  r.slow_share = doc["slow_share"];
  if (!d.culprit.is_null()) {
    if (d.culprit.contains("pid")) r.culprit_pid = d.culprit["pid"].get<uint32_t>();
    if (d.culprit.contains("comm")) r.culprit_comm = d.culprit["comm"].get<std::string>();
    else if (d.culprit.contains("peer")) r.culprit_comm = d.culprit["peer"].get<std::string>();
    for (const char* k : {"off_cpu_share", "wait_share", "overlap_share", "late_share", "page_share", "share"})
      if (d.culprit.contains(k)) {
        r.culprit_share = d.culprit[k].get<double>();
        break;
      }
  }
  r.summary = d.summary;
  r.doc = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  c.out.push_back({std::move(r), d.impact});
}

std::vector<TimelineItem> merged_timeline(const ChainAcc& a) {
  std::vector<TimelineItem> t;
  for (const auto& w : a.worst) t.insert(t.end(), w.items.begin(), w.items.end());
  return t;
}

uint32_t main_tid(const ChainAcc& a) {
  uint32_t tid = 0;
  double best = -1;
  for (const auto& [k, v] : a.num)
    if (k.rfind("tid_", 0) == 0 && v > best) {
      best = v;
      tid = static_cast<uint32_t>(std::stoul(k.substr(4)));
    }
  return tid;
}

std::string victim_text(const State& s, const Doc& d) {
  return d.op + " in " + s.comm_of(d.pid) + " (pid " + std::to_string(d.pid) + (d.tid ? ", thread " + std::to_string(d.tid) : "") + ")";
}

const PartyAcc* top_party(const std::map<uint64_t, PartyAcc>& m, uint32_t exclude_pid, bool by_hits, bool include_idle = false) {
  const PartyAcc* best = nullptr;
  for (const auto& [k, p] : m) {
    if (p.pid == exclude_pid && exclude_pid != UINT32_MAX) continue;
    if (p.pid == 0 && !include_idle) continue;
    if (!best || (by_hits ? std::tie(p.hits, p.amount) > std::tie(best->hits, best->amount) : p.ns > best->ns)) best = &p;
  }
  return best;
}

void build_call_chain(Ctx& c, const ChainAcc& a) {
  State& s = c.s;
  Doc d;
  d.id = a.id;
  d.cause = a.cause;
  d.pid = a.pid;
  d.tid = main_tid(a);
  d.op_id = a.op;
  d.op = op_name(a.op);
  d.calls = a.calls;
  d.lost_ns = a.lost_ns;
  d.from_ns = a.first_ns;
  d.to_ns = a.last_ns;
  d.between = a.between_calls;
  d.impact = static_cast<double>(a.lost_ns) / static_cast<double>(c.window_ns);
  d.severity = severity_for(d.impact);
  d.stack = top_stack(a.stacks);
  d.timeline = merged_timeline(a);
  const std::string lost = format_duration_ns(a.lost_ns);
  const std::string where = a.between_calls ? "between CUDA calls (before " + d.op + ")" : "inside " + d.op;
  const std::string victim = victim_text(s, d);
  const double cause_share = a.lost_ns > 0 ? static_cast<double>(a.off_ns) / static_cast<double>(a.lost_ns) : 0;

  if (a.cause == "cpu_contention") {
    int64_t total = 0;
    for (auto& [k, p] : a.culprits) total += p.ns;
    const PartyAcc* p = top_party(a.culprits, a.pid, false);
    std::string cpus;
    int32_t top_cpu = -1;
    int64_t top_cpu_ns = -1;
    for (auto& [cpu, ns] : a.cpus) {
      cpus += (cpus.empty() ? "" : ", ") + std::to_string(cpu);
      if (ns > top_cpu_ns) {
        top_cpu_ns = ns;
        top_cpu = cpu;
      }
    }
    std::string who = p ? s.comm_of(p->pid) + " (pid " + std::to_string(p->pid) + ")" : "another task";
    double share = p && total > 0 ? static_cast<double>(p->ns) / static_cast<double>(total) : 0;
    d.summary = victim + ": " + std::to_string(a.calls) + " slow calls lost " + lost + "; the thread was runnable but off-CPU for " +
                format_duration_ns(a.off_ns) + " " + where + ", preempted by " + who + " on CPU " + std::to_string(top_cpu);
    if (p) d.culprit = {{"pid", p->pid}, {"comm", s.comm_of(p->pid)}, {"off_cpu_share", std::round(share * 1000) / 1000},
                        {"cpu", top_cpu}};
    d.evidence.push_back("runnable but not running for " + format_duration_ns(a.off_ns) + " " + where + " (" +
                         num(a.num.count("preemptions") ? a.num.at("preemptions") : 0, 0) + " preemptions / wakeup waits), on CPU " + cpus);
    std::vector<const PartyAcc*> ps;
    for (auto& [k, q] : a.culprits) ps.push_back(&q);
    std::sort(ps.begin(), ps.end(), [](auto x, auto y) { return x->ns > y->ns; });
    for (size_t i = 0; i < ps.size() && i < 3; ++i)
      d.evidence.push_back(s.comm_of(ps[i]->pid) + " (pid " + std::to_string(ps[i]->pid) + ") ran there for " +
                           format_duration_ns(ps[i]->ns) + " (" + pct(total ? static_cast<double>(ps[i]->ns) / static_cast<double>(total) : 0) +
                           " of the stolen time) during " + std::to_string(ps[i]->hits) + " of the slow calls");
    d.recommendation = "Keep " + (p ? s.comm_of(p->pid) : std::string("other work")) + " off CPU " + cpus + " while the job runs: pin " +
                       s.comm_of(a.pid) + " to dedicated cores (taskset -c / a cpuset cgroup) and move " +
                       (p ? s.comm_of(p->pid) : std::string("the other task")) +
                       " elsewhere, or run it at nice 19 / SCHED_IDLE so it cannot preempt the training thread.";
  } else if (a.cause == "lock_contention") {
    const PartyAcc* p = top_party(a.culprits, UINT32_MAX, false);
    std::string who = p ? s.thread_name(p->tid) + " (tid " + std::to_string(p->tid) + ")" : "a sibling thread";
    double share = p && a.off_ns ? static_cast<double>(p->ns) / static_cast<double>(a.off_ns) : 0;
    d.summary = victim + ": " + std::to_string(a.calls) + " slow calls lost " + lost + " blocked (voluntary sleep) " + where +
                ", each time woken by sibling thread " + who + " of the same process — it holds a lock this call needs";
    if (p) d.culprit = {{"pid", p->pid}, {"tid", p->tid}, {"comm", s.thread_name(p->tid)},
                        {"wait_share", std::round(share * 1000) / 1000}};
    d.evidence.push_back("asleep (S) for " + format_duration_ns(a.off_ns) + " " + where + ", " + pct(cause_share) + " of the time lost");
    if (p) d.evidence.push_back("woken by " + who + " in " + std::to_string(p->hits) + " of " + std::to_string(a.calls) +
                                " slow calls (" + pct(share) + " of the blocked time)");
    d.recommendation = "Shorten what " + who + " does while holding the lock " + d.op +
                       " needs, or move that work (e.g. the checkpoint copy) off the lock / to another process, so the "
                       "training thread never waits for it.";
  } else if (a.cause == "io_contention") {
    const PartyAcc* p = top_party(a.culprits, a.pid, true);
    bool other = p && p->hits * 10 >= a.calls * 3;
    double own_only = a.num.count("own_io_only") ? a.num.at("own_io_only") : 0;
    if (!other) p = top_party(a.culprits, UINT32_MAX, true);
    double share = p ? static_cast<double>(p->hits) / static_cast<double>(a.calls) : 0;
    std::string who = p ? s.comm_of(p->pid) + " (pid " + std::to_string(p->pid) + ")" : "";
    if (other)
      d.summary = victim + ": " + std::to_string(a.calls) + " slow calls lost " + lost + " waiting in D state (disk I/O) " + where +
                  "; " + who + " had block I/O in flight on the same disk during " + pct(share) + " of the waits";
    else
      d.summary = victim + ": " + std::to_string(a.calls) + " slow calls lost " + lost + " waiting in D state " + where +
                  " for the process's own disk I/O (writes/fsync or page faults)";
    if (p) d.culprit = {{"pid", p->pid}, {"comm", s.comm_of(p->pid)}, {"overlap_share", std::round(share * 1000) / 1000},
                        {"own_io", !other}};
    d.evidence.push_back("uninterruptible (D) for " + format_duration_ns(a.off_ns) + " " + where + ", " + pct(cause_share) +
                         " of the time lost");
    auto n = [&](const char* k) { return a.num.count(k) ? a.num.at(k) : 0.0; };
    d.evidence.push_back("block requests overlapping the waits: " + num(n("own_requests"), 0) + " on the process's behalf (" +
                         num(n("kworker_requests"), 0) + " of them issued by kernel workers, " + format_bytes(static_cast<int64_t>(n("own_bytes"))) +
                         "), " + num(n("other_requests"), 0) + " from other processes");
    if (other) {
      for (auto& [k, q] : a.culprits)
        if (q.pid != a.pid && q.pid != p->pid && q.hits * 10 >= a.calls)
          d.evidence.push_back(s.comm_of(q.pid) + " (pid " + std::to_string(q.pid) + ") also had I/O in flight during " +
                               std::to_string(q.hits) + " waits");
      d.recommendation = "Keep " + s.comm_of(p->pid) + " off the disk the job reads while it trains (ionice -c3, reschedule it, or "
                         "exclude the dataset path), or stage the dataset on local NVMe / in RAM so page faults do not queue behind it.";
    } else {
      d.recommendation = "Move the writes and fsync off the thread that drives the GPU (a background writer thread or async I/O), "
                         "or batch them (fewer fsync calls), so the GPU queue keeps getting work.";
    }
    (void)own_only;
  } else if (a.cause == "memory_pressure") {
    const PartyAcc* p = top_party(a.culprits, a.pid, false);
    if (p && p->amount == 0) {
      const PartyAcc* best = nullptr;
      for (auto& [k, q] : a.culprits)
        if (q.pid != a.pid && (!best || q.amount > best->amount)) best = &q;
      p = best;
    }
    for (auto& [k, q] : a.culprits)
      if (q.pid != a.pid && (!p || q.amount > p->amount)) p = &q;
    double total = a.num.count("pages_total") ? a.num.at("pages_total") : 0;
    double share = p && total > 0 ? static_cast<double>(p->amount) / total : 0;
    std::string who = p ? s.comm_of(p->pid) + " (pid " + std::to_string(p->pid) + ")" : "";
    bool killed = false;
    int64_t kill_ts = 0;
    for (auto& [k, v] : a.num)
      if (p && k == "oom_" + std::to_string(p->pid)) {
        killed = true;
        kill_ts = static_cast<int64_t>(v);
      }
    d.summary = victim + ": " + std::to_string(a.calls) + " slow calls lost " + lost + " stalled in D state (memory reclaim) " +
                where + (p ? "; " + who + " allocated " + pct(share) + " of the pages during those calls" : "") +
                (killed ? " until the OOM killer ended it" : "");
    if (p) d.culprit = {{"pid", p->pid}, {"comm", s.comm_of(p->pid)}, {"page_share", std::round(share * 1000) / 1000},
                        {"oom_killed", killed}};
    d.evidence.push_back("uninterruptible (D) for " + format_duration_ns(a.off_ns) + " " + where + ", " + pct(cause_share) +
                         " of the time lost; no block I/O overlapped the stalls");
    if (p) d.evidence.push_back(who + " allocated " + with_commas(p->amount) + " pages (" + format_bytes(p->amount * 4096) +
                                " at 4 KiB) in the 100 ms samples overlapping the slow calls");
    if (killed) d.evidence.push_back("OOM killer ended " + who + " at " + format_utc(kill_ts));
    d.recommendation = "Bound " + (p ? s.comm_of(p->pid) : std::string("the memory hog")) +
                       "'s memory (cgroup memory.max / container limit) or move it off this host; allocate pinned buffers once at "
                       "start-up instead of re-pinning while memory is tight.";
  } else if (a.cause == "network") {
    const PartyAcc* p = nullptr;
    for (auto& [k, q] : a.peers)
      if (!p || q.amount > p->amount) p = &q;
    double share = p ? static_cast<double>(p->hits) / static_cast<double>(a.calls) : 0;
    int64_t rt = static_cast<int64_t>(a.num.count("retransmits") ? a.num.at("retransmits") : 0);
    d.summary = victim + ": " + std::to_string(a.calls) + " slow calls lost " + lost + "; TCP retransmits" +
                (p ? " to " + p->label : std::string()) + " by this job's ranks during " + pct(share) +
                " of them — the network path, not this host, stretched the collectives";
    if (p) d.culprit = {{"peer", p->label}, {"retransmits", p->amount}, {"share", std::round(share * 1000) / 1000}};
    d.evidence.push_back(std::to_string(rt) + " TCP retransmits by the communicator's local ranks within the slow calls (from 10 ms before)");
    d.evidence.push_back("the calling thread stayed on-CPU or asleep without a host cause: no preemption, D-state or lock wait explains the time");
    d.recommendation = "Check the path to " + (p ? p->label : std::string("the peer node")) +
                       ": NIC error counters (ethtool -S), MTU mismatches and switch congestion; use InfiniBand/RoCE (NCCL_IB_HCA) "
                       "instead of TCP sockets where available.";
  } else if (a.cause == "gpu_wait") {
    const GpuShareAcc* g = s.gpu_share.count(a.pid) ? &s.gpu_share.at(a.pid) : nullptr;
    uint32_t best = 0;
    double best_slow = 0, best_norm = 0;
    if (g)
      for (auto& [pid, hits] : g->slow_hits) {
        double sh = g->slow ? static_cast<double>(hits) / static_cast<double>(g->slow) : 0;
        double nh = g->normal && g->normal_hits.count(pid) ? static_cast<double>(g->normal_hits.at(pid)) / static_cast<double>(g->normal) : 0;
        if (sh >= 0.5 && sh >= 2 * nh + 0.05 && sh > best_slow) {
          best = pid;
          best_slow = sh;
          best_norm = nh;
        }
      }
    double on_cpu = a.num.count("on_cpu_ns") ? a.num.at("on_cpu_ns") : 0;
    double sleep = a.num.count("sleep_ns") ? a.num.at("sleep_ns") : 0;
    d.summary = victim + ": " + std::to_string(a.calls) + " slow calls lost " + lost +
                " waiting on the GPU with no host cause (thread on-CPU or asleep, not preempted)" +
                (best ? "; " + s.comm_of(best) + " (pid " + std::to_string(best) + ") submitted GPU work during " + pct(best_slow) +
                            " of them vs " + pct(best_norm) + " of normal ones — it shares the GPU"
                      : "; the GPU queue itself is the bottleneck");
    if (best) d.culprit = {{"pid", best}, {"comm", s.comm_of(best)}, {"overlap_share", std::round(best_slow * 1000) / 1000}};
    d.evidence.push_back("on-CPU " + format_duration_ns(static_cast<int64_t>(on_cpu)) + ", asleep " +
                         format_duration_ns(static_cast<int64_t>(sleep)) + " inside the slow calls; no runnable, D-state or lock wait");
    if (best && g)
      d.evidence.push_back(s.comm_of(best) + " (pid " + std::to_string(best) + ") submitted " +
                           with_commas(g->slow_launches.count(best) ? g->slow_launches.at(best) : 0) + " GPU operations during " +
                           std::to_string(g->slow_hits.at(best)) + " slow syncs; during normal syncs it was active " + pct(best_norm) +
                           " of the time");
    double own = a.num.count("own_submits_before") ? a.num.at("own_submits_before") : 0;
    if (a.calls) d.evidence.push_back("this process submitted " + num(own / static_cast<double>(a.calls), 1) +
                                      " GPU operations on average in the 50 ms before each slow call");
    d.recommendation = best ? "Give " + s.comm_of(a.pid) + " and " + s.comm_of(best) +
                                  " separate GPUs, or partition the GPU (MIG, or MPS with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) so "
                                  "the other job cannot time-slice this one's kernels."
                            : "The host is waiting for the GPU: profile the kernels before this sync (Nsight Systems) — the "
                              "host side is not the bottleneck here.";
  } else if (a.cause == "cold_start") {
    uint16_t top = 0;
    double top_ns = -1;
    std::vector<std::pair<double, uint16_t>> by;
    for (auto& [k, v] : a.num)
      if (k.rfind("op_", 0) == 0 && k.size() > 3 && k.compare(k.size() - 3, 3, "_ns") == 0) {
        uint16_t op = static_cast<uint16_t>(std::stoi(k.substr(3)));
        by.push_back({v, op});
        if (v > top_ns) {
          top_ns = v;
          top = op;
        }
      }
    std::sort(by.rbegin(), by.rend());
    d.op_id = top;
    d.op = op_name(top);
    d.summary = s.comm_of(a.pid) + " (pid " + std::to_string(a.pid) + "): start-up cost " + lost + " in " +
                std::to_string(a.calls) + " slow first calls (context creation, module loading) within " +
                format_duration_ns(s.opt.startup_ns) + " of its first CUDA call; the calls after are at their steady pace";
    for (auto& [v, op] : by) {
      double n = a.num.at("op_" + std::to_string(op) + "_calls");
      d.evidence.push_back(num(n, 0) + " slow " + op_name(op) + " at start-up, " + format_duration_ns(static_cast<int64_t>(v)) +
                           " above the steady-state p50");
    }
    if (d.severity == "HIGH") d.severity = "MEDIUM";  // a one-time cost
    if (d.impact < 0.02 && d.severity == "MEDIUM") d.severity = "LOW";
    d.recommendation = "One-time start-up cost: warm up (a few untimed steps) before measuring, ship cubins for this GPU so "
                       "nothing is JIT-compiled, and set CUDA_MODULE_LOADING=LAZY to load kernels on first use.";
  } else {  // unknown
    d.severity = "LOW";
    double dstate = a.num.count("d_state_no_evidence") ? a.num.at("d_state_no_evidence") : 0;
    d.summary = victim + ": " + std::to_string(a.calls) + " slow calls lost " + lost +
                (dstate > 0 ? " in D state with no block I/O, page-allocation burst or OOM in the trace"
                            : " with no host cause in the trace (no preemption, I/O, lock, memory or network event)") +
                "; evidence is weak";
    d.evidence.push_back("outliers against the robust baseline (>= 2x p50 and > p50 + 6 robust sigmas)");
    d.recommendation = "Evidence is weak: trace with user stacks enabled and look at the GPU side (Nsight Systems), "
                       "or widen the trace (another process, another host) to find what these calls wait for.";
  }
  if (d.impact < kMinImpact && a.cause != "cold_start") return;
  if (a.cause == "unknown" && d.impact < 0.005) return;
  d.evidence.push_back(lost + " lost in total, " + pct(d.impact) + " of the " + format_duration_ns(c.window_ns) + " analyzed");
  op_stats(c, d);
  emit(c, std::move(d));
}

void build_stragglers(Ctx& c) {
  State& s = c.s;
  for (auto& [key, a] : s.stragglers) {
    auto cm = s.comms.find(a.comm);
    if (cm == s.comms.end()) continue;
    int64_t entered = cm->second.entries_by_pid.count(a.pid) ? cm->second.entries_by_pid.at(a.pid) : 0;
    size_t members = cm->second.entries_by_pid.size();
    if (a.late < 3 || entered == 0 || members < 2) continue;
    double late_share = static_cast<double>(a.late) / static_cast<double>(entered);
    if (late_share < std::max(0.4, 1.5 / static_cast<double>(members))) continue;
    Doc d;
    d.cause = "nccl_straggler";
    d.id = "s" + std::to_string(s.session_id) + "-nccl_straggler-" + std::to_string(a.pid) + "-comm" + [&] {
      char b[24];
      std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(a.comm));
      return std::string(b);
    }();
    uint32_t victim = 0;
    int64_t vwait = -1;
    for (auto& [pid, w] : a.victims_wait)
      if (w > vwait) {
        vwait = w;
        victim = pid;
      }
    d.pid = victim;
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
    d.slow_share = late_share;
    d.timeline = a.example;
    double pre_share = a.late ? static_cast<double>(a.preempted) / static_cast<double>(a.late) : 0;
    const PartyAcc* pre = top_party(a.preempters, a.pid, false);
    int64_t pre_total = 0;
    for (auto& [k, p] : a.preempters) pre_total += p.ns;
    std::string rank = "rank " + std::to_string(a.rank) + " (pid " + std::to_string(a.pid) + ")";
    std::string own;
    std::string own_cause;
    if (pre && pre_share >= 0.25) {
      own_cause = "cpu_contention";
      own = "; its thread was preempted by " + s.comm_of(pre->pid) + " (pid " + std::to_string(pre->pid) + ") in " +
            pct(pre_share) + " of its late entries";
    } else if (a.own_d_ns > a.own_runnable_ns && a.own_d_ns > a.own_on_cpu_ns / 2) {
      own_cause = "io_wait";
      own = "; its thread was in D state (I/O) before entering";
    } else if (a.own_sleep_ns > a.own_on_cpu_ns) {
      own_cause = "sleeping";
      own = "; its thread slept (S) before entering — it waited on something of its own";
    } else {
      own_cause = "on_cpu";
      own = "; its thread was on-CPU before entering: its own host work (input pipeline, Python) is slower";
    }
    std::string victims;
    for (auto& [pid, w] : a.victims_wait) victims += (victims.empty() ? "" : ", ") + std::to_string(pid);
    d.summary = rank + " entered " + d.op + " last in " + pct(late_share) + " of " + with_commas(entered) + " collectives, " +
                format_duration_ns(static_cast<int64_t>(d.p50_us * 1000)) + " after the others (median); the other ranks waited " +
                format_duration_ns(a.wait_ns) + " in total" + own;
    d.culprit = {{"pid", a.pid}, {"comm", s.comm_of(a.pid)}, {"rank", a.rank}, {"late_share", std::round(late_share * 1000) / 1000},
                 {"own_cause", own_cause}};
    if (pre && own_cause == "cpu_contention")
      d.culprit["preempted_by"] = {{"pid", pre->pid}, {"comm", s.comm_of(pre->pid)},
                                   {"share", std::round(pre_share * 1000) / 1000}};
    d.evidence.push_back("communicator " + [&] {
      char b[24];
      std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(a.comm));
      return std::string(b);
    }() + ", " + std::to_string(members) + " local ranks (nranks " + std::to_string(a.nranks) + "); collectives matched by (comm, seq)");
    d.evidence.push_back(rank + " was last by >= 1 ms in " + with_commas(a.late) + " of " + with_commas(entered) +
                         " collectives; lateness p50 " + format_duration_ns(static_cast<int64_t>(d.p50_us * 1000)) + ", p99 " +
                         format_duration_ns(static_cast<int64_t>(d.p99_us * 1000)));
    d.victims = json::array();
    for (auto& [pid, w] : a.victims_wait) d.victims.push_back({{"pid", pid}, {"comm", s.comm_of(pid)}, {"wait_us", w / 1000}});
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
                       (own_cause == "cpu_contention" ? " — keep " + s.comm_of(pre->pid) + " off CPU " + cpus +
                                                            " (pin the rank to dedicated cores, run it at nice 19) "
                                                      : own_cause == "on_cpu" ? " — speed up its input pipeline (more DataLoader workers) "
                                                                              : " — remove what it waits on before the collective ") +
                       "so it enters collectives with the others.";
    emit(c, std::move(d));
  }
}

void build_transfers(Ctx& c) {
  State& s = c.s;
  for (auto& [key, t] : s.transfers) {
    auto sp = s.spans.find(t.tid);
    if (sp == s.spans.end() || t.copies < 5) continue;
    int64_t wall = std::max<int64_t>(1, sp->second.last_end_ns - sp->second.first_ns);
    double share = static_cast<double>(t.copy_ns) / static_cast<double>(wall);
    if (share < 0.25) continue;
    Doc d;
    d.cause = "transfer_bound";
    d.id = "s" + std::to_string(s.session_id) + "-transfer_bound-" + std::to_string(t.pid) + "-" + op_name(t.op) + "-t" +
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
    d.severity = share >= 0.75 ? "HIGH" : "MEDIUM";
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

void build_allocator(Ctx& c) {
  State& s = c.s;
  for (auto& [pid, calls] : s.allocs) {
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
    for (const auto& a : calls) {
      by_op[a.op] += a.dur;
      for (const auto& b : bursts)
        if (a.ts >= b.from && a.ts < b.to) {
          ++burst_calls[a.op];
          if (a.stack) ++stacks[a.stack];
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
    d.cause = "allocator";
    d.id = "s" + std::to_string(s.session_id) + "-allocator-" + std::to_string(pid);
    d.pid = pid;
    uint16_t top = 0;
    int64_t topns = -1;
    for (auto& [op, ns] : by_op)
      if (ns > topns) {
        topns = ns;
        top = op;
      }
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

}  // namespace

Result<std::vector<ChainRecord>> build_chains(Correlator::State& s, sqlite3* db) {
  Ctx c{s, db, std::max<int64_t>(1, s.analyzed_to - s.analyzed_from), {}};
  if (s.analyzed_to == INT64_MIN) return std::vector<ChainRecord>{};
  for (auto& [id, a] : s.chains) build_call_chain(c, a);
  build_stragglers(c);
  build_transfers(c);
  build_allocator(c);
  std::stable_sort(c.out.begin(), c.out.end(), [](const auto& a, const auto& b) {
    int ra = severity_rank(a.first.severity), rb = severity_rank(b.first.severity);
    if (ra != rb) return ra > rb;
    return a.second > b.second;
  });
  std::vector<ChainRecord> out;
  for (auto& [r, impact] : c.out) out.push_back(std::move(r));
  return out;
}

}  // namespace causeway
