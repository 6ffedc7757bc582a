// Fast calls counted in the kernel (bpf/calls.bpf.h "Aggregated calls"): the per-CPU
// (process, op) counters, summed over CPUs and turned into what was counted since
// the last read. The arithmetic is pure (unit-tested: tests/unit/test_call_agg.cpp); the reader
// walks the map. docs/COLLECTOR.md "Aggregated calls".
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "bpf/events.h"
#include "tracedb/aggregated_calls.h"

namespace causeway::collector {

// One (process, op)'s counters summed over CPUs. hist: dense, CW_AGG_BUCKETS long.
struct CallAggTotals {
  uint64_t count = 0, errors = 0, sum_ns = 0, min_ns = 0, max_ns = 0, first_ns = 0, last_ns = 0;
  std::vector<uint64_t> hist;
};

// The sum of one key's per-CPU values (a CPU that counted nothing for it is all zero).
CallAggTotals merge_percpu(std::span<const cw_agg_value> per_cpu);
// Adds per-CPU values into t (a key counted in both maps: summed).
void add_percpu(CallAggTotals& t, std::span<const cw_agg_value> per_cpu);

// What was counted between `before` (the previous read of the key; null: none) and `now`, as a
// rollup record with ts_ns = the last call's start (CLOCK_MONOTONIC, as read). count 0: nothing
// new. min/max: the counters' own when they fall in the new calls' lowest/highest bucket, else
// that bucket's bound (within the histogram's bucket error).
AggregatedCallsRecord aggregate_delta(const CallAggTotals& now, const CallAggTotals* before, uint32_t pid, uint16_t op);

// The kernel's maps of counted calls (bpf/calls.bpf.h "Aggregated calls"): per (process, op)
// either an entry of the per-CPU array `slots` (its index in `index`) or of the per-CPU hash.
struct CallAggMaps {
  int hash_fd = -1;
  int index_fd = -1;
  int slots_fd = -1;
};

class CallAggReader {
 public:
  explicit CallAggReader(CallAggMaps maps);
  // Every key with calls counted since the last read; timestamps CLOCK_MONOTONIC.
  std::vector<AggregatedCallsRecord> read();
  uint64_t counted() const { return counted_; }  // calls counted in the kernel so far

 private:
  // Reads the per-CPU values of `key` in map `fd` into now (summed with what is there).
  void add_key(int fd, const void* key, uint64_t k, std::map<uint64_t, CallAggTotals>& now);

  CallAggMaps maps_;
  int ncpu_;
  std::map<uint64_t, CallAggTotals> last_;  // key: pid << 16 | op
  std::vector<cw_agg_value> buf_;           // one value per possible CPU
  uint64_t counted_ = 0;
};

}  // namespace causeway::collector
