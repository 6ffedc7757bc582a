#include "collector/ring_wait.h"

#include <bpf/libbpf.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace causeway::collector {

Result<RingWait> RingWait::over(const std::vector<int>& fds) {
  auto fail = [](const char* what) {
    return make_error("ring_wait", std::string(what) + ": " + std::strerror(errno));
  };
  RingWait w;
  w.epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!w.epoll_) return fail("epoll_create1");
  w.wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!w.wake_) return fail("eventfd");
  std::vector<int> all = fds;
  all.push_back(w.wake_.get());
  for (int fd : all) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(w.epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return fail("epoll_ctl");
  }
  return w;
}

bool RingWait::wait(int timeout_ms) {
  epoll_event ev[4];
  const int n = ::epoll_wait(epoll_.get(), ev, 4, timeout_ms);
  if (n < 0) return errno == EINTR;  // a signal (SIGINT): the caller looks at its stop flag
  for (int i = 0; i < n; ++i)
    if (ev[i].data.fd == wake_.get()) {
      uint64_t v;
      (void)!::read(wake_.get(), &v, sizeof(v));
    }
  return n > 0;
}

void RingWait::wake() {
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
}

void serve_ring_until_stopped(ring_buffer* rb, std::optional<RingWait>& wait, const std::atomic<bool>& stop,
                              int fallback_ms) {
  while (!stop) {
    if (!wait) {
      (void)ring_buffer__poll(rb, fallback_ms);
      continue;
    }
    wait->wait(-1);
    (void)ring_buffer__consume(rb);
  }
}

int next_drain_wait_ms(uint64_t records, bool rings_emptied, int last_ms) {
  if (records >= kDrainBusyRecords || !rings_emptied) return kDrainWaitBusyMs;
  return std::clamp(last_ms * 2, kDrainWaitBusyMs, kDrainWaitIdleMs);
}

}  // namespace causeway::collector
