#include "diagnosis/data_workers.h"

#include <algorithm>
#include <string_view>

namespace causeway {
namespace {

// How far up the parent chain a worker may sit: torchrun -> trainer -> DataLoader worker is
// two hops from the launcher; a worker spawning a decoder helper adds one more.
constexpr int kMaxGenerations = 4;
constexpr std::string_view kPyTorchWorker = "pt_data_worker";

std::string_view comm_view(const CorrelatorState& s, uint32_t pid) {
  if (auto it = s.procs.find(pid); it != s.procs.end() && !it->second.comm.empty()) return it->second.comm;
  if (auto t = s.threads.find(pid); t != s.threads.end()) return t->second.second;
  return {};
}

// The sleep of `relay` that ended last at or before `at` (the relay was woken, ran, then woke
// the waiting thread), when a data worker of `victim_pid` ended it.
const OffCpuInterval* relayed_from_worker(const CorrelatorState& s, const ThreadTimelines& tl, uint32_t relay,
                                          uint32_t victim_pid, int64_t at) {
  auto ivs = tl.intervals(relay);
  auto it = std::upper_bound(ivs.begin(), ivs.end(), at, [](int64_t t, const OffCpuInterval& iv) { return t < iv.to_ns; });
  if (it == ivs.begin()) return nullptr;
  const OffCpuInterval& iv = *(it - 1);
  if (iv.state != OffCpuState::sleeping || !iv.woken) return nullptr;
  return is_data_worker(s, iv.waker_pid, victim_pid) ? &iv : nullptr;
}

}  // namespace

bool is_data_worker(const CorrelatorState& s, uint32_t pid, uint32_t victim_pid) {
  if (pid == 0 || pid == victim_pid || s.is_kernel_thread(pid)) return false;
  if (comm_view(s, pid).substr(0, kPyTorchWorker.size()) == kPyTorchWorker) return true;
  uint32_t p = pid;
  for (int i = 0; i < kMaxGenerations; ++i) {
    auto it = s.procs.find(p);
    if (it == s.procs.end() || it->second.ppid <= 0) return false;
    p = static_cast<uint32_t>(it->second.ppid);
    if (p == victim_pid) return true;
  }
  return false;
}

std::vector<WorkerWait> data_worker_waits(const CorrelatorState& s, const ThreadTimelines& tl, uint32_t tid, uint32_t pid,
                                          int64_t a, int64_t b) {
  std::vector<WorkerWait> out;
  for (const OffCpuInterval& iv : tl.overlapping(tid, a, b)) {
    if (iv.state != OffCpuState::sleeping || !iv.woken) continue;
    const int64_t from = std::max(iv.from_ns, a);
    const int64_t ns = std::min(iv.runnable_from(), b) - from;
    if (ns <= 0) continue;
    if (iv.waker_pid != pid) {
      if (is_data_worker(s, iv.waker_pid, pid)) out.push_back({iv.waker_pid, 0, from, iv.wake_ns, ns});
    } else if (iv.waker_tid != tid && iv.waker_tid != 0) {
      if (const OffCpuInterval* r = relayed_from_worker(s, tl, iv.waker_tid, pid, iv.wake_ns))
        out.push_back({r->waker_pid, iv.waker_tid, from, r->wake_ns, ns});
    }
  }
  return out;
}

WorkerActivity worker_activity(const CorrelatorState& s, const ThreadTimelines& tl, uint32_t pid, int64_t from, int64_t to) {
  WorkerActivity best;
  if (to <= from) return best;
  // A traced worker (its process row exists, so its switches are recorded) whose main thread
  // has no switch in the window never left its CPU.
  const bool traced = s.procs.count(pid) > 0;
  auto consider = [&](uint32_t tid) {
    if (tl.intervals(tid).empty() && !(traced && tid == pid)) return;
    OffCpuSummary off = tl.off_cpu_in(tid, from, to);
    WorkerActivity w;
    w.seen = true;
    w.tid = tid;
    // A wake-up wait after a D-state read belongs to the read (as in the host arbitration).
    w.io_wait_ns = off.uninterruptible_ns + off.runnable_after_d_ns;
    w.runnable_ns = off.runnable_ns - off.runnable_after_d_ns;
    w.sleep_ns = off.sleeping_ns + off.other_ns;
    w.on_cpu_ns = std::max<int64_t>(0, (to - from) - off.total());
    if (!best.seen || w.sleep_ns < best.sleep_ns) best = w;
  };
  consider(pid);
  for (const auto& [tid, owner] : s.threads)
    if (owner.first == pid && tid != pid) consider(tid);
  return best;
}

}  // namespace causeway
