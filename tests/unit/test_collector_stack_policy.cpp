// The user-space half of the stack policy: running percentiles per (process, op) and the
// thresholds written to the BPF map (collector/stack_policy.h).
#include <doctest/doctest.h>

#include "collector/stack_policy.h"

namespace causeway::collector {

TEST_CASE("coarse histogram: buckets within 25%, quantiles from low bounds") {
  for (uint64_t v : {0ull, 3ull, 4ull, 7ull, 8ull, 1000ull, 123456ull, 50'000'000'000ull}) {
    CAPTURE(v);
    const int b = CoarseHistogram::bucket_of(v);
    const uint64_t low = CoarseHistogram::low_of(b);
    CHECK(low <= v);
    CHECK(v - low <= v / 4);
    CHECK(CoarseHistogram::bucket_of(low) == b);
  }
  CoarseHistogram h;
  CHECK(h.quantile_low(0.5) == 0);
  for (int i = 0; i < 95; ++i) h.add(1000);
  for (int i = 0; i < 5; ++i) h.add(1'000'000);
  CHECK(h.quantile_low(0.50) <= 1000);
  CHECK(h.quantile_low(0.50) > 750);
  CHECK(h.quantile_low(0.95) <= 1000);
  CHECK(h.quantile_low(0.96) > 750'000);
  // Past 2^20 calls the counts halve: the percentiles follow what came last.
  for (int i = 0; i < 3'000'000; ++i) h.add(2'000'000);
  CHECK(h.total() < (1u << 21));
  CHECK(h.quantile_low(0.10) > 1'500'000);
}

TEST_CASE("threshold = max(floor, min(p95, p50 + margin, stall))") {
  StackPolicy p;
  CHECK(p.threshold(3'000, 5'000) == 50'000);           // µs-scale launches: the floor
  CHECK(p.threshold(150'000, 230'000) == 200'000);      // p50 + margin below p95
  CHECK(p.threshold(150'000, 170'000) == 170'000);      // p95
  CHECK(p.threshold(10'000'000, 10'200'000) == 500'000);  // ms-scale: any stall-length call
}

TEST_CASE("updates: only pairs with enough calls whose threshold differs from the floor, once") {
  StackPolicy p;
  for (int i = 0; i < 1000; ++i) {
    p.observe(7, 116, 3'000);         // fast: stays at the floor, never written
    p.observe(7, 303, 200'000);       // NCCL-like 200 µs
    p.observe(8, 303, i % 10 == 0 ? 400'000 : 200'000);
  }
  p.observe(9, 116, 1'000'000);       // one call: too few to trust
  auto u = p.updates();
  REQUIRE(u.size() == 2);
  for (const auto& x : u) {
    CHECK(x.op == 303);
    CHECK(x.threshold_ns > 50'000);
    CHECK(x.threshold_ns <= 250'000);
  }
  CHECK(p.updates().empty());  // unchanged: nothing to write again
  for (int i = 0; i < 5000; ++i) p.observe(7, 303, 2'000'000);
  u = p.updates();
  REQUIRE(u.size() == 1);
  CHECK(u[0].pid == 7);
  CHECK(u[0].threshold_ns == 500'000);
  auto gone = p.forget(7);
  REQUIRE(gone.size() == 1);  // 116 was never written
  CHECK(gone[0] == 303);
  CHECK(p.forget(7).empty());
}

}  // namespace causeway::collector
