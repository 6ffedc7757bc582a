// Fast calls counted in the kernel (bpf/calls.bpf.h "Aggregated calls") since the collector's
// last read, for one (process, op): merged by the writer into that second's rollup row
// (tracedb/store_writer_aggregated.cpp), beside the recorded calls' own.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace causeway {

struct AggregatedCallsRecord {
  int64_t ts_ns = 0;  // the start of the last call counted: the second the counts are rolled up into
  uint32_t pid = 0;
  uint16_t op = 0;
  uint64_t count = 0, sum_ns = 0, min_ns = 0, max_ns = 0, errors = 0;
  std::vector<std::pair<uint32_t, uint64_t>> hist;  // (bucket of tracedb/histogram.h, count)
};

}  // namespace causeway
