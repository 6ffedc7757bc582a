// Building blocks of the correlator: off-CPU intervals from sched rows, who ran on the CPU,
// wakers and wakeup latency; the robust baseline and outlier rule; NCCL (comm, seq) grouping.
#include <doctest/doctest.h>

#include "diagnosis/baseline.h"
#include "diagnosis/collectives.h"
#include "diagnosis/thread_timeline.h"

using namespace causeway;

namespace {
constexpr int64_t kMs = 1'000'000;
constexpr uint32_t kT = 4821, kTar = 991, kSib = 4830;
}  // namespace

TEST_CASE("off-CPU intervals: preemption (R) names who ran on the CPU") {
  std::vector<SchedRow> rows = {
      // T preempted by tar on CPU 3 at 10 ms; a kworker runs 20-22 ms; T back at 30 ms.
      {10 * kMs, 3, kT, kT, 0, kTar, kTar},
      {20 * kMs, 3, kTar, kTar, 0, 87, 87},
      {22 * kMs, 3, 87, 87, 1, kTar, kTar},
      {30 * kMs, 3, kTar, kTar, 0, kT, kT},
  };
  ThreadTimelines tl;
  tl.build(rows, {}, 100 * kMs);
  auto iv = tl.intervals(kT);
  REQUIRE(iv.size() == 1);
  CHECK(iv[0].from_ns == 10 * kMs);
  CHECK(iv[0].to_ns == 30 * kMs);
  CHECK(iv[0].state == OffCpuState::runnable);
  CHECK(iv[0].in_cpu == 3);

  // A call over [5, 25] ms: 15 ms of it runnable off-CPU.
  OffCpuSummary s = tl.off_cpu_in(kT, 5 * kMs, 25 * kMs);
  CHECK(s.runnable_ns == 15 * kMs);
  CHECK(s.sleeping_ns == 0);
  CHECK(s.intervals == 1);

  std::vector<RunShare> who;
  tl.who_ran(3, 10 * kMs, 30 * kMs, who);
  int64_t tar = 0, kw = 0;
  for (auto& r : who) (r.pid == kTar ? tar : kw) += r.ns;
  CHECK(tar == 18 * kMs);
  CHECK(kw == 2 * kMs);
}

TEST_CASE("off-CPU intervals: rows given out of time order build the same timeline as in order") {
  // The correlator passes its buffers in time order (used as they are); any other order is
  // sorted first, ties kept in the order given.
  const std::vector<SchedRow> ordered = {
      {10 * kMs, 3, kT, kT, 0, kTar, kTar},
      {20 * kMs, 3, kTar, kTar, 0, 87, 87},
      {22 * kMs, 3, 87, 87, 1, kTar, kTar},
      {30 * kMs, 3, kTar, kTar, 0, kT, kT},
  };
  const std::vector<WakeRow> wakes = {{25 * kMs, 87, 87, kSib, kSib}};
  const std::vector<SchedRow> shuffled = {ordered[3], ordered[1], ordered[0], ordered[2]};
  ThreadTimelines a, b;
  a.build(ordered, wakes, 100 * kMs);
  b.build(shuffled, wakes, 100 * kMs);
  for (uint32_t tid : {kT, kTar, 87u}) {
    const auto ia = a.intervals(tid), ib = b.intervals(tid);
    REQUIRE(ia.size() == ib.size());
    for (size_t i = 0; i < ia.size(); ++i) {
      CHECK(ia[i].from_ns == ib[i].from_ns);
      CHECK(ia[i].to_ns == ib[i].to_ns);
      CHECK(ia[i].state == ib[i].state);
      CHECK(ia[i].woken == ib[i].woken);
    }
  }
  REQUIRE(a.intervals(87).size() == 1);
  CHECK(a.intervals(87)[0].woken);  // asleep from 22 ms, woken by kSib at 25 ms
  CHECK(b.off_cpu_in(kT, 5 * kMs, 25 * kMs).runnable_ns == 15 * kMs);
}

TEST_CASE("who ran: untraced tasks switching among themselves unseen, the CPU goes to the one that held it last") {
  // T preempted at 10 ms by a kernel thread (pid 15) that runs a few µs and hands the CPU to
  // tar; neither is traced, so that switch is not recorded. tar gives the CPU back at 30 ms.
  std::vector<SchedRow> rows = {
      {10 * kMs, 0, kT, kT, 0, 15, 15},
      {30 * kMs, 0, kTar, kTar, 0, kT, kT},
  };
  ThreadTimelines tl;
  tl.build(rows, {}, 100 * kMs);
  std::vector<RunShare> who;
  tl.who_ran(0, 10 * kMs, 30 * kMs, who);
  int64_t tar = 0, kthread = 0;
  for (auto& r : who) (r.pid == kTar ? tar : kthread) += r.ns;
  CHECK(tar == 20 * kMs);
  CHECK(kthread == 0);
}

TEST_CASE("off-CPU intervals: sleep (S) with a waker, D state, wakeup latency counts as runnable") {
  std::vector<SchedRow> rows = {
      {10 * kMs, 3, kT, kT, 1, 0, 0},    // T sleeps (S); CPU idles
      {15 * kMs, 3, 0, 0, 0, kTar, kTar},  // tar takes the idle CPU
      {40 * kMs, 3, kTar, kTar, 0, kT, kT},  // T back at 40 ms
      {50 * kMs, 3, kT, kT, 2, 0, 0},    // T in D
      {58 * kMs, 3, 0, 0, 0, kT, kT},
  };
  std::vector<WakeRow> wakes = {{30 * kMs, kT, kT, kSib, kT}};  // woken at 30 ms by a sibling thread
  ThreadTimelines tl;
  tl.build(rows, wakes, 100 * kMs);
  auto iv = tl.intervals(kT);
  REQUIRE(iv.size() == 2);
  CHECK(iv[0].state == OffCpuState::sleeping);
  CHECK(iv[0].woken);
  CHECK(iv[0].waker_tid == kSib);
  CHECK(iv[0].waker_pid == kT);
  CHECK(iv[1].state == OffCpuState::uninterruptible);
  CHECK_FALSE(iv[1].woken);

  OffCpuSummary s = tl.off_cpu_in(kT, 0, 100 * kMs);
  CHECK(s.sleeping_ns == 20 * kMs);          // 10 → 30 asleep
  CHECK(s.runnable_ns == 10 * kMs);          // 30 → 40 woken but tar held the CPU
  CHECK(s.uninterruptible_ns == 8 * kMs);
  CHECK(s.total() == 38 * kMs);

  // Clipping: a window that starts inside the sleep.
  OffCpuSummary c = tl.off_cpu_in(kT, 25 * kMs, 35 * kMs);
  CHECK(c.sleeping_ns == 5 * kMs);
  CHECK(c.runnable_ns == 5 * kMs);
}

TEST_CASE("off-CPU intervals: a thread that never comes back is closed at the data end; lost rows do not corrupt") {
  std::vector<SchedRow> rows = {
      {10 * kMs, 1, kT, kT, 0, kTar, kTar},
      {11 * kMs, 1, kTar, kTar, 0, 4242, 4242},  // the CPU's last record before the thread is back
      {12 * kMs, 1, kT, kT, 0, kTar, kTar},      // second switch-out without a switch-in: a lost record
  };
  ThreadTimelines tl;
  tl.build(rows, {}, 50 * kMs);
  auto iv = tl.intervals(kT);
  REQUIRE(iv.size() == 2);
  // The lost switch-in came after the CPU's last record (11 ms): off-CPU until then, not until
  // the next switch-out — the thread ran its calls in between.
  CHECK(iv[0].to_ns == 11 * kMs);
  CHECK(iv[1].to_ns == 50 * kMs);
  CHECK(tl.intervals(12345).empty());
  CHECK(tl.off_cpu_in(12345, 0, kMs).total() == 0);
}

TEST_CASE("robust baseline: median and MAD ignore a minority of slow calls") {
  std::vector<int64_t> d;
  for (int i = 0; i < 700; ++i) d.push_back(2 * kMs + (i % 7) * 10'000);  // 2.00–2.06 ms
  for (int i = 0; i < 300; ++i) d.push_back(30 * kMs);                    // 30% stretched calls
  Baseline b = robust_baseline(d);
  CHECK(b.usable());
  CHECK(b.median_ns >= 2 * kMs);
  CHECK(b.median_ns <= 2'060'000);
  CHECK(b.mad_ns <= 60'000);
  CHECK(is_outlier(b, 30 * kMs));
  CHECK_FALSE(is_outlier(b, 2'100'000));
  CHECK_FALSE(is_outlier(b, 3 * kMs));   // < 2x the median
  CHECK(is_outlier(b, 4'200'000));
}

TEST_CASE("robust baseline: the absolute floor keeps µs jitter out; too few samples is unusable") {
  std::vector<int64_t> launches(100, 5'000);
  launches[3] = 40'000;  // 8x the median but only 35 µs more
  Baseline b = robust_baseline(launches);
  CHECK_FALSE(is_outlier(b, 40'000));
  CHECK(is_outlier(b, 150'000));
  std::vector<int64_t> few = {1, 2, 3};
  Baseline f = robust_baseline(few);
  CHECK_FALSE(f.usable());
  CHECK_FALSE(is_outlier(f, 1'000'000'000));
}

TEST_CASE("NCCL collectives group by (comm, seq) across ranks; the last rank is the straggler") {
  const int64_t comm = 0x5ca1ab1e, other = 0x7e1e;
  std::vector<CollectiveEntry> e;
  for (int64_t seq = 1; seq <= 3; ++seq) {
    int64_t t = seq * 100 * kMs;
    e.push_back({comm, seq, 6001, 6001, 0, 4, 303, t});
    e.push_back({comm, seq, 6002, 6002, 1, 4, 303, t + 100'000});
    e.push_back({comm, seq, 6004, 6004, 3, 4, 303, t + 200'000});
    e.push_back({comm, seq, 6003, 6003, 2, 4, 303, t + (seq == 2 ? 300'000 : 15 * kMs)});  // late but in seq 2
  }
  e.push_back({other, 1, 7001, 7001, 0, 2, 303, 5 * kMs});  // another communicator, one local rank
  auto groups = group_collectives(e);
  REQUIRE(groups.size() == 4);
  int stragglers = 0;
  for (const auto& g : groups) {
    if (g.comm == other) {
      CHECK(g.members.size() == 1);
      CHECK_FALSE(g.has_straggler);
      continue;
    }
    CHECK(g.members.size() == 4);
    if (g.seq == 2) {
      CHECK_FALSE(g.has_straggler);  // 100 µs behind the second-last: jitter
      continue;
    }
    REQUIRE(g.has_straggler);
    ++stragglers;
    CHECK(e[g.straggler].pid == 6003);
    CHECK(e[g.straggler].rank == 2);
    CHECK(g.lateness_ns == 15 * kMs - 200'000);
    CHECK(g.wait_ns == 3 * 15 * kMs - 300'000);
  }
  CHECK(stragglers == 2);
}

TEST_CASE("off-CPU intervals: a lost switch-out is inferred from the CPU's own records") {
  ThreadTimelines tl;
  // CPU 0 runs T (tid 10) from t=100; the switch T -> hog (20) was lost; at t=900 the hog hands
  // CPU 0 back to T. Another thread (30) on CPU 1 is switched back in without ever running on
  // CPU 1 before: nothing is inferred for it.
  std::vector<SchedRow> rows{{100, 0, 0, 0, 0, 10, 10}, {900, 0, 20, 20, 0, 10, 10}, {950, 1, 40, 40, 0, 30, 30}};
  tl.build(rows, {}, 2000);
  auto iv = tl.intervals(10);
  REQUIRE(iv.size() == 1);
  CHECK(iv[0].inferred);
  CHECK(iv[0].from_ns == 100);
  CHECK(iv[0].to_ns == 900);
  CHECK(iv[0].state == OffCpuState::runnable);
  CHECK(iv[0].next_pid == 20);
  CHECK(tl.off_cpu_in(10, 0, 2000).runnable_ns == 800);
  CHECK(tl.intervals(30).empty());

  // Woken inside the gap: it had gone to sleep, not been preempted.
  ThreadTimelines tw;
  tw.build(rows, {{500, 10, 10, 20, 20}}, 2000);
  REQUIRE(tw.intervals(10).size() == 1);
  CHECK(tw.intervals(10)[0].state == OffCpuState::sleeping);
  CHECK(tw.off_cpu_in(10, 0, 2000).runnable_ns == 400);
}
