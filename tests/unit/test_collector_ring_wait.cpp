// The drain's sleep (collector/ring_wait.h): it ends when a watched fd is readable, when
// another thread wakes it, or at its timeout; and how long the next one is after a round.
#include <doctest/doctest.h>

#include <sys/epoll.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "collector/ring_wait.h"

using namespace causeway::collector;
using Clock = std::chrono::steady_clock;

namespace {

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { REQUIRE(::pipe(fds) == 0); }
  ~Pipe() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
};

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

TEST_CASE("a wait with nothing readable lasts its timeout and says so") {
  Pipe p;
  auto w = RingWait::over({p.fds[0]});
  REQUIRE(w);
  const auto t0 = Clock::now();
  CHECK_FALSE(w->wait(30));
  CHECK(ms_since(t0) >= 25);
}

TEST_CASE("a readable fd ends the wait at once, also through a nested epoll set like libbpf's") {
  Pipe p;
  // libbpf's ring_buffer__epoll_fd is an epoll set of its own: RingWait watches that set.
  const int inner = ::epoll_create1(EPOLL_CLOEXEC);
  REQUIRE(inner >= 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = p.fds[0];
  REQUIRE(::epoll_ctl(inner, EPOLL_CTL_ADD, p.fds[0], &ev) == 0);
  auto w = RingWait::over({inner});
  REQUIRE(w);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(::write(p.fds[1], "x", 1) == 1);
  });
  const auto t0 = Clock::now();
  CHECK(w->wait(5000));
  CHECK(ms_since(t0) < 2500);
  writer.join();
  ::close(inner);
}

TEST_CASE("wake() from another thread ends a wait without timeout, and is consumed by it") {
  Pipe p;
  auto w = RingWait::over({p.fds[0]});
  REQUIRE(w);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    w->wake();
  });
  const auto t0 = Clock::now();
  CHECK(w->wait(-1));
  CHECK(ms_since(t0) < 2500);
  stopper.join();
  CHECK_FALSE(w->wait(10));  // the wake-up was used up
  w->wake();                 // before the wait: the wait still ends at once
  CHECK(w->wait(5000));
}

TEST_CASE("the next wait is short while records come in bulk or wait in a ring, and doubles up to the idle bound otherwise") {
  CHECK(next_drain_wait_ms(kDrainBusyRecords, true, kDrainWaitIdleMs) == kDrainWaitBusyMs);
  CHECK(next_drain_wait_ms(kDrainBusyRecords * 10, true, 40) == kDrainWaitBusyMs);
  CHECK(next_drain_wait_ms(0, true, kDrainWaitBusyMs) == 2 * kDrainWaitBusyMs);
  CHECK(next_drain_wait_ms(kDrainBusyRecords - 1, true, 20) == 40);
  CHECK(next_drain_wait_ms(0, true, 80) == kDrainWaitIdleMs);
  CHECK(next_drain_wait_ms(0, true, kDrainWaitIdleMs) == kDrainWaitIdleMs);
  // Records left in a ring (the writer's queue had little room): few taken, yet no longer sleep.
  CHECK(next_drain_wait_ms(100, false, kDrainWaitIdleMs) == kDrainWaitBusyMs);
}

TEST_CASE("a fd that cannot be watched is an error, not a wait that never ends") {
  auto w = RingWait::over({-1});
  REQUIRE_FALSE(w);
  CHECK(w.error().code == "ring_wait");
}
