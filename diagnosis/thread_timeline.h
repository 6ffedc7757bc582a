// Per-thread on-CPU/off-CPU timelines rebuilt from sched_switch and sched_wakeup records.
//
// A traced thread T is off-CPU from the switch that takes it off (prev_tid = T) to the next
// switch that puts it back (next_tid = T), on whatever CPU. The switch-out's prev_state says
// why: 0 = still runnable (preempted: someone else got the CPU), 1 = S (voluntary sleep: a
// lock, a condition, a GPU interrupt wait), 2 = D (uninterruptible: I/O, reclaim). The last
// wakeup of T inside the interval names the waker. Who ran on T's CPU meanwhile comes from
// the switch records on that CPU: the switch-out's next task, then each later switch there.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace causeway {

struct SchedRow {
  int64_t ts_ns = 0;
  int32_t cpu = 0;
  uint32_t prev_tid = 0, prev_pid = 0;
  int64_t prev_state = 0;
  uint32_t next_tid = 0, next_pid = 0;
};

struct WakeRow {
  int64_t ts_ns = 0;
  uint32_t tid = 0, pid = 0;
  uint32_t waker_tid = 0, waker_pid = 0;
};

enum class OffCpuState : uint8_t { runnable, sleeping, uninterruptible, other };

// prev_state bits as the kernel reports them (TASK_RUNNING 0, INTERRUPTIBLE 1, UNINTERRUPTIBLE 2).
OffCpuState off_cpu_state(int64_t prev_state);
const char* state_letter(OffCpuState s);  // "R", "S", "D", "?"

struct OffCpuInterval {
  int64_t from_ns = 0, to_ns = 0;  // to_ns = end of the loaded data when T never came back
  int32_t cpu = 0;                 // CPU T left
  int32_t in_cpu = -1;             // CPU T came back on (-1: not seen)
  OffCpuState state = OffCpuState::other;
  uint32_t next_tid = 0, next_pid = 0;  // who took the CPU at the switch-out
  bool woken = false;              // a wakeup of T was seen inside the interval
  // T's switch-out record was lost (a full ring): its CPU ran T, then another task handed the
  // CPU back to T. The interval spans from the CPU's last record to the switch back; runnable
  // unless a wakeup of T inside it shows it slept.
  bool inferred = false;
  uint32_t waker_tid = 0, waker_pid = 0;
  int64_t wake_ns = 0;
  // The part of the interval T spent runnable, waiting for a CPU: all of it when preempted,
  // else from its wakeup to the switch-in (wakeup latency).
  int64_t runnable_from() const { return state == OffCpuState::runnable ? from_ns : woken ? wake_ns : to_ns; }
};

// Off-CPU time of a thread inside [from, to], split by state. runnable_ns counts both
// preemption (switched out runnable) and wakeup latency (woken, waiting for a CPU); the
// sleeping/uninterruptible parts end at the wakeup.
struct OffCpuSummary {
  int64_t runnable_ns = 0, sleeping_ns = 0, uninterruptible_ns = 0, other_ns = 0;
  // Of runnable_ns, the wakeup latency that followed a D-state wait: the thread would not have
  // waited for a CPU had it not blocked on I/O first (arbitration charges it to the D cause).
  int64_t runnable_after_d_ns = 0;
  int intervals = 0;
  int64_t total() const { return runnable_ns + sleeping_ns + uninterruptible_ns + other_ns; }
};

struct RunShare {
  uint32_t pid = 0, tid = 0;  // 0/0 = the CPU idled (swapper)
  int64_t ns = 0;
};

class ThreadTimelines {
 public:
  // rows and wakeups in any order (read in time order; copied and sorted only when they are
  // not, which the correlator's buffers always are); `data_end_ns` closes intervals still open.
  void build(const std::vector<SchedRow>& rows, const std::vector<WakeRow>& wakeups, int64_t data_end_ns);

  // Off-CPU intervals whose state and CPU the data does not say (an imported trace that
  // stores only "thread T was off CPU for d", docs/IMPORT.md): state `other`, so no host cause
  // claims them, but they are not on-CPU time either. Call after build(); intervals of a
  // thread that already has switch records are ignored.
  void add_opaque(std::vector<std::pair<uint32_t, std::pair<int64_t, int64_t>>> tid_from_to);

  // Off-CPU intervals of tid, sorted by from_ns; empty when it never left a CPU.
  std::span<const OffCpuInterval> intervals(uint32_t tid) const;
  // The intervals overlapping [from, to] (clipped sums in the summary).
  OffCpuSummary off_cpu_in(uint32_t tid, int64_t from, int64_t to) const;
  std::span<const OffCpuInterval> overlapping(uint32_t tid, int64_t from, int64_t to) const;

  // Who ran on `cpu` over [from, to], from the switch records there, by thread, in time order
  // of first appearance. The caller merges by pid as it needs.
  void who_ran(int32_t cpu, int64_t from, int64_t to, std::vector<RunShare>& out) const;

  size_t threads() const { return by_tid_.size(); }

 private:
  struct CpuSwitch {
    int64_t ts_ns;
    uint32_t next_tid, next_pid;
    uint32_t prev_tid, prev_pid;  // who held the CPU up to this switch
  };
  std::unordered_map<uint32_t, std::vector<OffCpuInterval>> by_tid_;
  std::unordered_map<int32_t, std::vector<CpuSwitch>> by_cpu_;
};

}  // namespace causeway
