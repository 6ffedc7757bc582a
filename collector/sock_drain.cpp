#include "collector/sock_drain.h"

#include <bpf/libbpf.h>
#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace causeway::collector {

namespace {
// The producers wake the thread when it has caught up (bpf_ringbuf_submit's adaptive
// wake-up), and stop wakes it (RingWait); only without a RingWait (no epoll or eventfd) does
// it poll, this often, to notice stop.
constexpr int kSockDrainPollMs = 20;
}  // namespace

SockDrain::SockDrain(int ring_fd, size_t max_queued) : max_queued_(max_queued) {
  ring_ = ring_buffer__new(ring_fd, on_record, this, nullptr);
  if (!ring_) {
    error_ = std::string("cannot map the socket ring: ") + std::strerror(errno);
    return;
  }
  if (auto w = RingWait::over({ring_buffer__epoll_fd(ring_)})) wait_ = std::move(*w);
  thread_ = std::thread([this] { run(); });
  // The lowest real-time priority, as the early maps reader: on a loaded host a normal
  // thread waits its turn behind a run queue of busy ones while the ring fills.
  sched_param sp{};
  sp.sched_priority = 1;
  realtime_ = pthread_setschedparam(thread_.native_handle(), SCHED_FIFO, &sp) == 0;
}

SockDrain::~SockDrain() {
  stop_thread();
  if (ring_) ring_buffer__free(ring_);
}

int SockDrain::on_record(void* ctx, void* data, size_t size) {
  auto* d = static_cast<SockDrain*>(ctx);
  std::lock_guard lk(d->mu_);
  std::vector<char>& q = d->queued_.bytes;
  if (q.size() + sizeof(uint32_t) + size > d->max_queued_) {
    d->dropped_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const auto n = static_cast<uint32_t>(size);
  const size_t at = q.size();
  q.resize(at + sizeof(n) + size);
  std::memcpy(q.data() + at, &n, sizeof(n));
  std::memcpy(q.data() + at + sizeof(n), data, size);
  d->records_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

void SockDrain::run() {
  serve_ring_until_stopped(ring_, wait_, stop_, kSockDrainPollMs);
}

void SockDrain::stop_thread() {
  stop_ = true;
  if (wait_) wait_->wake();
  if (thread_.joinable()) thread_.join();
}

SockBatch SockDrain::take() {
  std::lock_guard lk(mu_);
  return std::exchange(queued_, {});
}

void SockDrain::finish() {
  stop_thread();
  if (ring_) (void)ring_buffer__consume(ring_);
}

}  // namespace causeway::collector
