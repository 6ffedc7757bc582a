#include "exporters/report_lanes.h"

#include "exporters/report_source.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "diagnosis/thread_timeline.h"
#include "common/sanitize.h"
#include "common/units.h"

namespace causeway {

const char* mark_class(Mark m) {
  switch (m) {
    case Mark::on_cpu: return "on_cpu";
    case Mark::runnable: return "runnable";
    case Mark::sleeping: return "sleeping";
    case Mark::blocked: return "blocked";
    case Mark::culprit: return "culprit";
    case Mark::other: return "other";
    case Mark::idle: return "idle";
    case Mark::call: return "call";
    case Mark::slow_call: return "slow_call";
    case Mark::io: return "io";
    case Mark::waiting_token: return "waiting_token";
    case Mark::streaming: return "streaming";
    case Mark::unknown: return "unknown";
  }
  return "unknown";
}

const char* mark_meaning(Mark m) {
  switch (m) {
    case Mark::on_cpu: return "victim on CPU";
    case Mark::runnable: return "victim runnable, waiting for a CPU";
    case Mark::sleeping: return "asleep (waiting on something)";
    case Mark::blocked: return "blocked in the kernel (I/O, reclaim)";
    case Mark::culprit: return "culprit on CPU";
    case Mark::other: return "another task on CPU";
    case Mark::idle: return "CPU idle";
    case Mark::call: return "CUDA / NCCL call";
    case Mark::slow_call: return "the worst call";
    case Mark::io: return "I/O and memory events";
    case Mark::waiting_token: return "request waiting for its first token";
    case Mark::streaming: return "request streaming tokens";
    case Mark::unknown: return "state not in the trace";
  }
  return "";
}

namespace {

using json = nlohmann::json;

// Longest stretch before the window searched for a thread's state at its start: a thread that
// has not switched for this long is shown as "state not in the trace" rather than scanned for.
constexpr int64_t kPriorLookbackNs = 5'000'000'000;
constexpr int64_t kMinPadNs = 200'000;

struct Focus {
  uint32_t pid = 0, tid = 0;
  int64_t from = 0, to = 0;
  std::string label;
  bool call = false;
};

class Names {
 public:
  explicit Names(LaneSource& src) : src_(src) {}
  std::string comm(uint32_t pid, uint32_t tid = 0) {
    if (pid == 0 && tid == 0) return "idle";
    auto key = (static_cast<uint64_t>(pid) << 32) | tid;
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    std::string c = src_.comm(pid, tid);
    c = c.empty() ? "pid " + std::to_string(pid) : sanitize_untrusted(c, 48);
    return cache_[key] = c;
  }

 private:
  LaneSource& src_;
  std::unordered_map<uint64_t, std::string> cache_;
};

uint32_t u32(const json& j, const char* k) {
  return j.contains(k) && j[k].is_number_integer() ? static_cast<uint32_t>(j[k].get<int64_t>()) : 0;
}

// The claimed call that lost the most to this chain (call_causes, written by the correlator).
Focus focus_of(const ClaimedCall& c, bool worst) {
  Focus f;
  f.pid = c.pid;
  f.tid = c.tid;
  const std::string op = sanitize_untrusted(c.op, 80);
  // A gap row is the host stall before the call starts: draw the stall and the call.
  f.from = c.gap ? c.ts - c.lost : c.ts;
  f.to = c.ts + c.dur;
  f.call = true;
  f.label = c.gap ? "stall of " + format_duration_ns(c.lost) + " before " + op + " (worst)"
                  : op + " " + format_duration_ns(c.dur) + (worst ? " (worst call)" : " (longest call)");
  return f;
}

// Chains with no claimed call (session causes): the moment their timeline names, at most 2 s.
std::optional<Focus> timeline_focus(const json& chain) {
  if (!chain.contains("timeline") || !chain["timeline"].is_array() || chain["timeline"].empty()) return std::nullopt;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& t : chain["timeline"]) {
    if (!t.contains("ts_ns") || !t["ts_ns"].is_number_integer()) continue;
    first = std::min(first, t["ts_ns"].get<int64_t>());
  }
  if (first == INT64_MAX) return std::nullopt;
  for (const auto& t : chain["timeline"])
    if (t.contains("ts_ns") && t["ts_ns"].is_number_integer() && t["ts_ns"].get<int64_t>() <= first + 2'000'000'000)
      last = std::max(last, t["ts_ns"].get<int64_t>());
  Focus f;
  f.pid = u32(chain, "pid");
  f.tid = u32(chain, "tid");
  f.from = first;
  f.to = std::max(last, first + 1'000'000);
  f.label = "the chain's timeline";
  return f;
}

using Sched = SchedRow;

Mark off_mark(int64_t prev_state) {
  switch (off_cpu_state(prev_state)) {
    case OffCpuState::runnable: return Mark::runnable;
    case OffCpuState::sleeping: return Mark::sleeping;
    case OffCpuState::uninterruptible: return Mark::blocked;
    default: return Mark::unknown;
  }
}

void push(Lane& lane, int64_t from, int64_t to, Mark m, std::string label) {
  if (to < from) return;
  if (lane.segments.size() >= kMaxSegments) {
    ++lane.dropped;
    return;
  }
  lane.segments.push_back({from, to, m, std::move(label)});
}

}  // namespace

Lane where_ran(const std::vector<SchedRow>& rows, uint32_t pid, uint32_t tid, int64_t from, int64_t to, std::string name) {
  Lane lane;
  lane.kind = LaneKind::culprit;
  lane.name = std::move(name);
  auto is = [&](uint32_t p, uint32_t t) { return pid && p == pid && (!tid || t == tid); };
  std::map<int32_t, int64_t> running;  // cpu → since
  std::map<int32_t, bool> seen;
  for (const auto& r : rows) {
    // The first switch on a CPU says who ran before it: no lookback needed.
    if (!seen[r.cpu]) {
      seen[r.cpu] = true;
      if (is(r.prev_pid, r.prev_tid)) running[r.cpu] = from;
    }
    if (is(r.prev_pid, r.prev_tid)) {
      auto it = running.find(r.cpu);
      if (it != running.end()) {
        push(lane, it->second, r.ts_ns, Mark::culprit, "on CPU " + std::to_string(r.cpu));
        running.erase(it);
      }
    }
    if (is(r.next_pid, r.next_tid)) running[r.cpu] = r.ts_ns;
  }
  for (auto& [cpu, since] : running) push(lane, since, to, Mark::culprit, "on CPU " + std::to_string(cpu));
  std::sort(lane.segments.begin(), lane.segments.end(),
            [](const LaneSegment& a, const LaneSegment& b) { return a.from_ns < b.from_ns; });
  if (lane.segments.empty()) lane.segments.push_back({from, to, Mark::unknown, "not on a CPU in this window"});
  return lane;
}

namespace {

class Builder {
 public:
  Builder(LaneSource& src, const json& chain, const Focus& f) : src_(src), names_(src), f_(f) {
    const int64_t pad = std::max((f.to - f.from) / 2, kMinPadNs);
    d_.from_ns = f.from - pad;
    d_.to_ns = f.to + pad;
    d_.focus_from = f.from;
    d_.focus_to = f.to;
    d_.focus_label = f.label;
    d_.focus_is_call = f.call;
    if (chain.contains("culprit") && chain["culprit"].is_object()) {
      culprit_pid_ = u32(chain["culprit"], "pid");
      culprit_tid_ = u32(chain["culprit"], "tid");
      culprit_cpu_ = chain["culprit"].contains("cpu") && chain["culprit"]["cpu"].is_number_integer()
                         ? chain["culprit"]["cpu"].get<int>()
                         : -1;
    }
    // Another thread of the victim's process is a culprit by its tid; the process itself is not.
    if (culprit_pid_ == f.pid && !culprit_tid_) culprit_pid_ = 0;
    // A culprit on another host than the one drawn (the fleet) has no rows here.
    if (chain.contains("culprit") && chain["culprit"].is_object() && chain["culprit"].contains("host") &&
        chain["culprit"]["host"].is_string() && !src.host().empty() && chain["culprit"]["host"].get<std::string>() != src.host())
      culprit_pid_ = 0, culprit_cpu_ = -1;
  }

  Result<SwimlaneData> build() {
    auto rows = src_.sched(d_.from_ns, d_.to_ns, kMaxLaneRows);
    if (!rows) return rows.error();
    if (f_.tid) {
      auto r = victim_lane(*rows);
      if (!r) return r.error();
    }
    int cpu = pick_cpu(*rows);
    if (cpu >= 0) cpu_lane(*rows, cpu);
    if (culprit_pid_) culprit_lane(*rows);
    if (auto r = call_lanes(); !r) return r.error();
    return std::move(d_);
  }

 private:
  LaneSource& src_;
  Names names_;
  Focus f_;
  SwimlaneData d_;
  uint32_t culprit_pid_ = 0, culprit_tid_ = 0;  // tid 0: any thread of the culprit process
  int culprit_cpu_ = -1;

  bool is_culprit(uint32_t pid, uint32_t tid) const {
    return culprit_pid_ && pid == culprit_pid_ && (!culprit_tid_ || tid == culprit_tid_);
  }
  int preempted_cpu_ = -1;  // the CPU the victim lost for the longest runnable stretch

  std::string who(uint32_t pid, uint32_t tid) {
    return pid == 0 && tid == 0 ? std::string("idle") : names_.comm(pid, tid) + " (pid " + std::to_string(pid) + ")";
  }

  // What a switch-out of the victim means, for its label.
  std::string off_label(const Sched& r) {
    switch (off_mark(r.prev_state)) {
      case Mark::runnable: return "preempted by " + who(r.next_pid, r.next_tid) + " on CPU " + std::to_string(r.cpu);
      case Mark::blocked: return "blocked (D)";
      case Mark::sleeping: return "asleep (S)";
      default: return "off CPU";
    }
  }

  // The victim's state when the window opens: its last switch before it.
  Result<std::optional<Sched>> prior_switch(uint32_t tid) { return src_.prior_switch(tid, d_.from_ns, d_.from_ns - kPriorLookbackNs); }

  Result<std::vector<int64_t>> wakeups(uint32_t tid) { return src_.wakeups(tid, d_.from_ns, d_.to_ns, kMaxLaneRows); }

  Result<void> victim_lane(const std::vector<Sched>& rows) {
    const uint32_t tid = f_.tid;
    Lane lane;
    lane.kind = LaneKind::victim_thread;
    lane.name = names_.comm(f_.pid, tid) + " tid " + std::to_string(tid);
    Mark cur = Mark::unknown;
    std::string cur_label;
    const Sched* first = nullptr;
    for (const auto& r : rows)
      if (r.prev_tid == tid || r.next_tid == tid) {
        first = &r;
        break;
      }
    if (first && first->prev_tid == tid) {
      cur = Mark::on_cpu;
      cur_label = "on CPU " + std::to_string(first->cpu);
    } else {
      auto p = prior_switch(tid);
      if (!p) return p.error();
      if (*p && (*p)->next_tid == tid) {
        cur = Mark::on_cpu;
        cur_label = "on CPU " + std::to_string((*p)->cpu);
      } else if (*p) {
        cur = off_mark((*p)->prev_state);
        cur_label = off_label(**p);
      } else {
        cur_label = "state not in the trace";
      }
    }
    auto w = wakeups(tid);
    if (!w) return w.error();
    size_t wi = 0;
    int64_t seg_from = d_.from_ns;
    int32_t off_cpu = -1;
    auto close = [&](int64_t at) {
      // A wakeup inside a sleep turns the rest of it into waiting for a CPU (wakeup latency).
      if (cur == Mark::sleeping || cur == Mark::blocked) {
        while (wi < w->size() && (*w)[wi] < seg_from) ++wi;
        if (wi < w->size() && (*w)[wi] <= at) {
          push(lane, seg_from, (*w)[wi], cur, cur_label);
          push(lane, (*w)[wi], at, Mark::runnable, "woken, waiting for a CPU");
          seg_from = at;
          return;
        }
      }
      if (cur == Mark::runnable && off_cpu >= 0 && at - seg_from > best_runnable_) {
        best_runnable_ = at - seg_from;
        preempted_cpu_ = off_cpu;
      }
      push(lane, seg_from, at, cur, cur_label);
      seg_from = at;
    };
    for (const auto& r : rows) {
      if (r.prev_tid == tid) {
        close(r.ts_ns);
        cur = off_mark(r.prev_state);
        off_cpu = r.cpu;
        cur_label = off_label(r);
      } else if (r.next_tid == tid) {
        close(r.ts_ns);
        cur = Mark::on_cpu;
        cur_label = "on CPU " + std::to_string(r.cpu);
        if (off_cpu < 0) off_cpu = r.cpu;
      }
    }
    close(d_.to_ns);
    if (preempted_cpu_ < 0) preempted_cpu_ = off_cpu;
    d_.lanes.push_back(std::move(lane));
    return {};
  }

  int pick_cpu(const std::vector<Sched>& rows) const {
    if (culprit_cpu_ >= 0) return culprit_cpu_;
    if (preempted_cpu_ >= 0) return preempted_cpu_;
    for (const auto& r : rows)
      if (r.prev_pid == f_.pid || r.next_pid == f_.pid) return r.cpu;
    // No victim thread on a CPU here (a chain over ranks): where the culprit ran.
    for (const auto& r : rows)
      if (is_culprit(r.prev_pid, r.prev_tid) || is_culprit(r.next_pid, r.next_tid)) return r.cpu;
    return -1;
  }

  Mark task_mark(uint32_t pid, uint32_t tid) const {
    if (pid == 0) return Mark::idle;
    if (is_culprit(pid, tid)) return Mark::culprit;
    if (pid == f_.pid) return Mark::on_cpu;
    return Mark::other;
  }

  void cpu_lane(const std::vector<Sched>& rows, int cpu) {
    Lane lane;
    lane.kind = LaneKind::cpu;
    lane.name = "CPU " + std::to_string(cpu);
    bool started = false;
    uint32_t pid = 0, tid = 0;
    int64_t seg_from = d_.from_ns;
    for (const auto& r : rows) {
      if (r.cpu != cpu) continue;
      // The first switch on the CPU says who ran before it: no lookback needed.
      if (!started) {
        pid = r.prev_pid;
        tid = r.prev_tid;
        started = true;
      }
      push(lane, seg_from, r.ts_ns, task_mark(pid, tid), who(pid, tid));
      pid = r.next_pid;
      tid = r.next_tid;
      seg_from = r.ts_ns;
    }
    if (!started) return;  // no switch there in the window: nothing the trace can say
    push(lane, seg_from, d_.to_ns, task_mark(pid, tid), who(pid, tid));
    d_.lanes.push_back(std::move(lane));
  }

  void culprit_lane(const std::vector<Sched>& rows) {
    d_.lanes.push_back(where_ran(rows, culprit_pid_, culprit_tid_, d_.from_ns, d_.to_ns, names_.comm(culprit_pid_, culprit_tid_) + " (culprit)"));
  }

  Result<void> call_lanes() {
    // Calls that started up to one window before it can still be running inside it.
    const int64_t q_from = d_.from_ns - (d_.to_ns - d_.from_ns);
    auto rows = src_.calls(q_from, d_.to_ns, f_.pid, culprit_pid_ ? culprit_pid_ : f_.pid, kMaxLaneRows);
    if (!rows) return rows.error();
    Lane calls, io;
    calls.kind = LaneKind::calls;
    calls.name = f_.tid ? "calls, tid " + std::to_string(f_.tid) : "calls, pid " + std::to_string(f_.pid);
    io.kind = LaneKind::io;
    io.name = "I/O, memory";
    for (const CallRow& e : *rows) {
      const int64_t ts = e.ts, dur = e.dur;
      if (ts + dur < d_.from_ns) continue;
      const bool gpu_call = e.source == "cuda" || e.source == "driver" || e.source == "nccl";
      if (gpu_call && e.pid == f_.pid && (!f_.tid || e.tid == f_.tid)) {
        const bool worst = d_.focus_is_call && ts <= d_.focus_to && ts + dur >= d_.focus_to && ts >= d_.focus_from;
        push(calls, ts, ts + dur, worst ? Mark::slow_call : Mark::call, sanitize_untrusted(e.op, 64));
      } else if (e.source == "io" || e.source == "mem" || e.source == "net") {
        push(io, ts, ts + dur, Mark::io, sanitize_untrusted(e.op, 48) + " by " + names_.comm(e.pid, e.tid));
      }
    }
    if (!calls.segments.empty()) d_.lanes.push_back(std::move(calls));
    if (!io.segments.empty()) d_.lanes.push_back(std::move(io));
    return {};
  }

  int64_t best_runnable_ = 0;
};

}  // namespace

Result<std::optional<SwimlaneData>> load_swimlanes(LaneSource& src, const json& chain) {
  if (chain.value("level", "") == "request") return load_request_lanes(src, chain);
  std::optional<Focus> f;
  if (chain.contains("id") && chain["id"].is_string()) {
    auto w = src.worst_claim(chain["id"].get<std::string>());
    if (!w) return w.error();
    if (*w) f = focus_of(**w, true);
  }
  if (!f) f = timeline_focus(chain);
  // Nothing claimed and no timeline (the fleet's cross-host straggler): the victim's longest
  // call of the chain's op in the chain's window.
  if (!f && chain.contains("window") && chain["window"].is_object() && chain.contains("op") && chain["op"].is_string() &&
      u32(chain, "pid")) {
    auto l = src.longest_call(u32(chain, "pid"), chain["op"].get<std::string>(), chain["window"].value("from_ns", int64_t{0}),
                              chain["window"].value("to_ns", int64_t{0}));
    if (!l) return l.error();
    if (*l) f = focus_of(**l, false);
  }
  if (!f) return std::optional<SwimlaneData>{};
  if (!f->tid) f->tid = u32(chain, "tid");
  if (!f->pid) f->pid = u32(chain, "pid");
  auto d = Builder(src, chain, *f).build();
  if (!d) return d.error();
  return std::optional<SwimlaneData>{std::move(*d)};
}

}  // namespace causeway
