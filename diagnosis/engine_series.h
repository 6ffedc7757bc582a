// An engine's own state over the session, from its scraped /metrics (the engine_metrics
// table): requests running and waiting, KV-cache usage, preemptions, one point per scrape.
// What the queueing and kv_cache_pressure causes read (docs/INFERENCE.md).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace causeway::requests {

struct EnginePoint {
  int64_t ts_ns = 0;
  std::optional<double> running, waiting, kv_cache_usage;
  std::optional<double> preemptions;  // cumulative, as exposed
};

struct EngineSeries {
  std::vector<EnginePoint> points;  // by time
  int64_t spacing_ns = 0;           // median time between scrapes: how long a gauge's value is taken to hold
  // Points whose value holds over part of [from, to]: a gauge read at t holds for
  // [t - spacing/2, t + spacing/2].
  template <typename F>
  void each_near(int64_t from, int64_t to, F f) const {
    for (const EnginePoint& p : points)
      if (p.ts_ns + spacing_ns / 2 >= from && p.ts_ns - spacing_ns / 2 <= to) f(p);
  }
};

// By server pid (the process scraped). Values of one name are summed over its label sets
// (one per data-parallel engine); for KV usage the first role name present is taken.
std::map<uint32_t, EngineSeries> load_engine_series(sqlite3* db, int64_t session_id);

// Length of the union of intervals clipped to [from, to].
double covered_ns(std::vector<std::pair<int64_t, int64_t>> spans, int64_t from, int64_t to);

}  // namespace causeway::requests
