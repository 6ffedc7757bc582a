// `trace --ship URL`: the trace DB shipped while it is written (docs/FLEET.md "Shipping while
// tracing"). A thread of its own runs the same exactly-once ship as `causeway ship` every
// interval, over its own read-only connection: tracing never waits for it, and a failed round
// (server down, link cut) only leaves more for the next one; the local DB keeps everything.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"
#include "fleet/endpoint.h"
#include "fleet/ship.h"

namespace causeway::fleet {

class LiveShipper {
 public:
  LiveShipper(Endpoint endpoint, std::string db_path, int64_t interval_ns);
  ~LiveShipper();  // stops the thread (the round in progress finishes first)
  LiveShipper(const LiveShipper&) = delete;
  LiveShipper& operator=(const LiveShipper&) = delete;

  // Stops the rounds, then ships once more: what the trace wrote last. Its result is the
  // answer (the rounds before only count); the trace has ended, so the DB is complete.
  Result<ShipSummary> finish();

  int rounds_ok() const;
  int rounds_failed() const;
  std::string last_error() const;  // "" when no round failed

 private:
  void loop();
  Endpoint endpoint_;
  std::string db_;
  int64_t interval_ns_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  int ok_ = 0, failed_ = 0;
  std::string last_error_;
  std::thread thread_;
};

}  // namespace causeway::fleet
