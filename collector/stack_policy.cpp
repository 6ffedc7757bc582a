#include "collector/stack_policy.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace causeway::collector {

int CoarseHistogram::bucket_of(uint64_t ns) {
  if (ns < 4) return static_cast<int>(ns);
  const int octave = 63 - std::countl_zero(ns);  // ≥ 2
  const int sub = static_cast<int>((ns >> (octave - 2)) & 3);
  return std::min(kBuckets - 1, (octave - 1) * 4 + sub);
}

uint64_t CoarseHistogram::low_of(int bucket) {
  if (bucket < 4) return static_cast<uint64_t>(bucket);
  const int octave = bucket / 4 + 1, sub = bucket % 4;
  return (uint64_t{4} | static_cast<uint64_t>(sub)) << (octave - 2);
}

void CoarseHistogram::add(uint64_t ns, uint32_t count) {
  while (total_ >= (uint64_t{1} << 20)) {
    total_ = 0;
    for (uint32_t& c : counts_) total_ += (c >>= 1);
  }
  counts_[static_cast<size_t>(bucket_of(ns))] += count;
  total_ += count;
}

uint64_t CoarseHistogram::quantile_low(double q) const {
  if (total_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(total_))));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[static_cast<size_t>(b)];
    if (seen >= rank) return low_of(b);
  }
  return low_of(kBuckets - 1);
}

void StackPolicy::observe(uint32_t pid, uint16_t op, uint64_t dur_ns, uint32_t count) {
  entries_[key(pid, op)].hist.add(dur_ns, count);
}

uint64_t StackPolicy::threshold(uint64_t p50, uint64_t p95) const {
  return std::max(limits_.floor_ns, std::min({p95, p50 + limits_.margin_ns, limits_.stall_ns}));
}

std::vector<StackPolicy::Update> StackPolicy::updates() {
  std::vector<Update> out;
  for (auto& [k, e] : entries_) {
    if (e.hist.total() < limits_.min_calls) continue;
    const uint64_t t = threshold(e.hist.quantile_low(0.50), e.hist.quantile_low(0.95));
    // The floor is what the BPF side uses without an entry: write only what differs.
    if (e.written == 0 && t == limits_.floor_ns) continue;
    if (e.written != 0 && t + t / 8 >= e.written && e.written + e.written / 8 >= t) continue;
    e.written = t;
    out.push_back({static_cast<uint32_t>(k >> 16), static_cast<uint16_t>(k & 0xffff), t});
  }
  return out;
}

std::vector<uint16_t> StackPolicy::forget(uint32_t pid) {
  std::vector<uint16_t> ops;
  std::erase_if(entries_, [&](const auto& kv) {
    if (kv.first >> 16 != pid) return false;
    if (kv.second.written) ops.push_back(static_cast<uint16_t>(kv.first & 0xffff));
    return true;
  });
  return ops;
}

}  // namespace causeway::collector
