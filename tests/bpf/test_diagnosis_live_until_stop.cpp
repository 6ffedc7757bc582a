// Incidents that last until the trace is stopped (issue #21, docs/DIAGNOSIS.md "The watermark
// rule"): `causeway trace` is stopped with SIGINT while the planted problem is still going on,
// so the live polls and the final pass must judge its last calls with their scheduler and
// block-I/O records, which reach the DB after the calls. Before the rule the tail of such an
// incident came out HIGH gpu_wait. Each case must find its chain and no other HIGH chain for the
// victim (cpu_contention aside in the I/O case: on a busy 2-core host preemption is real).
//   cpu hog    cw_workload pinned to CPU 0 loops launch -> spinning cudaStreamSynchronize (1 ms
//              each in the fake libcudart); 1.5 s in, cw_hog spins on CPU 0 until the end
//   fault I/O  cw_workload loops launch, cudaMemcpy, sync; the copies read a mapping of a file
//              whose page cache is dropped on every pass, so they fault and wait for the disk
// Root + BPF, else skipped (77). Loop it: tests/bpf/loop_live_incidents.sh runs these too.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "bpf/events.h"
#include "tests/bpf/diagnosis_live_support.h"

namespace causeway::test {
namespace {

constexpr int kRunMs = 7000;  // from the go signal to SIGINT

struct Stopped {
  pid_t pid = -1;
  std::string db;
  double stop_s = 0;  // SIGINT to the tracer's exit
};

// CAUSEWAY_KEEP_DB=<folder>: a copy of each trace DB goes there (until_stop.<test pid>.<n>.db)
// before the checks, so the DB of a failing run can be questioned afterwards (TempDir removes
// its own); tests/bpf/loop_live_incidents.sh sets it and keeps the copies of failed runs only.
void keep_db_copy(const std::string& db) {
  const char* keep = std::getenv("CAUSEWAY_KEEP_DB");
  if (!keep || !*keep) return;
  static int n = 0;
  const std::string to = std::string(keep) + "/until_stop." + S(::getpid()) + "." + S(++n) + ".db";
  std::filesystem::create_directories(keep);
  std::filesystem::copy_file(db, to, std::filesystem::copy_options::overwrite_existing);
  MESSAGE("trace DB kept as " << to);
}

// Starts the workload, traces it, and stops the trace kRunMs later while it still runs; then
// kills it (its cw_hog dies with it: PR_SET_PDEATHSIG).
Stopped trace_until_stop(const TempDir& dir, std::vector<std::string> args) {
  const std::string ready = dir.file("w.ready"), go = dir.file("w.go");
  args = workload(std::move(args));
  args.insert(args.end(), {"--ready-file", ready, "--wait-file", go});
  Stopped r;
  r.pid = spawn(args, dir.file("w.log"));
  struct Killer {
    pid_t pid;
    ~Killer() {
      ::kill(pid, SIGKILL);
      wait_exit(pid);
    }
  } killer{r.pid};
  wait_for_file(ready);
  Tracer t(dir, {"--pid", S(r.pid), "--lib", testprog("libcudart.so.13")});
  touch(go);
  sleep_ms(kRunMs);
  INFO(read_file(dir.file("w.log")));
  REQUIRE(::kill(r.pid, 0) == 0);  // the incident is still going on
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(t.stop(SIGINT) == 0);
  r.stop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.db = t.db();
  keep_db_copy(r.db);
  return r;
}

// Every HIGH chain of the victim has one of `allowed` causes.
void check_no_other_high(const json& chains, pid_t pid, const std::set<std::string>& allowed) {
  for (const json& c : chains)
    if (c.value("pid", 0) == pid && c.value("severity", "") == "HIGH") {
      INFO(c.value("summary", ""));
      CHECK(allowed.count(c.value("cause", "")) == 1);
    }
}

// The off-CPU time of `tid` inside [from, to) by the stored switch rows: switched out runnable
// (state 0) or asleep (S, D), to its switch back in. A switch-in is missing when the thread is
// seen leaving a CPU again while out, or still out where its call returned (it ran to return):
// on the development VM the kernel runs no BPF program while its init process (pid 1, the
// VM's agent) is current, so when that agent preempts the thread its hand-back is not recorded
// (docs/DIAGNOSIS.md "Engine", the timeline row). What the rows prove then is the wait up to
// the CPU's last record (another task was put there), the reading diagnosis/thread_timeline.cpp
// takes too; counting it to the call's end counted the thread runnable while it ran to return.
struct InCallOffCpu {
  int64_t runnable = 0, asleep = 0;
};
InCallOffCpu off_cpu_in_call(const std::string& db, int64_t tid, int64_t from, int64_t to) {
  const auto sw = q_rows(db, "SELECT ts_ns, prev_tid = " + S(tid) + ", prev_state, cpu FROM sched WHERE (prev_tid = " + S(tid) +
                                 " OR next_tid = " + S(tid) + ") AND ts_ns >= " + S(from - 1'000'000'000) + " AND ts_ns < " +
                                 S(to) + " ORDER BY ts_ns");
  // The last record on `cpu` after `after` and before `before` (`after` when none).
  auto cpu_last = [&](int64_t cpu, int64_t after, int64_t before) {
    return q_int(db, "SELECT coalesce(max(ts_ns), " + S(after) + ") FROM sched WHERE cpu = " + S(cpu) + " AND ts_ns > " +
                         S(after) + " AND ts_ns < " + S(before));
  };
  InCallOffCpu r;
  bool out = false;
  int64_t out_ts = 0, out_state = 0, out_cpu = 0;
  auto end_interval = [&](int64_t back) {
    const int64_t ns = std::max<int64_t>(0, std::min(back, to) - std::max(out_ts, from));
    (out_state == 0 ? r.runnable : r.asleep) += ns;
    out = false;
  };
  for (const auto& row : sw) {
    const int64_t ts = row[0], cpu = row[3];
    if (!row[1]) {  // switched in
      if (out) end_interval(ts);
      continue;
    }
    if (out) end_interval(cpu_last(cpu, out_ts, ts));  // its switch-in was not recorded
    out = true;
    out_ts = ts;
    out_state = row[2];
    out_cpu = cpu;
  }
  if (out) end_interval(cpu_last(out_cpu, out_ts, to));  // back in unrecorded before the call returned
  return r;
}

// Every gpu_wait or unknown claim on the victim's calls since `from` must be one the complete
// file agrees with: the runnable time the stored sched rows show inside the call is too little
// for cpu_contention to have won it (unknown: host time under half the excess = lost; gpu_wait:
// the host time, subtracted from the excess, under what is left). A call judged before its
// switch records were stored (the bug of issue 21) fails this. What may remain is a call
// on-CPU far beyond its spin with no switch at all (hypervisor time, see the page-fault case):
// no host cause in the trace, so not a host call judged wrong.
void check_tail_judged_with_context(const std::string& db, pid_t pid, int64_t from) {
  const auto claims = q_rows(db, "SELECT tid, ts_ns, dur_ns, lost_ns, cause = 'gpu_wait' FROM call_causes WHERE pid = " + S(pid) +
                                     " AND gap = 0 AND ts_ns > " + S(from) + " AND cause IN ('gpu_wait', 'unknown')");
  for (const auto& c : claims) {
    const int64_t lost = c[3];
    const int64_t runnable = off_cpu_in_call(db, c[0], c[1], c[1] + c[2]).runnable;
    INFO("claim at " << c[1] << " dur " << c[2] << " lost " << lost << (c[4] ? " gpu_wait" : " unknown") << ", runnable "
                     << runnable);
    CHECK((c[4] ? runnable < lost : 2 * runnable < lost));
  }
}

}  // namespace

TEST_CASE("until SIGINT: a CPU hog on the thread's core during a spinning sync is cpu_contention to the end") {
  TempDir dir;
  Stopped t = trace_until_stop(dir, {"--pin-cpu", "0", "--hog-cpu", "0", "--hog-delay-ms", "1500", "--hog-ms", "600000",
                                     "--rate", "0", "--iterations", "1000000000", "--latency-us", "1000", "--ops",
                                     "launch,stream_sync"});
  MESSAGE("cpu hog until SIGINT: the trace stopped in " << t.stop_s << " s");
  CHECK(t.stop_s < 5.0);  // Ctrl-C stays fast (the final pass included) even on a loaded host
  // Its processes row may carry the name from before its prctl rename; its threads row is renamed.
  const int64_t hog = q_int(t.db, "SELECT pid FROM processes WHERE ppid = " + S(t.pid) +
                                      " AND (comm = 'cw_hog' OR pid IN (SELECT tid FROM threads WHERE comm = 'cw_hog'))");
  REQUIRE(hog > 0);
  json chains = chains_of(t.db);
  INFO(brief(t.db, chains));
  // The hog's slices land on the sync or on the launch before it (both spin 1 ms on CPU 0):
  // the first in-call cpu_contention chain of the victim, whichever op it is.
  json c;
  for (const json& x : chains)
    if (!c.is_object() && x.value("pid", 0) == t.pid && x.value("cause", "") == "cpu_contention" &&
        x.value("where", "") == "in_call")
      c = x;
  REQUIRE(c.is_object());
  check_strong(c);
  // The planted hog, unless something else took even more of CPU 0 (a compiler beside the test
  // on a shared 2-core host): then naming that one is right too, and it is said.
  CHECK(c["culprit"].value("pid", 0) > 0);
  if (c["culprit"].value("pid", 0) != hog) MESSAGE("culprit is not cw_hog but " << c["culprit"].dump());
  CHECK(c["culprit"].value("cpu", -1) == 0);
  check_no_other_high(chains, t.pid, {"cpu_contention"});
  check_no_unexplained(chains, t.pid);
  // The tail: the preempted calls of the last second before the stop were judged with their
  // scheduler rows, none of them as a GPU wait or unknown.
  const int64_t end = q_int(t.db, "SELECT max(ts_ns) FROM events WHERE pid = " + S(t.pid));
  const std::string tail = " FROM call_causes WHERE pid = " + S(t.pid) + " AND ts_ns > " + S(end - 1'000'000'000);
  CHECK(q_int(t.db, "SELECT count(*)" + tail + " AND cause = 'cpu_contention'") > 0);
  check_tail_judged_with_context(t.db, t.pid, end - 1'000'000'000);
}

// First run (2026-11-25, loaded 2-core VM, before the fix): io_contention only MEDIUM (44 calls)
// and a HIGH gpu_wait on cudaMemcpy (383 calls, "on-CPU ... the GPU queue itself is the
// bottleneck"): on this disk the thread issues its 4 MiB read-arounds itself and barely sleeps
// for them, so no D time won those calls, and the launch queued before the copy counted as GPU
// evidence. Now a call whose own thread issued block reads inside it is io_contention, and a
// synchronous copy that lost its time on-CPU is never a GPU wait (docs/DIAGNOSIS.md "GPU
// evidence"): what is left of those is a LOW unknown.
//
// That unknown is time no event of the trace covers, and its size follows the load of the
// machine under the VM, run to run (below), so the tail's check compares the host causes with
// the unknown copies' off-CPU time, not with all of their loss (docs/DIAGNOSIS.md "Stability
// on a busy host"). The old check (host > unknown)
// failed 2 of 5 loop runs and 3 of 4 before, e.g. host 56 ms against unknown 70 ms; on a kept
// DB of a run without the busy core (2026-11-29): host 72.9 ms against unknown 87.4 ms, of it
// 54.4 ms in 29 copies with no switch at all (five of 7.4-9.4 ms), 6.3 ms off-CPU by the stored
// switches. Measured that day on the 2-vCPU development VM (a PVM guest: the hypervisor fills
// the page tables):
//   - an unknown copy of the tail is on-CPU: no block request by its thread, and no switch
//     (305 of 438 in 16 kept trace DBs: 0.50 ms median, 1.04 ms p90, against a copy's 0.19 ms)
//     or too little runnable time (one copy of 54 ms: 36 ms on-CPU, then 18 ms runnable); the
//     tails' unknown was 6-91 ms, of it off-CPU 0.2-19 ms, the host causes 125-572 ms;
//   - the same walk without any tracer (a 32 MiB file mapping read 256 KiB at a time, a byte a
//     page, dropped at each wrap; 6 s at nice -5): 170-787 chunks of 0.4 ms or more with no
//     context switch and no major fault (3.4-3.7 minor faults each), 101-541 ms in 6 s, with
//     or without a busy core beside it, run to run; a clock-reading spinner loses 3-17 ms in 8 s
//     to gaps without a switch; `perf record` of the walk: 65 % of its samples on the reading
//     instructions themselves, 14 % in pvm_irq_enable (the hypervisor's page-fault exits). The
//     minor faults of the just-read pages cost the hypervisor's time, which the guest's
//     scheduler and block layer never see: on-CPU with no event, so unknown is the honest answer;
//   - what an unknown copy spent off-CPU was too little to win it; a preemption by the VM's own
//     agent (pid 1), whose switch back no BPF program sees, counts up to the CPU's last record
//     (off_cpu_in_call above).
TEST_CASE("until SIGINT: page-fault I/O inside cudaMemcpy is io_contention to the end") {
  TempDir dir;
  // On a disk (TMPDIR may be a tmpfs, whose pages never go to a block device).
  const std::string io_dir = build_dir() + "/diagnosis_until_stop." + S(::getpid());
  std::filesystem::create_directories(io_dir);
  struct Cleanup {
    std::string d;
    ~Cleanup() { std::filesystem::remove_all(d); }
  } cleanup{io_dir};
  // At nice -5 in a session of its own (cw_workload --nice): on a busy host other sessions'
  // compilers otherwise took the thread's CPU for longer than its reads waited, and the last
  // second's copies were all cpu_contention (1 of 4 loop runs).
  Stopped t = trace_until_stop(dir, {"--nice", "-5", "--rate", "0", "--iterations", "1000000000", "--latency-us", "50", "--ops",
                                     "launch,memcpy,stream_sync", "--bytes", "256k", "--memcpy-src-file",
                                     io_dir + "/src", "--memcpy-src-mb", "32"});
  MESSAGE("fault I/O until SIGINT: the trace stopped in " << t.stop_s << " s");
  CHECK(t.stop_s < 5.0);
  REQUIRE(q_int(t.db, "SELECT count(*) FROM events WHERE op_id = 500") > 0);  // reads reached the disk
  json chains = chains_of(t.db);
  INFO(brief(t.db, chains));
  const json c = find_chain(chains, t.pid, "io_contention");
  REQUIRE(c.is_object());
  CHECK(c.value("op", "") == "cudaMemcpy");
  check_strong(c);
  check_no_other_high(chains, t.pid, {"io_contention", "cpu_contention"});
  check_no_unexplained(chains, t.pid);
  // The tail: the slow copies of the last second were judged with their context (no call ran
  // past the stored host records), none of them as a GPU wait, some as io_contention, and more
  // of their lost time went to a host cause than the unknown copies spent off-CPU. An unknown
  // copy is one that lost its time on-CPU (the comment above the case): its thread issued no
  // block request inside it (else it is io_contention) and the stored switches show it
  // runnable for under half its loss (else cpu_contention). (A spinning sync that stays on-CPU
  // for no traced reason, work queued ahead of it, can still be a LOW gpu_wait: that is the
  // GPU-evidence rule, not this incident.)
  const int64_t end = q_int(t.db, "SELECT max(ts_ns) FROM events WHERE pid = " + S(t.pid));
  const std::string tail = " FROM call_causes WHERE pid = " + S(t.pid) + " AND op_id = " + S(CW_OP_CUDA_MEMCPY) + " AND ts_ns > " +
                           S(end - 1'000'000'000);
  CHECK(q_int(t.db, "SELECT count(*)" + tail + " AND cause = 'gpu_wait'") == 0);
  CHECK(q_int(t.db, "SELECT count(*)" + tail + " AND cause = 'io_contention'") > 0);
  const int64_t host = q_int(t.db, "SELECT coalesce(sum(lost_ns), 0)" + tail + " AND cause IN ('io_contention', 'cpu_contention')");
  int64_t unknown = 0, unknown_off_cpu = 0;
  for (const auto& u : q_rows(t.db, "SELECT tid, ts_ns, dur_ns, lost_ns, gap" + tail + " AND cause = 'unknown'")) {
    const int64_t tid = u[0], ts = u[1], call_end = u[1] + u[2], lost = u[3];
    unknown += lost;
    if (u[4]) {  // a stall between calls: counted whole
      unknown_off_cpu += lost;
      continue;
    }
    const InCallOffCpu off = off_cpu_in_call(t.db, tid, ts, call_end);
    unknown_off_cpu += std::min(lost, off.runnable + off.asleep);
    INFO("unknown copy at " << ts << " dur " << u[2] << " lost " << lost);
    CHECK(q_int(t.db, "SELECT count(*) FROM events WHERE op_id = 500 AND tid = " + S(tid) + " AND ts_ns >= " + S(ts) +
                          " AND ts_ns < " + S(call_end)) == 0);
  }
  MESSAGE("last second's copies: host causes " << host / 1000 << " us, unknown " << unknown / 1000 << " us, of it off-CPU "
                                               << unknown_off_cpu / 1000 << " us");
  CHECK(host > unknown_off_cpu);
  check_tail_judged_with_context(t.db, t.pid, end - 1'000'000'000);
  for (const json& x : chains)
    if (x.value("pid", 0) == t.pid && x.value("cause", "") == "unknown") {
      INFO(x.dump());
      CHECK(x.dump().find("ran past the host records") == std::string::npos);
    }
}

}  // namespace causeway::test
