// The CPU watch with several traced waiters on one CPU (bpf/sched_watch.bpf.h, docs/DIAGNOSIS.md
// "cpu_contention"): one traced thread running must not end the watch while another still
// waits there, else a hog that then takes the CPU from an untraced task is never seen taking
// it, and the waiter's time goes to the task it interrupted.
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

}  // namespace

TEST_CASE("two traced threads wait on one CPU, one runs: a hog taking the CPU from an untraced task is still seen, and named") {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 2) {
    std::printf("SKIPPED: needs 2 CPUs (the scenario's CPU and the test's)\n");
    std::exit(77);
  }
  const int cpu = static_cast<int>(cpus) - 1;
  TempDir dir;
  void* page = ::mmap(nullptr, sizeof(WatchScenarioShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(page != MAP_FAILED);
  auto* shared = new (page) WatchScenarioShared;
  int runner_go[2], waiter_go[2], hog_go[2];
  REQUIRE(::pipe(runner_go) == 0);
  REQUIRE(::pipe(waiter_go) == 0);
  REQUIRE(::pipe(hog_go) == 0);

  // Everything on `cpu`, SCHED_FIFO: runner 3 > hog 2 > busy 1 = waiter 1.
  // The hog (untraced): woken by the runner, sleeps 20 ms (the busy task runs), then takes the
  // CPU from the busy task and spins 250 ms.
  const int hog_spin_ms = 250;
  Child hog{watch_scenario_fork("cw_hog", [&] {
    if (!watch_scenario_pin_fifo(cpu, 2)) watch_scenario_setup_failed(shared);
    char c;
    if (::read(hog_go[0], &c, 1) != 1) ::_exit(4);
    ::usleep(20'000);
    watch_scenario_spin_ms(hog_spin_ms);
    shared->hog_done = 1;
  })};
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
  if (shared->setup_failed) {
    std::printf("SKIPPED: SCHED_FIFO on CPU %d not permitted here\n", cpu);
    std::exit(77);
  }
  REQUIRE(shared->runner_tid != 0);
  REQUIRE(shared->waiter_tid != 0);

  Tracer t(dir, {"--pid", S(traced.pid()), "--no-stack"});
  sleep_ms(300);
  // The untraced task the hog interrupts: spins until the hog is done, 10 ms more, then yields
  // the CPU to the waiter (3 s at most, whatever happens).
  Child busy{watch_scenario_fork("cw_busy", [&] {
    if (!watch_scenario_pin_fifo(cpu, 1)) watch_scenario_setup_failed(shared);
    shared->busy_running = 1;
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!shared->hog_done && std::chrono::steady_clock::now() < limit) {
    }
    watch_scenario_spin_ms(10);
    ::sched_yield();
  })};
  for (int i = 0; i < 250 && !shared->busy_running && !shared->setup_failed; ++i) sleep_ms(2);
  REQUIRE(shared->busy_running == 1);
  sleep_ms(20);
  REQUIRE(::write(waiter_go[1], "w", 1) == 1);  // runnable, behind the busy task
  sleep_ms(20);
  REQUIRE(::write(runner_go[1], "r", 1) == 1);  // preempts the busy task, runs 1 ms, sleeps
  CHECK(hog.wait() == 0);
  CHECK(busy.wait() == 0);
  CHECK(traced.wait() == 0);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  const std::string& db = t.db();
  const int64_t waiter = shared->waiter_tid, traced_pid = traced.pid();
  CAPTURE(q_text(db, "SELECT group_concat(ts_ns || ' ' || prev_pid || '>' || next_pid || ' s' || prev_state, char(10)) FROM "
                     "(SELECT * FROM sched WHERE cpu = " + S(cpu) + " ORDER BY ts_ns)"));

  // The kernel side: the hog's switches with the busy task, though neither is traced, while
  // the waiter still waited (the runner had run and gone to sleep before them).
  CHECK(q_int(db, "SELECT count(*) FROM sched WHERE prev_pid = " + S(busy.pid()) + " AND next_pid = " + S(hog.pid())) >= 1);
  CHECK(q_int(db, "SELECT count(*) FROM sched WHERE prev_pid = " + S(hog.pid()) + " AND next_pid = " + S(busy.pid())) >= 1);
  // No wait is left counted once the traced process is gone: no switch without it after its last.
  CHECK(q_int(db, "SELECT count(*) FROM sched WHERE prev_pid != " + S(traced_pid) + " AND next_pid != " + S(traced_pid) +
                      " AND ts_ns > (SELECT max(ts_ns) FROM sched WHERE prev_pid = " + S(traced_pid) + " OR next_pid = " +
                      S(traced_pid) + ")") == 0);

  // The diagnosis side: the waiter's one wait, and who held its CPU meanwhile, by time
  // (diagnosis/request_cpu_waits.cpp, what cpu_contention ranks its culprit by).
  auto h = open_read_only(db);
  REQUIRE(h.ok());
  const int64_t session = q_int(db, "SELECT max(id) FROM sessions");
  const int64_t last = q_int(db, "SELECT max(ts_ns) FROM sched");
  const std::vector<uint32_t> pids{static_cast<uint32_t>(traced_pid)};
  const requests::CpuWaits waits = requests::read_cpu_waits(h->get(), session, pids, static_cast<uint32_t>(waiter), 0, last);
  REQUIRE(waits.waits.size() == 1);
  const double waited = static_cast<double>(waits.waits[0].second - waits.waits[0].first);
  const requests::CpuStolen stolen = requests::stolen_by(waits, pids, read_tracer_pid(h->get(), session));
  const auto held = [&](pid_t pid) {
    const auto it = stolen.by_culprit.find(static_cast<uint32_t>(pid));
    return it == stolen.by_culprit.end() ? 0.0 : it->second;
  };
  MESSAGE("waited " << waited / 1e6 << " ms: hog " << held(hog.pid()) / 1e6 << " ms, busy task " << held(busy.pid()) / 1e6
                    << " ms, outsiders " << stolen.outsiders_ns / 1e6 << " ms");
  CHECK(waited >= hog_spin_ms * 1e6);
  CHECK(stolen.top() == static_cast<uint32_t>(hog.pid()));
  CHECK(held(hog.pid()) >= 0.7 * hog_spin_ms * 1e6);
}
