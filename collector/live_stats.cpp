#include "collector/live_stats.h"

#include <cstdio>

#include "common/units.h"
#include "tracedb/op_catalog.h"

namespace causeway::collector {

void LiveStats::add_call(uint16_t op, int64_t dur_ns, bool error) {
  OpStats& s = ops_[op];
  const uint64_t d = dur_ns > 0 ? static_cast<uint64_t>(dur_ns) : 0;
  ++s.count;
  s.errors += error;
  s.min = std::min(s.min, d);
  s.max = std::max(s.max, d);
  s.hist.add(d);
  ++calls_;
}

void LiveStats::add_counted(const AggregatedCallsRecord& r) {
  if (r.count == 0) return;
  OpStats& s = ops_[r.op];
  s.count += r.count;
  s.errors += r.errors;
  s.min = std::min(s.min, r.min_ns);
  s.max = std::max(s.max, r.max_ns);
  for (const auto& [bucket, n] : r.hist) s.hist.add(LatencyHistogram::bucket_low(bucket), n);
  calls_ += r.count;
}

std::string LiveStats::render(int64_t elapsed_ns, uint64_t dropped_ring, uint64_t dropped_writer,
                              size_t processes) const {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "causeway trace  %s  processes %zu  calls %llu  dropped ring %llu writer %llu\n",
                format_duration_ns(elapsed_ns).c_str(), processes, static_cast<unsigned long long>(calls_),
                static_cast<unsigned long long>(dropped_ring), static_cast<unsigned long long>(dropped_writer));
  out += line;
  std::snprintf(line, sizeof(line), "%-7s %-28s %10s %10s %10s %10s %7s\n", "source", "op", "count", "p50", "p95", "p99",
                "errors");
  out += line;
  for (const auto& [op, s] : ops_) {
    const OpInfo* info = find_op(op);
    if (!info || !info->is_call || s.count == 0) continue;
    std::snprintf(line, sizeof(line), "%-7s %-28s %10llu %10s %10s %10s %7llu\n",
                  std::string(source_name(info->source)).c_str(), std::string(info->name).c_str(),
                  static_cast<unsigned long long>(s.count),
                  format_duration_ns(static_cast<int64_t>(s.hist.percentile(0.50, s.min, s.max))).c_str(),
                  format_duration_ns(static_cast<int64_t>(s.hist.percentile(0.95, s.min, s.max))).c_str(),
                  format_duration_ns(static_cast<int64_t>(s.hist.percentile(0.99, s.min, s.max))).c_str(),
                  static_cast<unsigned long long>(s.errors));
    out += line;
  }
  if (!host_.empty()) {
    out += "host   ";
    for (const auto& [what, n] : host_) {
      std::snprintf(line, sizeof(line), " %s %llu", what.c_str(), static_cast<unsigned long long>(n));
      out += line;
    }
    out += "\n";
  }
  return out;
}

}  // namespace causeway::collector
