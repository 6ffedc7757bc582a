#include "collector/early_maps.h"

#include <bpf/libbpf.h>
#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace causeway::collector {

namespace {
constexpr int kStopCheckMs = 50;  // without a RingWait: how soon the thread notices stop
// Long enough for the biggest maps file (a PyTorch process: ~10k lines, a few ms).
constexpr auto kWaitForRead = std::chrono::milliseconds(100);
}  // namespace

EarlyMaps::EarlyMaps(int ring_fd) {
  ring_ = ring_buffer__new(ring_fd, on_pid, this, nullptr);
  if (!ring_) {
    error_ = std::string("cannot map the new-process ring: ") + std::strerror(errno);
    return;
  }
  if (auto w = RingWait::over({ring_buffer__epoll_fd(ring_)})) wait_ = std::move(*w);
  thread_ = std::thread([this] { run(); });
  // The lowest real-time priority: above every normal thread, so the read happens while the
  // announced call is still running. It does one small read per new process.
  sched_param sp{};
  sp.sched_priority = 1;
  realtime_ = pthread_setschedparam(thread_.native_handle(), SCHED_FIFO, &sp) == 0;
}

EarlyMaps::~EarlyMaps() {
  stop_ = true;
  if (wait_) wait_->wake();
  if (thread_.joinable()) thread_.join();
  if (ring_) ring_buffer__free(ring_);
}

int EarlyMaps::on_pid(void* ctx, void* data, size_t size) {
  if (size < sizeof(uint32_t)) return 0;
  uint32_t pid;
  std::memcpy(&pid, data, sizeof(pid));
  static_cast<EarlyMaps*>(ctx)->read_now(pid);
  return 0;
}

void EarlyMaps::read_now(uint32_t pid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reading_.insert(pid);
  }
  std::vector<Mapping> maps = read_maps(pid);
  std::lock_guard<std::mutex> lock(mu_);
  reading_.erase(pid);
  if (!maps.empty()) {
    kept_.insert_or_assign(pid, std::move(maps));
    order_.push_back(pid);
    while (order_.size() > kMaxKept) {
      kept_.erase(order_.front());
      order_.pop_front();
    }
  }
  read_done_.notify_all();
}

// Each announced pid is forced awake (bpf/maps.bpf.h rb_new_procs), so the thread sleeps
// until one comes or stop wakes it.
void EarlyMaps::run() {
  serve_ring_until_stopped(ring_, wait_, stop_, kStopCheckMs);
}

std::optional<std::vector<Mapping>> EarlyMaps::take(uint32_t pid) {
  std::unique_lock<std::mutex> lock(mu_);
  read_done_.wait_for(lock, kWaitForRead, [&] { return !reading_.count(pid); });
  auto it = kept_.find(pid);
  if (it == kept_.end()) return std::nullopt;
  std::vector<Mapping> maps = std::move(it->second);
  kept_.erase(it);
  // order_ keeps the pid until it reaches the front; erasing an absent key then is harmless.
  return maps;
}

}  // namespace causeway::collector
