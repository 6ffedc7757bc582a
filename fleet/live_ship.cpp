#include "fleet/live_ship.h"

#include <chrono>

namespace causeway::fleet {

LiveShipper::LiveShipper(Endpoint endpoint, std::string db_path, int64_t interval_ns)
    : endpoint_(std::move(endpoint)), db_(std::move(db_path)), interval_ns_(interval_ns), thread_([this] { loop(); }) {}

LiveShipper::~LiveShipper() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LiveShipper::loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, std::chrono::nanoseconds(interval_ns_), [this] { return stop_; })) {
    l.unlock();
    auto r = ship_db(endpoint_, db_);
    l.lock();
    if (r) ++ok_;
    else ++failed_, last_error_ = r.error().message;
  }
}

Result<ShipSummary> LiveShipper::finish() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  return ship_db(endpoint_, db_);
}

int LiveShipper::rounds_ok() const {
  std::lock_guard<std::mutex> l(mu_);
  return ok_;
}

int LiveShipper::rounds_failed() const {
  std::lock_guard<std::mutex> l(mu_);
  return failed_;
}

std::string LiveShipper::last_error() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_error_;
}

}  // namespace causeway::fleet
