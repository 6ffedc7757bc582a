#include "fleet/live_ship.h"

#include <cstdio>

namespace causeway::fleet {

LiveShipper::LiveShipper(Endpoint endpoint, std::string db_path, int64_t interval_ns)
    : endpoint_(std::move(endpoint)), db_(std::move(db_path)), interval_ns_(interval_ns) {
  rounds_stop_->reason = "the trace stopped: the round in progress was cut";
  thread_ = std::thread([this] { loop(); });
}

LiveShipper::~LiveShipper() { stop_rounds(); }

void LiveShipper::stop_rounds() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  rounds_stop_->stop.store(true, std::memory_order_release);  // cuts the call in flight
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LiveShipper::loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, std::chrono::nanoseconds(interval_ns_), [this] { return stop_; })) {
    l.unlock();
    auto r = ship_db(endpoint_, db_, kDefaultBatchRows, rounds_stop_);
    l.lock();
    if (stop_) break;  // cut by the stop: neither a success nor a failure of the store
    if (r) ++ok_;
    else ++failed_, last_error_ = r.error().message;
  }
}

Result<ShipSummary> LiveShipper::finish(std::chrono::milliseconds budget) {
  stop_rounds();
  auto last = std::make_shared<CallStop>();
  char text[96];
  std::snprintf(text, sizeof text, "the last ship round after the trace has %.3g s in all", static_cast<double>(budget.count()) / 1000);
  last->reason = text;
  last->until_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           (std::chrono::steady_clock::now() + budget).time_since_epoch())
                           .count(),
                       std::memory_order_release);
  return ship_db(endpoint_, db_, kDefaultBatchRows, last);
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
