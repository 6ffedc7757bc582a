// Live diagnosis during `causeway trace`: every few seconds, on its own thread (never the
// drain loop's, so analysis cannot back up the rings), the correlator reads what the writer
// has committed through a read-only connection and hands new or changed chains back to the
// writer. Chain ids are stable, so a chain is updated in place as evidence grows.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <sqlite3.h>

#include "common/result.h"
#include "tracedb/store_writer.h"

namespace causeway::collector {

class ChainWatcher {
 public:
  // on_chains(cause -> count of chains so far) is called after each poll (metrics);
  // on_request_pass(read-only connection, session id) after each pass of the request causes
  // (at most every 10 s, and at the end): /metrics' time lost per cause.
  ChainWatcher(std::string db_path, StoreWriter& writer, int64_t session_id, int64_t session_start_ns,
               int64_t interval_ns = 3'000'000'000,
               std::function<void(const std::map<std::string, uint64_t>&)> on_chains = {},
               std::function<void(sqlite3*, int64_t)> on_request_pass = {});
  ~ChainWatcher();
  ChainWatcher(const ChainWatcher&) = delete;
  ChainWatcher& operator=(const ChainWatcher&) = delete;

  void start();
  // Stops polling, then analyzes everything committed (call after the writer's flush) and
  // pushes the final chains. Returns how many chains the session has.
  Result<size_t> finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace causeway::collector
