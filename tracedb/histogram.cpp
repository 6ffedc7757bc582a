#include "tracedb/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace causeway {
namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool get_varint(std::string_view in, size_t& pos, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= in.size()) return false;
    uint8_t b = static_cast<uint8_t>(in[pos++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace

uint32_t LatencyHistogram::bucket_of(uint64_t value) {
  if (value < kSub) return static_cast<uint32_t>(value);
  int k = 63 - std::countl_zero(value);  // floor(log2 value) >= kSubBits
  uint64_t sub = (value >> (k - kSubBits)) - kSub;
  return static_cast<uint32_t>(kSub + (k - kSubBits) * kSub + sub);
}

uint64_t LatencyHistogram::bucket_low(uint32_t bucket) {
  if (bucket < kSub) return bucket;
  uint32_t octave = (bucket - kSub) / kSub;  // k - kSubBits
  uint64_t sub = (bucket - kSub) % kSub;
  return (kSub + sub) << octave;
}

uint64_t LatencyHistogram::bucket_high(uint32_t bucket) {
  if (bucket < kSub) return bucket;
  uint32_t octave = (bucket - kSub) / kSub;
  return bucket_low(bucket) + ((uint64_t{1} << octave) - 1);
}

void LatencyHistogram::add(uint64_t value, uint64_t count) {
  uint32_t b = bucket_of(value);
  if (b >= counts_.size()) counts_.resize(b + 1, 0);
  counts_[b] += count;
  total_ += count;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (other.counts_.size() > counts_.size()) counts_.resize(other.counts_.size(), 0);
  for (size_t b = 0; b < other.counts_.size(); ++b) counts_[b] += other.counts_[b];
  total_ += other.total_;
}

uint64_t LatencyHistogram::min_value() const {
  for (size_t b = 0; b < counts_.size(); ++b)
    if (counts_[b]) return bucket_low(static_cast<uint32_t>(b));
  return 0;
}

bool LatencyHistogram::merge_encoded(std::string_view blob) {
  // The blob may come from a hostile DB (docs/SECURITY.md): validate fully before touching
  // counts_, so a malformed blob merges nothing. encode() writes strictly increasing buckets,
  // so every delta after the first is >= 1; a delta that would pass kMaxBucket is rejected
  // before it is added (a wrapped sum could otherwise land back in range), and the vector is
  // sized by the largest bucket, not the last one. The counts must not wrap total_ either.
  size_t pos = 0;
  uint64_t bucket = 0, max_bucket = 0, sum = 0;
  bool first = true;
  while (pos < blob.size()) {
    uint64_t delta = 0, count = 0;
    if (!get_varint(blob, pos, delta) || !get_varint(blob, pos, count)) return false;
    if (first) {
      if (delta > kMaxBucket) return false;
      bucket = delta;
    } else {
      if (delta == 0 || delta > kMaxBucket - bucket) return false;
      bucket += delta;
    }
    first = false;
    if (count == 0 || count > UINT64_MAX - sum) return false;
    sum += count;
    max_bucket = std::max(max_bucket, bucket);
  }
  if (sum > UINT64_MAX - total_) return false;
  if (!first && max_bucket >= counts_.size()) counts_.resize(max_bucket + 1, 0);
  pos = 0;
  bucket = 0;
  first = true;
  while (pos < blob.size()) {
    uint64_t delta = 0, count = 0;
    get_varint(blob, pos, delta);
    get_varint(blob, pos, count);
    bucket = first ? delta : bucket + delta;
    first = false;
    counts_[bucket] += count;
  }
  total_ += sum;
  return true;
}

std::string LatencyHistogram::encode() const {
  std::string out;
  out.reserve(counts_.size() * 3);
  uint32_t prev = 0;
  bool first = true;
  for (uint32_t b = 0; b < counts_.size(); ++b) {
    if (!counts_[b]) continue;
    put_varint(out, first ? b : b - prev);
    put_varint(out, counts_[b]);
    prev = b;
    first = false;
  }
  return out;
}

namespace {
// A rank computed in double can round past 2^64 for a total near it (a hostile stored
// blob can hold one): converting that to uint64_t is undefined, so clamp to the total.
uint64_t rank_of(double rank, uint64_t total) {
  if (!(rank > 0)) return 0;
  if (rank >= static_cast<double>(total)) return total;
  return static_cast<uint64_t>(rank);
}
}  // namespace

uint64_t LatencyHistogram::percentile(double q, uint64_t min_clamp, uint64_t max_clamp) const {
  if (total_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  uint64_t rank = rank_of(std::ceil(q * static_cast<double>(total_)), total_);
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (uint32_t b = 0; b < counts_.size(); ++b) {
    seen += counts_[b];
    if (counts_[b] && seen >= rank) {
      uint64_t lo = bucket_low(b), hi = bucket_high(b);
      uint64_t mid = lo + (hi - lo) / 2;
      return std::clamp(mid, std::min(min_clamp, max_clamp), max_clamp);
    }
  }
  return max_clamp;
}

uint64_t LatencyHistogram::tail_floor(double q) const {
  if (total_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // 1 - 0.95 is 0.05000000000000004 in binary: without the slack 5% of 200 would need 11.
  const uint64_t need =
      std::max<uint64_t>(1, rank_of(std::ceil((1.0 - q) * static_cast<double>(total_) - 1e-6), total_));
  uint64_t seen = 0;
  for (size_t b = counts_.size(); b-- > 0;) {
    seen += counts_[b];
    if (counts_[b] && seen >= need) return bucket_low(static_cast<uint32_t>(b));
  }
  return 0;
}

LatencyHistogram::Tail LatencyHistogram::at_or_above(uint64_t from, uint64_t max_clamp) const {
  Tail t;
  for (uint32_t b = bucket_of(from); b < counts_.size(); ++b) {
    if (!counts_[b]) continue;
    const uint64_t lo = bucket_low(b), hi = bucket_high(b);
    t.count += counts_[b];
    t.sum += static_cast<double>(counts_[b]) * static_cast<double>(std::min(lo + (hi - lo) / 2, std::max(lo, max_clamp)));
  }
  return t;
}

}  // namespace causeway
