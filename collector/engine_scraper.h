// Samples each serving process's Prometheus /metrics during the trace (docs/INFERENCE.md
// "Engine metrics") on a thread of its own, so a slow or stuck endpoint never holds up the
// ring drain. The session adds servers as it finds them and takes the samples each round.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "collector/endpoint.h"
#include "requests/engine_names.h"
#include "tracedb/records.h"

namespace causeway::collector {

struct ScraperCounters {
  uint64_t scrapes = 0;   // answered with Prometheus text
  uint64_t failures = 0;  // refused, timed out, not a 200, over the cap
  uint64_t bad_lines = 0; // lines of an answer that were not samples
};

class EngineScraper {
 public:
  explicit EngineScraper(int64_t interval_ns);
  ~EngineScraper();
  EngineScraper(const EngineScraper&) = delete;
  EngineScraper& operator=(const EngineScraper&) = delete;

  // A process listening on `at` (in its own network namespace). Its engine is named from its
  // command line and its children's (process titles), else from the metric names it serves.
  void add(uint32_t pid, const Endpoint& at);
  // No scrape after this returns (one in flight is finished); take() still works.
  void stop();
  // The scrapes since the last call, one record each.
  std::vector<EngineSampleRecord> take();
  // True when `peer` (a request's client address, Endpoint::text()) is one of the scraper's
  // own recent connections: the traced server sees them as requests, which are not the users'.
  bool own_peer(std::string_view peer) const;
  ScraperCounters counters() const;

 private:
  struct Target {
    uint32_t pid = 0;
    std::vector<Endpoint> endpoints;  // tried in turn until one serves /metrics
    size_t endpoint_index = 0;
    bool serving = false;         // an endpoint answered once: it stays the one
    uint32_t misses = 0;          // failures in a row
    requests::Engine engine = requests::Engine::unknown;
    bool named = false;           // engine read from the command lines
  };
  void run();
  void scrape(Target& t);
  static void note_own(void* self, const Endpoint& local);

  const int64_t interval_ns_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<uint32_t, Target> targets_;
  std::vector<EngineSampleRecord> out_;
  std::deque<std::string> own_peers_;  // local addresses of our recent connections
  ScraperCounters counters_;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace causeway::collector
