// What `causeway trace` shows each second: per op count and p50/p95/p99 over the session,
// host event counts and drops.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "tracedb/aggregated_calls.h"
#include "tracedb/histogram.h"

namespace causeway::collector {

struct OpStats {
  uint64_t count = 0;
  uint64_t errors = 0;
  uint64_t min = UINT64_MAX, max = 0;
  LatencyHistogram hist;
};

class LiveStats {
 public:
  void add_call(uint16_t op, int64_t dur_ns, bool error);
  // Calls counted in the kernel (collector/call_agg.h): histogram, sum and extremes at once.
  void add_counted(const AggregatedCallsRecord& r);
  void add_host(const std::string& what) { ++host_[what]; }

  const std::map<uint16_t, OpStats>& ops() const { return ops_; }
  const std::map<std::string, uint64_t>& host() const { return host_; }
  uint64_t calls() const { return calls_; }

  // The table: one line per op (source, name, count, p50/p95/p99), host counts, drops.
  std::string render(int64_t elapsed_ns, uint64_t dropped_ring, uint64_t dropped_writer, size_t processes) const;

 private:
  std::map<uint16_t, OpStats> ops_;
  std::map<std::string, uint64_t> host_;
  uint64_t calls_ = 0;
};

}  // namespace causeway::collector
