#include <doctest/doctest.h>

#include "common/units.h"

using namespace causeway;

TEST_CASE("durations parse in every documented unit") {
  CHECK(*parse_duration_ns("500ms") == 500'000'000);
  CHECK(*parse_duration_ns("30s") == 30'000'000'000);
  CHECK(*parse_duration_ns("5m") == 300'000'000'000);
  CHECK(*parse_duration_ns("2h") == 7'200'000'000'000);
  CHECK(*parse_duration_ns("1.5s") == 1'500'000'000);
  CHECK(*parse_duration_ns("250us") == 250'000);
  CHECK(*parse_duration_ns("10") == 10'000'000'000);  // bare number = seconds
}

TEST_CASE("bad durations are usage errors naming the input") {
  for (const char* bad : {"", "ms", "5x", "-3s", "1e9s", "five"}) {
    auto r = parse_duration_ns(bad);
    CHECK_FALSE(r.ok());
    CHECK(r.error().code == "usage");
  }
  CHECK(parse_duration_ns("5x").error().message.find("5x") != std::string::npos);
  CHECK_FALSE(parse_duration_ns("99999999999999h").ok());
}

TEST_CASE("sizes parse with binary suffixes and 0 means unlimited") {
  CHECK(*parse_size_bytes("0") == 0);
  CHECK(*parse_size_bytes("500m") == 500ll * 1024 * 1024);
  CHECK(*parse_size_bytes("10g") == 10ll * 1024 * 1024 * 1024);
  CHECK(*parse_size_bytes("64KiB") == 64 * 1024);
  CHECK(*parse_size_bytes("4096") == 4096);
  CHECK_FALSE(parse_size_bytes("10q").ok());
  CHECK_FALSE(parse_size_bytes("g").ok());
}

TEST_CASE("formatting is compact and carries units") {
  CHECK(format_duration_ns(812) == "812ns");
  CHECK(format_duration_ns(14'200) == "14.2us");
  CHECK(format_duration_ns(3'810'000) == "3.81ms");
  CHECK(format_duration_ns(2'500'000'000) == "2.50s");
  CHECK(format_duration_ns(252'000'000'000) == "4m12s");
  CHECK(format_bytes(512) == "512B");
  CHECK(format_bytes(3 * 1024 * 1024) == "3.0MiB");
  CHECK(format_utc(0) == "1970-01-01T00:00:00.000Z");
  CHECK(format_utc(1'795'263'804'123'000'000) == "2026-11-21T12:23:24.123Z");
}
