// Which returning calls get a user stack: the per-(process, op) duration threshold that
// bpf/calls.bpf.h reads from its stack_thresholds map, derived from running percentiles of
// the calls the collector has seen.
//
//   threshold = max(floor, min(p95, p50 + margin, stall))
//
// p95 keeps stacks to the slow tail of each op. The two caps keep every call the correlator
// can call slow stacked: an outlier is ≥ median + 100 µs (diagnosis/baseline.h), and margin
// (50 µs) leaves room for the live median to sit above the correlator's; a call ≥ stall
// (500 µs, the correlator's min_stall_ns) may hold a host stall even when the whole op is
// slow. floor (50 µs) is also what a pair without an entry gets: µs-scale jitter of launches
// never pays for a stack walk. Rationale and what is lost: docs/COLLECTOR.md "Stacks".
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace causeway::collector {

struct StackLimits {
  uint64_t floor_ns = 50'000;
  uint64_t margin_ns = 50'000;
  uint64_t stall_ns = 500'000;
  uint64_t min_calls = 64;  // percentiles from fewer calls are not trusted: the floor applies
};

// Durations in 4 log-linear buckets per power of two (a bucket's low bound is within 25% of
// its values; a threshold from low bounds errs toward more stacks). Counts halve past 2^20
// calls, so the percentiles follow the recent calls. 656 B.
class CoarseHistogram {
 public:
  static constexpr int kBuckets = 41 * 4;  // up to 2^42 ns (73 min); longer counts as the last
  void add(uint64_t ns, uint32_t count = 1);
  uint64_t total() const { return total_; }
  // Low bound of the bucket holding the nearest-rank q-quantile (0 when empty).
  uint64_t quantile_low(double q) const;
  static int bucket_of(uint64_t ns);
  static uint64_t low_of(int bucket);

 private:
  std::array<uint32_t, kBuckets> counts_{};
  uint64_t total_ = 0;
};

class StackPolicy {
 public:
  explicit StackPolicy(StackLimits limits = {}) : limits_(limits) {}

  void observe(uint32_t pid, uint16_t op, uint64_t dur_ns, uint32_t count = 1);

  struct Update {
    uint32_t pid = 0;
    uint16_t op = 0;
    uint64_t threshold_ns = 0;
  };
  // Thresholds that moved by more than 1/8 since last written (or were never written).
  std::vector<Update> updates();
  // Drops pid's state; returns the ops whose thresholds were written, to delete from the map.
  std::vector<uint16_t> forget(uint32_t pid);

  uint64_t threshold(uint64_t p50, uint64_t p95) const;
  const StackLimits& limits() const { return limits_; }

 private:
  struct Entry {
    CoarseHistogram hist;
    uint64_t written = 0;  // 0: not in the map (the floor applies)
  };
  static uint64_t key(uint32_t pid, uint16_t op) { return uint64_t{pid} << 16 | op; }
  StackLimits limits_;
  std::unordered_map<uint64_t, Entry> entries_;
};

}  // namespace causeway::collector
