#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "common/argmax.h"

using namespace causeway;

TEST_CASE("argmax_by: the largest kept entry, the first of equals, null when none is kept") {
  const std::map<uint32_t, int64_t> pages{{1, 5}, {2, 9}, {3, 9}, {4, 2}};
  auto n = [](const auto& kv) { return kv.second; };
  const auto* top = argmax_by(pages, n);
  REQUIRE(top != nullptr);
  CHECK(top->first == 2);  // 2 and 3 tie: the first in map order, as `if (n > best)` picked
  const auto* other = argmax_by(pages, n, [](const auto& kv) { return kv.first != 2; });
  REQUIRE(other != nullptr);
  CHECK(other->first == 3);
  CHECK(argmax_by(pages, n, [](const auto&) { return false; }) == nullptr);
  const std::vector<int> none;
  CHECK(argmax_by(none, [](int x) { return x; }) == nullptr);
  const std::vector<int> rows{3, -1, 7, 7};
  const int* r = argmax_by(rows, [](int x) { return x; });
  REQUIRE(r != nullptr);
  CHECK(r - rows.data() == 2);
}

TEST_CASE("key_of_largest: the key of the largest value, the first of equals, the fallback when none") {
  const std::map<int32_t, int64_t> cpus{{0, 4}, {1, 8}, {2, 8}};
  CHECK(key_of_largest(cpus, -1) == 1);  // 1 and 2 tie: the first, as std::max_element and `if (ns > top)` did
  CHECK(key_of_largest(std::map<int32_t, int64_t>{}, -1) == -1);
  CHECK(key_of_largest(std::map<uint32_t, int64_t>{}) == 0u);
  const std::map<uint32_t, int64_t> waits{{7, 0}, {9, 0}};
  CHECK(key_of_largest(waits, 5u, [](const auto& kv) { return kv.second > 0; }) == 5u);  // none kept
  CHECK(key_of_largest(waits) == 7u);
}
