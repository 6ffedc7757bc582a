#include "collector/stack_resolver.h"

namespace causeway::collector {

StackResolver::StackResolver(Symbolizer& symbolizer, StoreWriter& writer)
    : symbolizer_(symbolizer), writer_(writer), thread_([this] { run(); }) {}

StackResolver::~StackResolver() { finish(); }

void StackResolver::submit(uint64_t hash, std::vector<FrameLoc> frames) {
  {
    std::lock_guard lock(mu_);
    jobs_.emplace_back(hash, std::move(frames));
  }
  cv_.notify_one();
}

void StackResolver::finish() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void StackResolver::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and everything submitted is resolved
    auto [hash, locs] = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    StackRecord rec;
    rec.hash = hash;
    rec.frames = symbolizer_.resolve_stack(locs);
    writer_.push_meta(std::move(rec));
    lock.lock();
    if (jobs_.empty()) {
      lock.unlock();
      symbolizer_.release_lines();  // out of work: the debug info's memory goes back
      lock.lock();
    }
  }
}

}  // namespace causeway::collector
