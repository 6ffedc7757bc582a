// Samples each serving process's Prometheus /metrics during the trace (docs/INFERENCE.md
// "Engine metrics") on a thread of its own, so a slow or stuck endpoint never holds up the
// ring drain. The session adds servers as it finds them and takes the samples each round.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bpf/events.h"
#include "collector/endpoint.h"
#include "requests/engine_names.h"
#include "tracedb/records.h"

namespace causeway::collector {

struct ScraperCounters {
  uint64_t scrapes = 0;   // answered with Prometheus text
  uint64_t failures = 0;  // refused, timed out, not a 200, over the cap
  uint64_t bad_lines = 0; // lines of an answer that were not samples
  uint64_t connections = 0;  // connections made (each told to the kernel side while open)
};

// Where the scraper says which connections are its own while they are open: the kernel side's
// own_conns (collector/bpf_loader.h add_own_conn / remove_own_conn), keyed by the server side's
// 4-tuple (collector/sock_decode.h own_conn_key). A traced server that accepts one of them
// leaves it untraced, so a scrape is never stored as a user's request, and a user's
// connection is never taken for a scrape (only the exact tuple, only while it is ours). The
// kernel side forgets a tuple once it matched; one whose exchange did not finish (a server
// slow to accept, the scrape timed out) stays told for kOwnLinger after our close, since the
// server may still accept it from its backlog and answer it.
struct OwnConnections {
  std::function<void(const cw_sock_conn&)> open, close;
};

class EngineScraper {
 public:
  explicit EngineScraper(int64_t interval_ns, OwnConnections own = {});
  ~EngineScraper();
  EngineScraper(const EngineScraper&) = delete;
  EngineScraper& operator=(const EngineScraper&) = delete;

  // A process listening on `at` (in its own network namespace). Its engine is named from its
  // command line and its children's (process titles), else from the metric names it serves.
  void add(uint32_t pid, const Endpoint& at);
  // No scrape after this returns (one in flight is finished); take() still works.
  void stop();
  // After stop() and once the kernel side no longer sees accepts: the connections the servers
  // had not answered are no longer told as ours (until then a server may still accept one
  // from its backlog, and it must be known for a scrape, not stored as a user's request).
  void forget_all_lingering();
  // The scrapes since the last call, one record each.
  std::vector<EngineSampleRecord> take();
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
  static void own_open(void* self, const Endpoint& server, const Endpoint& local);
  static void own_close(void* self, const Endpoint& server, const Endpoint& local, bool answered);
  void forget_lingering(bool all);

  const int64_t interval_ns_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<uint32_t, Target> targets_;
  std::vector<EngineSampleRecord> out_;
  const OwnConnections own_;
  uint32_t scraping_netns_ = 0;  // the namespace of the server being scraped (this thread only)
  std::vector<std::pair<int64_t, cw_sock_conn>> lingering_;  // (steady ns to forget at, key): this thread only
  ScraperCounters counters_;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace causeway::collector
