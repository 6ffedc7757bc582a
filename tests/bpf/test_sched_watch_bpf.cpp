// The CPU watch (bpf/sched_watch.bpf.h, docs/DIAGNOSIS.md "Who held the victim's CPU"): while a
// traced thread waits on a CPU, every switch there is recorded. One traced thread running must
// not end the watch while another still waits there, and a thread woken onto another CPU than
// it last ran on is watched where it waits; else a hog that takes the CPU from an untraced task
// is never seen taking it, and the waiter's time goes to the task it interrupted.
#include <doctest/doctest.h>

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>

#include "diagnosis/request_cpu_waits.h"
#include "diagnosis/tracer_pid.h"
#include "tests/bpf/collector_harness.h"
#include "tracedb/open.h"

using namespace causeway;
using namespace causeway::test;

namespace {

std::string S(int64_t v) { return std::to_string(v); }

// State shared by the scenario's processes (an anonymous MAP_SHARED page mapped before fork).
struct WatchScenarioShared {
  std::atomic<int32_t> runner_tid{0};  // the traced thread that gets in and runs briefly
  std::atomic<int32_t> waiter_tid{0};  // the traced thread that still waits meanwhile
  std::atomic<int32_t> setup_failed{0};
  std::atomic<int32_t> busy_running{0};
  std::atomic<int32_t> hog_done{0};
};

// The calling thread on `cpu` alone, SCHED_FIFO at `prio`: with real-time priorities the order
// on the CPU is fixed (a higher priority preempts at once; an equal one waits its turn).
bool watch_scenario_pin_fifo(int cpu, int prio) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_param sp{};
  sp.sched_priority = prio;
  return ::sched_setaffinity(0, sizeof(set), &set) == 0 && ::sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
}

void watch_scenario_spin_ms(int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// A scenario thread that cannot be pinned or made real-time says so and ends its process.
[[noreturn]] void watch_scenario_setup_failed(WatchScenarioShared* shared) {
  shared->setup_failed = 1;
  ::_exit(3);
}

pid_t watch_scenario_fork(const char* comm, auto&& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_NAME, comm, 0, 0, 0);
    body();
    ::_exit(0);
  }
  return pid;
}

// The untraced task the hog interrupts, on `cpu` at SCHED_FIFO 1: spins until the hog is
// done, 10 ms more, then yields the CPU to the waiter (equal priority; 3 s at most, whatever
// happens).
pid_t watch_scenario_busy(WatchScenarioShared* shared, int cpu) {
  return watch_scenario_fork("cw_busy", [=] {
    if (!watch_scenario_pin_fifo(cpu, 1)) watch_scenario_setup_failed(shared);
    shared->busy_running = 1;
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!shared->hog_done && std::chrono::steady_clock::now() < limit) {
    }
    watch_scenario_spin_ms(10);
    ::sched_yield();
  });
}

// After the trace: the hog's switches with the busy task are recorded though neither is
// traced (the waiter still waited then), no switch without the traced process is recorded
// after its last (no wait left counted), and the waiter's one wait, ranked by who held its
// CPU (diagnosis/request_cpu_waits.cpp, what cpu_contention ranks its culprit by), names the
// hog. `waits_from_sql`, when given, says from when the waiter's waits are read (a query on the DB).
void watch_scenario_check(const std::string& db, int cpu, pid_t traced_pid, int32_t waiter_tid, pid_t hog, pid_t busy,
                          int hog_spin_ms, const std::string& waits_from_sql) {
  CAPTURE(q_text(db, "SELECT group_concat(ts_ns || ' ' || prev_pid || '>' || next_pid || ' s' || prev_state, char(10)) FROM "
                     "(SELECT * FROM sched WHERE cpu = " + S(cpu) + " ORDER BY ts_ns)"));
  CHECK(q_int(db, "SELECT count(*) FROM sched WHERE prev_pid = " + S(busy) + " AND next_pid = " + S(hog)) >= 1);
  CHECK(q_int(db, "SELECT count(*) FROM sched WHERE prev_pid = " + S(hog) + " AND next_pid = " + S(busy)) >= 1);
  const std::string after_last = " FROM sched WHERE prev_pid != " + S(traced_pid) + " AND next_pid != " + S(traced_pid) +
                                 " AND ts_ns > (SELECT max(ts_ns) FROM sched WHERE prev_pid = " + S(traced_pid) +
                                 " OR next_pid = " + S(traced_pid) + ")";
  CAPTURE(q_text(db, "SELECT group_concat(ts_ns || ' cpu' || cpu || ' ' || prev_tid || '>' || next_tid || ' s' || prev_state, "
                     "char(10)) FROM (SELECT *" + after_last + " ORDER BY ts_ns)"));
  CAPTURE(q_text(db, "SELECT group_concat(ts_ns || ' cpu' || cpu || ' ' || prev_tid || '>' || next_tid || ' s' || prev_state, "
                     "char(10)) FROM (SELECT * FROM sched WHERE prev_pid = " + S(traced_pid) + " OR next_pid = " +
                     S(traced_pid) + " ORDER BY ts_ns)"));
  CAPTURE(q_text(db, "SELECT group_concat(ts_ns || ' ' || tid || ' cpu' || target_cpu, char(10)) FROM (SELECT * FROM wakeups "
                     "WHERE pid = " + S(traced_pid) + " ORDER BY ts_ns)"));
  CHECK(q_int(db, "SELECT count(*)" + after_last) == 0);
  auto h = open_read_only(db);
  REQUIRE(h.ok());
  const int64_t session = q_int(db, "SELECT max(id) FROM sessions");
  const int64_t last = q_int(db, "SELECT max(ts_ns) FROM sched");
  const int64_t first = waits_from_sql.empty() ? 0 : q_int(db, waits_from_sql);
  const std::vector<uint32_t> pids{static_cast<uint32_t>(traced_pid)};
  const requests::CpuWaits waits =
      requests::read_cpu_waits(h->get(), session, pids, static_cast<uint32_t>(waiter_tid), first, last);
  REQUIRE(waits.waits.size() == 1);
  const double waited = static_cast<double>(waits.waits[0].second - waits.waits[0].first);
  const requests::CpuStolen stolen = requests::stolen_by(waits, pids, read_tracer_pid(h->get(), session));
  const auto held = [&](pid_t pid) {
    const auto it = stolen.by_culprit.find(static_cast<uint32_t>(pid));
    return it == stolen.by_culprit.end() ? 0.0 : it->second;
  };
  MESSAGE("waited " << waited / 1e6 << " ms: hog " << held(hog) / 1e6 << " ms, busy task " << held(busy) / 1e6
                    << " ms, outsiders " << stolen.outsiders_ns / 1e6 << " ms");
  CHECK(waited >= hog_spin_ms * 1e6);
  CHECK(stolen.top() == static_cast<uint32_t>(hog));
  CHECK(held(hog) >= 0.7 * hog_spin_ms * 1e6);
}

// A scenario's trace (`--pid` the traced process) and its busy task, running on `cpu` 20 ms
// before the constructor returns; finish() waits for the scenario's processes, stops the
// trace and checks it (watch_scenario_check).
struct WatchScenarioTrace {
  Tracer tracer;
  Child busy;
  WatchScenarioTrace(const TempDir& dir, pid_t traced, WatchScenarioShared* shared, int cpu)
      : tracer(dir, {"--pid", S(traced), "--no-stack"}), busy((sleep_ms(300), watch_scenario_busy(shared, cpu))) {
    for (int i = 0; i < 250 && !shared->busy_running && !shared->setup_failed; ++i) sleep_ms(2);
    REQUIRE(shared->busy_running == 1);
    sleep_ms(20);
  }
  void finish(Child& hog, Child& traced, int cpu, int32_t waiter_tid, int hog_spin_ms, const std::string& waits_from_sql = "") {
    CHECK(hog.wait() == 0);
    CHECK(busy.wait() == 0);
    CHECK(traced.wait() == 0);
    sleep_ms(300);
    REQUIRE(tracer.stop(SIGINT) == 0);
    watch_scenario_check(tracer.db(), cpu, traced.pid(), waiter_tid, hog.pid(), busy.pid(), hog_spin_ms, waits_from_sql);
  }
};

// A fresh shared page for one scenario's processes (left mapped until the test ends).
WatchScenarioShared* watch_scenario_shared() {
  void* page = ::mmap(nullptr, sizeof(WatchScenarioShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(page != MAP_FAILED);
  return new (page) WatchScenarioShared;
}

void watch_scenario_skip_unless(bool ok, const std::string& why) {
  if (ok) return;
  std::printf("SKIPPED: %s\n", why.c_str());
  std::exit(77);
}

// The hog (untraced) on `cpu` at SCHED_FIFO 2: woken through `go`, sleeps `delay_ms`, then
// takes the CPU from whatever runs there at a lower priority and spins `spin_ms`.
pid_t watch_scenario_hog(WatchScenarioShared* shared, int cpu, int go, int delay_ms, int spin_ms) {
  return watch_scenario_fork("cw_hog", [=] {
    if (!watch_scenario_pin_fifo(cpu, 2)) watch_scenario_setup_failed(shared);
    char c;
    if (::read(go, &c, 1) != 1) ::_exit(4);
    if (delay_ms) ::usleep(delay_ms * 1000);
    watch_scenario_spin_ms(spin_ms);
    shared->hog_done = 1;
  });
}

// Until the waiter's thread is up (skipped where its scheduling setup is not permitted).
void watch_scenario_wait_waiter(WatchScenarioShared* shared, const std::string& cpus) {
  for (int i = 0; i < 250 && !shared->waiter_tid && !shared->setup_failed; ++i) sleep_ms(20);
  watch_scenario_skip_unless(!shared->setup_failed, "SCHED_FIFO on CPUs " + cpus + " not permitted here");
  REQUIRE(shared->waiter_tid != 0);
}

}  // namespace

TEST_CASE("two traced threads wait on one CPU, one runs: a hog taking the CPU from an untraced task is still seen, and named") {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  watch_scenario_skip_unless(cpus >= 2, "needs 2 CPUs (the scenario's CPU and the test's)");
  const int cpu = static_cast<int>(cpus) - 1;
  TempDir dir;
  WatchScenarioShared* shared = watch_scenario_shared();
  int runner_go[2], waiter_go[2], hog_go[2];
  REQUIRE(::pipe(runner_go) == 0);
  REQUIRE(::pipe(waiter_go) == 0);
  REQUIRE(::pipe(hog_go) == 0);

  // Everything on `cpu`, SCHED_FIFO: runner 3 > hog 2 > busy 1 = waiter 1.
  // The hog (untraced): woken by the runner, sleeps 20 ms (the busy task runs), then takes the
  // CPU from the busy task and spins 250 ms.
  const int hog_spin_ms = 250;
  Child hog{watch_scenario_hog(shared, cpu, hog_go[0], 20, hog_spin_ms)};
  // The traced process: the runner wakes the hog, runs 1 ms and sleeps; the waiter, woken
  // first, waits behind the busy task (equal priority) until it yields.
  Child traced{watch_scenario_fork("cw_waiters", [&] {
    std::thread runner([&] {
      ::prctl(PR_SET_NAME, "cw_runner", 0, 0, 0);
      if (!watch_scenario_pin_fifo(cpu, 3)) watch_scenario_setup_failed(shared);
      shared->runner_tid = static_cast<int32_t>(::gettid());
      char c;
      while (::read(runner_go[0], &c, 1) == 1) {
        if (::write(hog_go[1], "h", 1) != 1) ::_exit(5);
        watch_scenario_spin_ms(1);
      }
    });
    std::thread waiter([&] {
      ::prctl(PR_SET_NAME, "cw_waiter", 0, 0, 0);
      if (!watch_scenario_pin_fifo(cpu, 1)) watch_scenario_setup_failed(shared);
      shared->waiter_tid = static_cast<int32_t>(::gettid());
      char c;
      if (::read(waiter_go[0], &c, 1) != 1) ::_exit(6);
    });
    waiter.join();
    ::_exit(0);  // the runner, blocked in read, goes with the process
  })};
  for (int i = 0; i < 250 && (!shared->runner_tid || !shared->waiter_tid) && !shared->setup_failed; ++i) sleep_ms(20);
  watch_scenario_skip_unless(!shared->setup_failed, "SCHED_FIFO on CPU " + S(cpu) + " not permitted here");
  REQUIRE(shared->runner_tid != 0);
  REQUIRE(shared->waiter_tid != 0);

  WatchScenarioTrace run(dir, traced.pid(), shared, cpu);
  REQUIRE(::write(waiter_go[1], "w", 1) == 1);  // runnable, behind the busy task
  sleep_ms(20);
  REQUIRE(::write(runner_go[1], "r", 1) == 1);  // preempts the busy task, runs 1 ms, sleeps
  run.finish(hog, traced, cpu, shared->waiter_tid, hog_spin_ms);
}

TEST_CASE("a traced thread woken onto another CPU than it last ran on waits there: that CPU is watched, its hog named") {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  watch_scenario_skip_unless(cpus >= 2, "needs 2 CPUs (the CPU the waiter last ran on and the one it waits on)");
  const int first_cpu = static_cast<int>(cpus) - 2, cpu = static_cast<int>(cpus) - 1;
  TempDir dir;
  WatchScenarioShared* shared = watch_scenario_shared();
  int waiter_go[2], hog_go[2];
  REQUIRE(::pipe(waiter_go) == 0);
  REQUIRE(::pipe(hog_go) == 0);
  const int hog_spin_ms = 250;
  // The hog (untraced) on `cpu`, SCHED_FIFO 2: woken while the busy task runs there, takes the
  // CPU from it at once and spins.
  Child hog{watch_scenario_hog(shared, cpu, hog_go[0], 0, hog_spin_ms)};
  // The traced thread (SCHED_FIFO 1) sleeps on first_cpu, the CPU it last ran on.
  Child traced{watch_scenario_fork("cw_waiter", [=] {
    if (!watch_scenario_pin_fifo(first_cpu, 1)) watch_scenario_setup_failed(shared);
    shared->waiter_tid = static_cast<int32_t>(::gettid());
    char c;
    if (::read(waiter_go[0], &c, 1) != 1) ::_exit(6);
  })};
  watch_scenario_wait_waiter(shared, S(first_cpu) + "-" + S(cpu));

  WatchScenarioTrace run(dir, traced.pid(), shared, cpu);
  // Allowed on `cpu` only while it sleeps: the scheduler moves it there at its wake-up, after
  // sched_waking counted its wait on first_cpu.
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(cpu, &only);
  REQUIRE(::sched_setaffinity(shared->waiter_tid, sizeof(only), &only) == 0);
  REQUIRE(::write(waiter_go[1], "w", 1) == 1);  // runnable on `cpu`, behind the busy task
  sleep_ms(20);
  REQUIRE(::write(hog_go[1], "h", 1) == 1);  // takes `cpu` from the busy task
  run.finish(hog, traced, cpu, shared->waiter_tid, hog_spin_ms);
  // Its wake-up named first_cpu (where it last ran): the wait was counted there, then moved.
  CHECK(q_int(run.tracer.db(), "SELECT count(*) FROM wakeups WHERE tid = " + S(shared->waiter_tid) + " AND target_cpu = " +
                                   S(first_cpu)) == 1);
}

TEST_CASE("a preempted traced thread moved to another CPU while it waits (as load balancing does): its wait moves there") {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  watch_scenario_skip_unless(cpus >= 2, "needs 2 CPUs (the CPU the waiter is preempted on and the one it is moved to)");
  const int first_cpu = static_cast<int>(cpus) - 2, cpu = static_cast<int>(cpus) - 1;
  TempDir dir;
  WatchScenarioShared* shared = watch_scenario_shared();
  int waiter_go[2], preemptor_go[2], hog_go[2];
  REQUIRE(::pipe(waiter_go) == 0);
  REQUIRE(::pipe(preemptor_go) == 0);
  REQUIRE(::pipe(hog_go) == 0);
  const int hog_spin_ms = 250;
  Child hog{watch_scenario_hog(shared, cpu, hog_go[0], 0, hog_spin_ms)};
  // The traced thread (SCHED_FIFO 1 on first_cpu): woken, runs, wakes the preemptor, which
  // takes first_cpu from it at once (it is preempted: its wait is counted on first_cpu), then
  // spins until the hog is done wherever it gets to run.
  Child traced{watch_scenario_fork("cw_waiter", [=] {
    if (!watch_scenario_pin_fifo(first_cpu, 1)) watch_scenario_setup_failed(shared);
    shared->waiter_tid = static_cast<int32_t>(::gettid());
    char c;
    if (::read(waiter_go[0], &c, 1) != 1) ::_exit(6);
    if (::write(preemptor_go[1], "p", 1) != 1) ::_exit(7);
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!shared->hog_done && std::chrono::steady_clock::now() < limit) {
    }
  })};
  // The preemptor (untraced, SCHED_FIFO 2 on first_cpu): moves the preempted, still queued
  // waiter to `cpu` (set_task_cpu: sched_migrate_task, the waiter's task_cpu first_cpu), where
  // it waits behind the busy task, wakes the hog there and leaves first_cpu.
  Child preemptor{watch_scenario_fork("cw_preemptor", [=] {
    if (!watch_scenario_pin_fifo(first_cpu, 2)) watch_scenario_setup_failed(shared);
    char c;
    if (::read(preemptor_go[0], &c, 1) != 1) ::_exit(4);
    cpu_set_t only;
    CPU_ZERO(&only);
    CPU_SET(cpu, &only);
    if (::sched_setaffinity(shared->waiter_tid.load(), sizeof(only), &only) != 0) ::_exit(5);
    if (::write(hog_go[1], "h", 1) != 1) ::_exit(6);
  })};
  watch_scenario_wait_waiter(shared, S(first_cpu) + "-" + S(cpu));

  WatchScenarioTrace run(dir, traced.pid(), shared, cpu);
  REQUIRE(::write(waiter_go[1], "w", 1) == 1);
  CHECK(preemptor.wait() == 0);
  // Its wait began when it was switched out preempted on first_cpu, the preemptor next (its
  // wake-up before, on first_cpu, is a wait of its own and not the one checked).
  const std::string preempted = " FROM sched WHERE cpu = " + S(first_cpu) + " AND prev_tid = " + S(shared->waiter_tid) +
                                " AND prev_state = 0 AND next_pid = " + S(preemptor.pid());
  run.finish(hog, traced, cpu, shared->waiter_tid, hog_spin_ms, "SELECT min(ts_ns) - 1" + preempted);
  CHECK(q_int(run.tracer.db(), "SELECT count(*)" + preempted) == 1);
}
