#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tracedb/histogram.h"

using namespace causeway;

TEST_CASE("buckets are exact below 128 ns and 1/128 of an octave above") {
  for (uint64_t v = 0; v < 128; ++v) {
    CHECK(LatencyHistogram::bucket_of(v) == v);
    CHECK(LatencyHistogram::bucket_low(static_cast<uint32_t>(v)) == v);
  }
  for (uint64_t v : {128ull, 129ull, 255ull, 256ull, 1000ull, 123456789ull, 1ull << 40, ~0ull}) {
    uint32_t b = LatencyHistogram::bucket_of(v);
    CHECK(LatencyHistogram::bucket_low(b) <= v);
    CHECK(LatencyHistogram::bucket_high(b) >= v);
    double width = static_cast<double>(LatencyHistogram::bucket_high(b) - LatencyHistogram::bucket_low(b) + 1);
    CHECK(width / static_cast<double>(LatencyHistogram::bucket_low(b)) <= 1.0 / 128 + 1e-12);
  }
  CHECK(LatencyHistogram::bucket_of(~0ull) == LatencyHistogram::kMaxBucket);
}

TEST_CASE("encode/merge_encoded round-trips and rejects malformed blobs") {
  LatencyHistogram h;
  for (uint64_t v : {5ull, 5ull, 300ull, 2'000'000ull, 9'000'000'000ull}) h.add(v);
  LatencyHistogram back;
  REQUIRE(back.merge_encoded(h.encode()));
  CHECK(back.total() == 5);
  CHECK(back.encode() == h.encode());
  CHECK(back.percentile(0.5, 5, 9'000'000'000ull) == h.percentile(0.5, 5, 9'000'000'000ull));

  LatencyHistogram untouched;
  untouched.add(7);
  CHECK_FALSE(untouched.merge_encoded(std::string("\x80", 1)));          // truncated varint
  CHECK_FALSE(untouched.merge_encoded(std::string("\x05\x00", 2)));      // zero count
  CHECK_FALSE(untouched.merge_encoded(std::string("\xff\xff\xff\xff\x0f\x01", 6)));  // bucket out of range
  CHECK(untouched.total() == 1);
  CHECK(LatencyHistogram().merge_encoded(""));
}

namespace {
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7F) | 0x80));
  out.push_back(static_cast<char>(v));
  return out;
}
}  // namespace

TEST_CASE("merge_encoded refuses hostile blobs: wrapped deltas, repeated buckets, wrapped totals") {
  const uint64_t top = LatencyHistogram::kMaxBucket;
  LatencyHistogram h;
  h.add(7);
  // Bucket kMaxBucket, then a delta that wraps past 2^64 back to bucket 0: sizing by the last
  // bucket wrote counts_[kMaxBucket] out of bounds (issue 24).
  CHECK_FALSE(h.merge_encoded(varint(top) + varint(1) + varint(UINT64_MAX - top + 1) + varint(1)));
  CHECK_FALSE(h.merge_encoded(varint(3) + varint(1) + varint(0) + varint(1)));                // bucket 3 twice
  CHECK_FALSE(h.merge_encoded(varint(top - 1) + varint(1) + varint(2) + varint(1)));          // past the top
  CHECK_FALSE(h.merge_encoded(varint(1) + varint(UINT64_MAX) + varint(1) + varint(1)));       // counts wrap
  CHECK(h.total() == 1);
  LatencyHistogram full;
  REQUIRE(full.merge_encoded(varint(1) + varint(UINT64_MAX - 1)));
  CHECK_FALSE(full.merge_encoded(varint(2) + varint(2)));  // would wrap total()
  CHECK(full.total() == UINT64_MAX - 1);
  // A total near 2^64 rounds past it in double: the rank is clamped, not converted out of
  // range (the storeddata fuzzer's find: UBSan, float-cast-overflow).
  CHECK(full.percentile(1.0, 0, UINT64_MAX) == full.percentile(0.999, 0, UINT64_MAX));
  CHECK(full.tail_floor(0.0) == LatencyHistogram::bucket_low(1));
  LatencyHistogram edge;
  CHECK(edge.merge_encoded(varint(0) + varint(1) + varint(top) + varint(1)));  // bucket 0 and the top one
  CHECK(edge.total() == 2);
}

TEST_CASE("nearest-rank percentiles stay within 0.4% of the exact value") {
  std::mt19937_64 gen(42);
  std::lognormal_distribution<double> dist(10.0, 2.0);  // ~22 µs median, very wide tail
  std::vector<uint64_t> values;
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    auto v = static_cast<uint64_t>(dist(gen));
    values.push_back(v);
    h.add(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0}) {
    size_t rank = static_cast<size_t>(std::ceil(q * values.size()));
    uint64_t exact = values[rank - 1];
    uint64_t approx = h.percentile(q, values.front(), values.back());
    double rel = exact ? std::abs(static_cast<double>(approx) - static_cast<double>(exact)) / static_cast<double>(exact) : 0;
    CAPTURE(q);
    CHECK(rel <= 0.004);
  }
}

TEST_CASE("the q-tail is the slowest (1 - q) of the values, to a bucket, and its sum is within 0.4%") {
  std::mt19937_64 gen(7);
  std::lognormal_distribution<double> dist(11.0, 1.5);
  std::vector<uint64_t> values;
  LatencyHistogram h;
  for (int i = 0; i < 200000; ++i) {
    auto v = static_cast<uint64_t>(dist(gen));
    values.push_back(v);
    h.add(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.9, 0.99, 0.999}) {
    CAPTURE(q);
    const uint64_t floor = h.tail_floor(q);
    const auto exact_count = static_cast<uint64_t>(values.end() - std::lower_bound(values.begin(), values.end(), floor));
    double exact_sum = 0;
    for (auto it = std::lower_bound(values.begin(), values.end(), floor); it != values.end(); ++it) exact_sum += static_cast<double>(*it);
    const LatencyHistogram::Tail t = h.at_or_above(floor, values.back());
    CHECK(t.count == exact_count);  // whole buckets: the count is exact
    CHECK(t.sum == doctest::Approx(exact_sum).epsilon(0.004));
    const double want = (1.0 - q) * static_cast<double>(values.size());
    CHECK(static_cast<double>(t.count) >= want);
    CHECK(static_cast<double>(t.count) <= want * 1.1 + 2);  // one bucket of slack
  }
  // Ties at the quantile are not tail: 95 calls at 200 µs, 5 at 40 ms.
  LatencyHistogram ties;
  ties.add(200'000, 95);
  ties.add(40'000'000, 5);
  CHECK(ties.at_or_above(ties.tail_floor(0.95), 40'000'000).count == 5);
  CHECK(ties.at_or_above(ties.tail_floor(0.99), 40'000'000).count == 5);
  CHECK(LatencyHistogram().tail_floor(0.99) == 0);
}
