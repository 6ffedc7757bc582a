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
  counts_[bucket_of(value)] += count;
  total_ += count;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (const auto& [b, c] : other.counts_) counts_[b] += c;
  total_ += other.total_;
}

bool LatencyHistogram::merge_encoded(std::string_view blob) {
  LatencyHistogram parsed;
  size_t pos = 0;
  uint64_t bucket = 0;
  bool first = true;
  while (pos < blob.size()) {
    uint64_t delta = 0, count = 0;
    if (!get_varint(blob, pos, delta) || !get_varint(blob, pos, count)) return false;
    bucket = first ? delta : bucket + delta;
    first = false;
    if (bucket > 0xFFFFFFFFu || count == 0) return false;
    parsed.counts_[static_cast<uint32_t>(bucket)] += count;
    parsed.total_ += count;
  }
  merge(parsed);
  return true;
}

std::string LatencyHistogram::encode() const {
  std::string out;
  out.reserve(counts_.size() * 3);
  uint32_t prev = 0;
  bool first = true;
  for (const auto& [b, c] : counts_) {
    put_varint(out, first ? b : b - prev);
    put_varint(out, c);
    prev = b;
    first = false;
  }
  return out;
}

uint64_t LatencyHistogram::percentile(double q, uint64_t min_clamp, uint64_t max_clamp) const {
  if (total_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(total_)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (const auto& [b, c] : counts_) {
    seen += c;
    if (seen >= rank) {
      uint64_t lo = bucket_low(b), hi = bucket_high(b);
      uint64_t mid = lo + (hi - lo) / 2;
      return std::clamp(mid, std::min(min_clamp, max_clamp), max_clamp);
    }
  }
  return max_clamp;
}

}  // namespace causeway
