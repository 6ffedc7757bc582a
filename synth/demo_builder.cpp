#include "synth/demo_builder.h"

namespace causeway::synth {
namespace {

uint64_t fnv1a(const std::vector<std::string>& frames) {
  uint64_t h = 1469598103934665603ULL;
  for (const auto& f : frames) {
    for (unsigned char c : f) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ 0xFF) * 1099511628211ULL;
  }
  return (h & 0x7FFFFFFFFFFFFFFFULL) | 1;  // positive (stored as INTEGER) and never 0
}

}  // namespace

void DemoBuilder::process(uint32_t pid, uint32_t ppid, const std::string& comm, const std::string& cmdline,
                          const std::string& exe, int64_t first_ns, int64_t last_ns, uint64_t cgroup_id,
                          const std::string& container_id, const std::string& cgroup_path) {
  ProcessRecord p;
  p.pid = pid;
  p.ppid = ppid;
  p.comm = comm;
  p.cmdline = cmdline;
  p.exe = exe;
  p.first_ns = first_ns;
  p.last_ns = last_ns;
  p.cgroup_id = cgroup_id;
  p.container_id = container_id;
  p.cgroup_path = cgroup_path;
  w_.push_meta(p);
  thread(pid, pid, comm);
}

void DemoBuilder::thread(uint32_t tid, uint32_t pid, const std::string& comm) {
  w_.push_meta(ThreadRecord{tid, pid, comm});
}

uint64_t DemoBuilder::stack(const std::vector<std::string>& frames) {
  uint64_t h = fnv1a(frames);
  w_.push_meta(StackRecord{h, frames});
  return h;
}

void DemoBuilder::call(uint32_t pid, uint32_t tid, uint16_t op, int64_t ts, int64_t dur, std::array<int64_t, 6> a,
                       int64_t ret, uint64_t stack_id, int32_t cpu) {
  CallRecord r;
  r.ts_ns = ts;
  r.dur_ns = dur;
  r.pid = pid;
  r.tid = tid;
  r.op = op;
  r.cpu = cpu;
  r.ret = ret;
  r.a = a;
  r.stack_hash = stack_id;
  w_.push_wait(r);
  ++calls_;
}

void DemoBuilder::host_event(uint32_t pid, uint32_t tid, uint16_t op, int64_t ts, int64_t dur,
                             std::array<int64_t, 6> a, int32_t cpu) {
  call(pid, tid, op, ts, dur, a, 0, 0, cpu);
}

void DemoBuilder::preempt(uint32_t tid, uint32_t pid, int32_t cpu, int64_t from, int64_t to, uint32_t by_tid,
                          uint32_t by_pid) {
  SwitchRecord out{from, cpu, tid, pid, 120, kRunnable, by_tid, by_pid, 120};
  SwitchRecord back{to, cpu, by_tid, by_pid, 120, kRunnable, tid, pid, 120};
  w_.push_wait(out);
  w_.push_wait(back);
  sched_ += 2;
}

void DemoBuilder::block(uint32_t tid, uint32_t pid, int32_t cpu, int64_t from, int64_t to, int64_t state,
                        uint32_t waker_tid, uint32_t waker_pid) {
  // swapper (tid 0) runs while the CPU idles; the wakeup lands a few µs before the switch-in.
  SwitchRecord out{from, cpu, tid, pid, 120, state, 0, 0, 120};
  WakeupRecord wake{to - 4 * kUs, tid, pid, waker_tid, waker_pid, cpu};
  SwitchRecord back{to, cpu, 0, 0, 120, kRunnable, tid, pid, 120};
  w_.push_wait(out);
  w_.push_wait(wake);
  w_.push_wait(back);
  sched_ += 3;
}

}  // namespace causeway::synth
