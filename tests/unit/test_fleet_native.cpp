// The Native block ship sends: decoded here by the format's rules (ClickHouse's
// NativeBlockInputStream: counts as varints, per column its name, type, null map and values)
// and compared with what was added. The server's own reading is checked end to end by
// tests/e2e/test_fleet_clickhouse.cpp (column sums in the store equal the trace DB's).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "fleet/native_block.h"

namespace causeway::fleet {

namespace {

struct Reader {
  std::string body;
  size_t pos = 0;
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      REQUIRE(pos < body.size());
      const auto b = static_cast<unsigned char>(body[pos++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  }
  std::string bytes(size_t n) {
    REQUIRE(body.size() - pos >= n);
    std::string s = body.substr(pos, n);
    pos += n;
    return s;
  }
  std::string string() { return bytes(varint()); }
  template <class T>
  T fixed() {
    T v;
    std::memcpy(&v, bytes(8).data(), 8);
    return v;
  }
};

std::string joined(NativeBlock& b) {
  std::string out;
  for (std::string_view p : b.wire()) out += p;
  return out;
}

}  // namespace

TEST_CASE("Native: every value and NULL of every column type reads back as added") {
  auto made = NativeBlock::for_columns({{"i", "Int64"}, {"n", "Nullable(Int64)"}, {"u", "UInt64"}, {"f", "Nullable(Float64)"},
                                        {"s", "String"}, {"ns", "Nullable(String)"}});
  REQUIRE(made);
  NativeBlock b = *made;
  std::mt19937_64 rng(23);
  struct Row {
    int64_t i, n;
    bool n_null;
    uint64_t u;
    double f;
    bool f_null;
    std::string s;
  };
  std::vector<Row> rows;
  for (int r = 0; r < 300; ++r) {
    Row x{static_cast<int64_t>(rng()), static_cast<int64_t>(rng()), rng() % 3 == 0, rng(), static_cast<double>(rng() % 1000) / 7,
          rng() % 4 == 0, std::string(rng() % 200, '\0')};
    for (char& c : x.s) c = static_cast<char>(rng());
    rows.push_back(x);
    b.add_int(0, x.i);
    x.n_null ? b.add_null(1) : b.add_int(1, x.n);
    b.add_int(2, static_cast<int64_t>(x.u));
    x.f_null ? b.add_null(3) : b.add_float(3, x.f);
    b.add_string(4, x.s);
    b.add_null(5);
    b.end_row();
  }
  Reader in{joined(b)};
  auto column = [&in](const char* name, const char* type) {
    CHECK(in.string() == name);
    CHECK(in.string() == type);
  };
  CHECK(in.varint() == 6);
  CHECK(in.varint() == rows.size());
  column("i", "Int64");
  for (const Row& x : rows) CHECK(in.fixed<int64_t>() == x.i);
  column("n", "Nullable(Int64)");
  for (const Row& x : rows) CHECK(in.bytes(1)[0] == (x.n_null ? 1 : 0));
  for (const Row& x : rows) CHECK(in.fixed<int64_t>() == (x.n_null ? 0 : x.n));
  column("u", "UInt64");
  for (const Row& x : rows) CHECK(in.fixed<uint64_t>() == x.u);
  column("f", "Nullable(Float64)");
  for (const Row& x : rows) CHECK(in.bytes(1)[0] == (x.f_null ? 1 : 0));
  for (const Row& x : rows) CHECK(in.fixed<double>() == (x.f_null ? 0.0 : x.f));
  column("s", "String");
  for (const Row& x : rows) CHECK(in.string() == x.s);
  column("ns", "Nullable(String)");
  for (size_t r = 0; r < rows.size(); ++r) CHECK(in.bytes(1)[0] == 1);
  for (size_t r = 0; r < rows.size(); ++r) CHECK(in.string().empty());
  CHECK(in.pos == in.body.size());

  // Cleared, the block starts again from no rows (ship reuses two blocks batch after batch).
  b.clear();
  b.add_int(0, 7), b.add_null(1), b.add_int(2, 1), b.add_float(3, 2.5), b.add_string(4, "x"), b.add_string(5, "y");
  b.end_row();
  Reader again{joined(b)};
  CHECK(again.varint() == 6);
  CHECK(again.varint() == 1);
}

TEST_CASE("Native: sort_by orders the rows by the key columns and carries every column's value and NULL along") {
  auto made = NativeBlock::for_columns({{"ts", "Int64"}, {"id", "Int64"}, {"n", "Nullable(Int64)"}, {"s", "String"}});
  REQUIRE(made);
  NativeBlock b = *made;
  std::mt19937_64 rng(5);
  struct Row {
    int64_t ts, id, n;
    bool n_null;
    std::string s;
  };
  std::vector<Row> rows;
  for (int r = 0; r < 500; ++r) {  // ts repeats (ties broken by id); strings of 0-300 bytes (2-byte varints too)
    Row x{static_cast<int64_t>(rng() % 50) - 25, r, static_cast<int64_t>(rng()), rng() % 3 == 0, std::string(rng() % 300, 'a')};
    for (char& c : x.s) c = static_cast<char>(rng());
    rows.push_back(x);
    b.add_int(0, x.ts), b.add_int(1, x.id);
    x.n_null ? b.add_null(2) : b.add_int(2, x.n);
    b.add_string(3, x.s), b.end_row();
  }
  b.sort_by({0, 1});
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& c) { return a.ts < c.ts; });
  Reader in{joined(b)};
  CHECK(in.varint() == 4);
  CHECK(in.varint() == rows.size());
  in.string(), in.string();
  for (const Row& x : rows) CHECK(in.fixed<int64_t>() == x.ts);
  in.string(), in.string();
  for (const Row& x : rows) CHECK(in.fixed<int64_t>() == x.id);
  in.string(), in.string();
  for (const Row& x : rows) CHECK(in.bytes(1)[0] == (x.n_null ? 1 : 0));
  for (const Row& x : rows) CHECK(in.fixed<int64_t>() == (x.n_null ? 0 : x.n));
  in.string(), in.string();
  for (const Row& x : rows) CHECK(in.string() == x.s);
  CHECK(in.pos == in.body.size());

  // Already in order: left as it is.
  const std::string sorted = joined(b);
  b.sort_by({0, 1});
  CHECK(joined(b) == sorted);
}

TEST_CASE("Native: a NOT NULL column given NULL gets its zero; text in a number column its number; unknown types refused") {
  auto made = NativeBlock::for_columns({{"i", "Int64"}, {"s", "String"}});
  REQUIRE(made);
  NativeBlock b = *made;
  b.add_null(0), b.add_null(1), b.end_row();
  b.add_string(0, "42"), b.add_int(1, -5), b.end_row();
  Reader in{joined(b)};
  CHECK(in.varint() == 2);
  CHECK(in.varint() == 2);
  in.string(), in.string();
  CHECK(in.fixed<int64_t>() == 0);
  CHECK(in.fixed<int64_t>() == 42);
  in.string(), in.string();
  CHECK(in.string().empty());
  CHECK(in.string() == "-5");
  CHECK_FALSE(NativeBlock::for_columns({{"d", "DateTime"}}).ok());
}

}  // namespace causeway::fleet
