// `trace --ship URL`: the trace DB shipped while it is written (docs/FLEET.md "Shipping while
// tracing"). A thread of its own runs the same exactly-once ship as `causeway ship` every
// interval, over its own read-only connection: tracing never waits for it, and a failed round
// (server down, link cut, a hostile store past a limit) only leaves more for the next one; the
// local DB keeps everything. The store never holds the trace's end: at the stop the round in
// progress is cut at once, and the last round has a time of its own (docs/SECURITY.md
// "A hostile fleet store").
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"
#include "fleet/clickhouse.h"
#include "fleet/endpoint.h"
#include "fleet/ship.h"

namespace causeway::fleet {

class LiveShipper {
 public:
  LiveShipper(Endpoint endpoint, std::string db_path, int64_t interval_ns);
  ~LiveShipper();  // stops the thread (the round in progress is cut)
  LiveShipper(const LiveShipper&) = delete;
  LiveShipper& operator=(const LiveShipper&) = delete;

  // Cuts the round in progress, then ships once more, what the trace wrote last, within
  // `budget` as a whole: a store that trickles or stalls cannot hold the trace's exit. Its
  // result is the answer (the rounds before only count); the trace has ended, so the DB is
  // complete, and what the last round could not send `causeway ship` sends later.
  Result<ShipSummary> finish(std::chrono::milliseconds budget);

  int rounds_ok() const;
  int rounds_failed() const;
  std::string last_error() const;  // "" when no round failed

 private:
  void loop();
  void stop_rounds();
  Endpoint endpoint_;
  std::string db_;
  int64_t interval_ns_;
  std::shared_ptr<CallStop> rounds_stop_ = std::make_shared<CallStop>();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  int ok_ = 0, failed_ = 0;
  std::string last_error_;
  std::thread thread_;
};

}  // namespace causeway::fleet
