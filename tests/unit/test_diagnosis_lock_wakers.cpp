// lock_contention names the sibling thread that held what the victim waited for. Two false HIGH
// chains seen on a real H100 (docs/GPU.md, "Two false HIGH chains"), rebuilt here from rows:
//  - a chain holds every thread of a process slow in one op; when two threads wake each other,
//    the top waker over all of them can be the very thread the chain reports ("thread 1093
//    woken by sibling thread 1093"). A wake-up by the thread itself is never a culprit;
//  - a side thread that sleeps between its CUDA calls until the main thread, busy launching
//    kernels meanwhile, hands it work is idle, not blocked on a lock.
// And the shape that must stay lock_contention: a thread blocked between calls by a sibling that
// makes no CUDA call while it holds the lock.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "diagnosis/correlator.h"
#include "bpf/events.h"
#include "tests/support/test_support.h"
#include "tests/unit/diagnosis_live_session.h"

using namespace causeway;
using causeway::test::Live;
using causeway::test::TempDir;
using json = nlohmann::json;

namespace {

constexpr int64_t kUs = 1'000, kMs = 1'000'000;
constexpr uint32_t kP = 5100, kSide = 5101, kHolder = 5102;

std::string describe(const std::vector<ChainRecord>& chains) {
  std::string s;
  for (const auto& c : chains)
    s += c.severity + " " + c.cause + " " + c.op + " calls " + std::to_string(c.calls) + " " + c.summary + "\n";
  return s;
}

// A sleep of `tid` from `from` to `to`, ended by a wake-up from `waker` just before.
void sleep_until_woken(Live& l, uint32_t tid, int64_t from, int64_t to, uint32_t waker) {
  l.sw(from, tid, kP, 1, 0, 0);
  l.wake(to - 20 * kUs, tid, kP, waker, kP);
  l.sw(to - 10 * kUs, 0, 0, 0, tid, kP);
}

// The traced process (main thread kP) and one more thread of it.
void start(Live& l, uint32_t tid, const std::string& comm) {
  l.proc(kP, "python3");
  l.w->push_meta(ThreadRecord{tid, kP, comm});
}

}  // namespace

TEST_CASE("lock_contention: threads that wake each other never name the reported thread as its own waker") {
  TempDir dir;
  Live l(dir.file("l.db"));
  start(l, kSide, "python3");
  // The main thread's syncs: one in four sleeps 5 ms until the side thread wakes it (500 slow
  // calls, 2.5 s). The side thread's syncs, one per six iterations, each sleep 12 ms until the
  // main thread wakes it (334 slow calls, 4 s): the main thread woke more in all, but the chain
  // reports the main thread (most slow calls), whose waker is the side thread.
  int64_t t = l.t0 + kMs;
  for (int i = 0; i < 2000; ++i) {
    const bool slow = i % 4 == 0;
    const int64_t dur = slow ? 5 * kMs : 50 * kUs;
    l.call(kP, kP, CW_OP_CUDA_STREAM_SYNC, t, dur);
    if (slow) sleep_until_woken(l, kP, t + 10 * kUs, t + dur, kSide);
    t += dur + 60 * kUs;
    if (i % 6 == 0) {
      l.call(kP, kSide, CW_OP_CUDA_STREAM_SYNC, t, 12 * kMs);
      sleep_until_woken(l, kSide, t + 10 * kUs, t + 12 * kMs, kP);
      t += 12 * kMs + 60 * kUs;
    }
  }
  auto chains = l.finish(dir.file("l.db"));
  INFO(describe(chains));
  const ChainRecord* c = nullptr;
  for (const auto& x : chains)
    if (x.cause == "lock_contention" && !c) c = &x;
  REQUIRE(c);
  const json doc = json::parse(c->doc);
  INFO(doc.dump());
  CHECK(doc["tid"] == kP);
  REQUIRE(doc["culprit"].is_object());
  CHECK(doc["culprit"]["tid"] == kSide);
  CHECK(doc["culprit"]["tid"] != doc["tid"]);
  CHECK(c->summary.find("(tid " + std::to_string(kP) + ")") == std::string::npos);
}

TEST_CASE("lock_contention: a side thread idle between calls until the main thread hands it work is no lock") {
  TempDir dir;
  Live l(dir.file("l.db"));
  start(l, kSide, "python3");
  // The main thread launches a kernel and waits for it every 100 µs, all the time. The side
  // thread makes one launch per 20 ms and sleeps in between until the main thread (launching
  // meanwhile) wakes it.
  int64_t t = l.t0 + kMs;
  int64_t side_next = t + 5 * kMs;
  int64_t side_slept = -1;
  for (int i = 0; i < 40000; ++i) {
    l.call(kP, kP, CW_OP_CUDA_LAUNCH_KERNEL_INTERNAL, t, 20 * kUs, {0, 0xbeef0000});
    l.call(kP, kP, CW_OP_CUDA_STREAM_SYNC, t + 30 * kUs, 60 * kUs);
    if (t >= side_next) {
      if (side_slept >= 0) sleep_until_woken(l, kSide, side_slept, t + 40 * kUs, kP);
      l.call(kP, kSide, CW_OP_CUDA_LAUNCH_KERNEL_INTERNAL, t + 40 * kUs, 20 * kUs, {0, 0xbeef1000});
      side_slept = t + 70 * kUs;
      side_next = t + 20 * kMs;
    }
    t += 100 * kUs;
  }
  auto chains = l.finish(dir.file("l.db"));
  INFO(describe(chains));
  for (const auto& c : chains) CHECK(c.cause != "lock_contention");
  for (const auto& c : chains) CHECK(c.severity != "HIGH");
}

TEST_CASE("lock_contention: blocked between calls by a sibling that makes no CUDA call is still named") {
  TempDir dir;
  Live l(dir.file("l.db"));
  start(l, kHolder, "pt_checkpoint");
  // Launch, sync; before one iteration in ten the main thread sleeps 5 ms between the two
  // until the checkpoint thread, which makes no CUDA call, releases the lock and wakes it.
  int64_t t = l.t0 + kMs;
  for (int i = 0; i < 3000; ++i) {
    l.call(kP, kP, CW_OP_CUDA_LAUNCH_KERNEL, t, 20 * kUs, {0, 0xbeef0000});
    t += 30 * kUs;
    if (i % 10 == 0) {
      sleep_until_woken(l, kP, t, t + 5 * kMs, kHolder);
      t += 5 * kMs;
    }
    l.call(kP, kP, CW_OP_CUDA_STREAM_SYNC, t, 200 * kUs);
    t += 250 * kUs;
  }
  auto chains = l.finish(dir.file("l.db"));
  INFO(describe(chains));
  REQUIRE(!chains.empty());
  CHECK(chains[0].cause == "lock_contention");
  CHECK(chains[0].severity == "HIGH");
  const json doc = json::parse(chains[0].doc);
  CHECK(doc["where"] == "between_calls");
  CHECK(doc["culprit"]["tid"] == kHolder);
}

TEST_CASE("lock_contention: a side thread whose waker was preempted meanwhile is no lock (the waker's CPU contention)") {
  TempDir dir;
  Live l(dir.file("l.db"));
  constexpr uint32_t kHog = 5200;
  start(l, kSide, "python3");
  l.proc(kHog, "cw_hog");
  // The shape of PyTorch's autograd thread on an H200 under a CPU hog (docs/GPU.md): the main
  // thread launches, hands the side thread work and goes on; the side thread launches once and
  // sleeps until the next hand-off. Each round the main thread is preempted by the hog for
  // 15 ms and makes no call meanwhile, so the side thread's sleep ends late: the delay is the
  // hog's, through the main thread; nothing shows a lock.
  int64_t t = l.t0 + kMs;
  for (int round = 0; round < 200; ++round) {
    for (int j = 0; j < 10; ++j, t += 100 * kUs) l.call(kP, kP, CW_OP_CUDA_LAUNCH_KERNEL_INTERNAL, t, 20 * kUs, {0, 0xbeef0000});
    // The side thread goes to sleep; one round in two the main thread is preempted 15 ms before
    // it hands over (no call of its own meanwhile), else it hands over at once.
    const int64_t preempted = round % 2 ? 15 * kMs : 0;
    if (preempted) {
      l.sw(t + 20 * kUs, kP, kP, 0, kHog, kHog);
      l.sw(t + 20 * kUs + preempted, kHog, kHog, 0, kP, kP);
    }
    sleep_until_woken(l, kSide, t, t + 100 * kUs + preempted, kP);
    t += 100 * kUs + preempted;
    l.call(kP, kSide, CW_OP_CUDA_LAUNCH_KERNEL_INTERNAL, t, 20 * kUs, {0, 0xbeef1000});
    t += 50 * kUs;
  }
  auto chains = l.finish(dir.file("l.db"));
  INFO(describe(chains));
  for (const auto& c : chains) CHECK(c.cause != "lock_contention");
}
