#include <doctest/doctest.h>

#include "common/json_exact.h"

using namespace causeway;
using json = nlohmann::json;

TEST_CASE("json_exact: the exact-integer range is JavaScript's Number.MAX_SAFE_INTEGER") {
  CHECK(kMaxExactJsonInteger == 9007199254740991);
  CHECK(exact_in_double(kMaxExactJsonInteger));
  CHECK(exact_in_double(-kMaxExactJsonInteger));
  CHECK_FALSE(exact_in_double(kMaxExactJsonInteger + 1));
  // The stack id of the bug report: a double reads it as ...2000.
  CHECK_FALSE(exact_in_double(2961127451592451971));
  CHECK(static_cast<int64_t>(static_cast<double>(2961127451592451971)) != 2961127451592451971);
  CHECK(id_json(2961127451592451971) == "2961127451592451971");
  CHECK(id_json(-7) == "-7");
}

TEST_CASE("json_exact: every *_ns instant gets an exact ISO-8601 twin, durations do not") {
  json doc = {{"window", {{"from_ns", 1764099228123456789}, {"to_ns", 1764099229000000001}}},
              {"timeline", json::array({{{"ts_ns", 1764099228123456789}, {"what", "x"}}})},
              {"lost_ns", 5000},
              {"started_ns", nullptr},
              {"stopped_ns", 0}};
  add_utc_twins(doc);
  CHECK(doc["window"]["from_utc"] == "2025-11-25T19:33:48.123456789Z");
  CHECK(doc["window"]["to_utc"] == "2025-11-25T19:33:49.000000001Z");
  CHECK(doc["window"]["from_ns"] == 1764099228123456789);  // the documented number stays
  CHECK(doc["timeline"][0]["ts_utc"] == "2025-11-25T19:33:48.123456789Z");
  CHECK_FALSE(doc.contains("lost_utc"));
  CHECK_FALSE(doc.contains("started_utc"));  // null: nothing to name
  CHECK(doc["stopped_utc"] == "1970-01-01T00:00:00.000000000Z");
  json again = doc;
  add_utc_twins(again);
  CHECK(again == doc);
  CHECK(format_utc_ns(-1) == "1969-12-31T23:59:59.999999999Z");
}
