// Log-linear latency histogram: exact below 128 ns, then 128 sub-buckets per power of two.
// A bucket spans 1/128 of its octave, so reporting its midpoint is within 1/256 ≈ 0.4%
// of any value inside it — percentiles from rollups stay well within the promised 1%.
// Stored sparsely in rollups.hist as varint pairs (index delta, count).
#pragma once

#include <cstdint>
#include <vector>
#include <string>
#include <string_view>

namespace causeway {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr uint64_t kSub = 1u << kSubBits;  // 128
  // bucket_of(UINT64_MAX): octave 63 - kSubBits = 56, last sub-bucket.
  static constexpr uint64_t kMaxBucket = kSub + (64 - kSubBits) * kSub - 1;

  static uint32_t bucket_of(uint64_t value);
  static uint64_t bucket_low(uint32_t bucket);   // smallest value in the bucket
  static uint64_t bucket_high(uint32_t bucket);  // largest value in the bucket

  void add(uint64_t value, uint64_t count = 1);
  void merge(const LatencyHistogram& other);
  // Merges an encoded blob; returns false (and merges nothing) if it is malformed.
  bool merge_encoded(std::string_view blob);
  std::string encode() const;

  uint64_t total() const { return total_; }
  bool empty() const { return total_ == 0; }
  void clear() {
    counts_.clear();
    total_ = 0;
  }
  uint64_t min_value() const;  // lowest bucket's low bound (0 when empty)

  // Nearest-rank percentile (q in [0,1]): midpoint of the bucket holding rank ceil(q*n),
  // clamped to [min_clamp, max_clamp] (the window's exact min and max).
  uint64_t percentile(double q, uint64_t min_clamp, uint64_t max_clamp) const;
  // Where the q-tail starts: the low bound of the lowest bucket needed, counting from the top,
  // to hold the slowest ceil((1 - q) * n) values. A value >= it is in the tail; ties with the
  // quantile itself are not (with 95% of calls at one duration, p95's tail is the other 5%).
  uint64_t tail_floor(double q) const;

  // The values >= `from` (whole buckets from bucket_of(from) up): how many, and their sum
  // counted at each bucket's midpoint (within 0.4%), with `max_clamp` capping the last one.
  struct Tail {
    uint64_t count = 0;
    double sum = 0;
  };
  Tail at_or_above(uint64_t from, uint64_t max_clamp) const;

  // Each non-empty bucket, lowest first: f(bucket, count).
  template <typename F>
  void for_each_bucket(F&& f) const {
    for (uint32_t b = 0; b < counts_.size(); ++b)
      if (counts_[b]) f(b, counts_[b]);
  }

 private:
  // Dense by bucket index, grown to the largest bucket seen: O(1) add; one second of
  // durations up to 1 s needs < 3,000 slots (24 KiB).
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
};

}  // namespace causeway
