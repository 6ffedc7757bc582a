// The shape check every fleet-store answer passes before it is believed (fleet/store_answer.h,
// docs/SECURITY.md "A hostile fleet store"): names and types first, that many columns of the
// kinds asked, every row that many fields, every number a number; anything else is an error.
#include <doctest/doctest.h>

#include <random>

#include "fleet/store_answer.h"

namespace causeway::fleet {

namespace {
const std::vector<ColumnKind> kWatermark{ColumnKind::Int, ColumnKind::Text};
}

TEST_CASE("a well-formed answer: rows of unescaped fields, NULL kept, no rows is none") {
  auto r = parse_typed_answer("argMax(upto, ver)\targMax(digest, ver)\nInt64\tString\n-42\ta\\tb\n", kWatermark, "q");
  REQUIRE(r);
  REQUIRE(r->size() == 1);
  CHECK((*r)[0][0] == "-42");
  CHECK((*r)[0][1] == "a\tb");
  auto none = parse_typed_answer("a\tb\nInt64\tString\n", kWatermark, "q");
  REQUIRE(none);
  CHECK(none->empty());
  auto nul = parse_typed_answer("a\tb\nNullable(Int64)\tLowCardinality(String)\n\\N\tx\n", kWatermark, "q");
  REQUIRE(nul);
  CHECK((*nul)[0][0] == "\\N");
  auto mixed = parse_typed_answer("q\tx\tn\nArray(Float64)\tFloat64\tUInt64\n[1,2.5]\tnan\t18446744073709551615\n",
                                  {ColumnKind::Array, ColumnKind::Float, ColumnKind::Float}, "q");
  CHECK(mixed);
}

TEST_CASE("malformed answers are errors, never rows") {
  auto bad = [](std::string_view body, const std::vector<ColumnKind>& kinds = kWatermark) {
    auto r = parse_typed_answer(body, kinds, "the watermark");
    if (r) return std::string();
    CHECK(r.error().code == "fleet_bad_answer");
    CHECK(r.error().message.find("the watermark") != std::string::npos);
    return r.error().message;
  };
  CHECK(bad("").find("empty") != std::string::npos);
  CHECK(bad("a\tb\nInt64\tString\n1\tx").find("newline") != std::string::npos);  // cut short
  CHECK(bad("<html><body>It works</body></html>\n").find("no names and types") != std::string::npos);
  CHECK(bad("a\tb\tc\nInt64\tInt64\tInt64\n1\t2\t3\n").find("3 column(s) where 2") != std::string::npos);
  CHECK(bad("a\nInt64\n1\n").find("where 2") != std::string::npos);
  CHECK(bad("a\tb\nString\tString\nabc\tdef\n").find("where an integer was asked") != std::string::npos);
  CHECK(bad("a\tb\nInt64\tString\nzz9\tq\n").find("is not an integer") != std::string::npos);
  CHECK(bad("a\tb\nInt64\tString\n1\tx\n2\n").find("row 2 has 1 field") != std::string::npos);
  CHECK(bad("a\tb\nInt64\tString\n\\N\tx\n").find("is not an integer") != std::string::npos);  // not nullable
  CHECK(bad("a\tb\nInt64\tString\n99999999999999999999999\tx\n").find("is not an integer") != std::string::npos);
  CHECK(bad("a\tb\nInt64\tbogus type\n1\tx\n").find("no known type") != std::string::npos);
  CHECK(!bad("a\nFloat64\n1e5x\n", {ColumnKind::Float}).empty());
  CHECK(!bad("a\nArray(Int64)\n1\n", {ColumnKind::Array}).empty());
  CHECK(!bad("a\nInt64\n1\n", {ColumnKind::Text}).empty());  // a number where text was asked
}

TEST_CASE("random bytes are never an answer") {
  std::mt19937 rng(35);
  int accepted = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string s(rng() % 600, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    if (rng() % 2) s += '\n';
    accepted += static_cast<bool>(parse_typed_answer(s, kWatermark, "q"));
  }
  CHECK(accepted == 0);
}

}  // namespace causeway::fleet
